package lite_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/liteq/lite/lite"
)

// A unique key held for a period admits one job per key per period,
// whatever became of the one before.
func ExampleNewJob_uniqueFor() {
	q, clock, cleanup := clockQueue(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()
	report := lite.NewJob{Kind: "report", UniqueKey: "daily", UniqueFor: 24 * time.Hour}
	for _, wait := range []time.Duration{0, time.Hour, 23 * time.Hour} {
		clock.Advance(wait)
		id, err := q.Enqueue(ctx, report)
		fmt.Println(id, errors.Is(err, lite.ErrDuplicate))
	}
	// Output:
	// 1 false
	// 1 true
	// 2 false
}

// A debounce folds a burst of enqueues into the one job not yet started:
// it runs once, with the last payload, a while after the last enqueue.
func ExampleQueue_EnqueueOne() {
	q, clock, cleanup := clockQueue(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()
	for _, v := range []string{"v1", "v2", "v3"} {
		got, err := q.EnqueueOne(ctx, lite.NewJob{Kind: "reindex", Payload: []byte(v),
			UniqueKey: "doc-42", UniqueUntil: lite.UniqueUntilStarted, Debounce: 30 * time.Second})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(got.ID, got.Debounced)
		clock.Advance(10 * time.Second)
	}
	j, err := q.Get(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(j.Payload), j.RunAt.UTC().Format(time.TimeOnly))
	// Output:
	// 1 false
	// 1 true
	// 1 true
	// v3 00:00:50
}
