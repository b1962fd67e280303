package lite_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/liteq/lite/lite"
)

// A per-key limit caps each key's running jobs across every process: a
// lease takes up to the limit of each key and walks on to the others.
func ExampleLimits_perKey() {
	q, _, cleanup := clockQueue(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()
	if err := q.SetLimits(ctx, "hosts", lite.Limits{MaxRunningPerKey: 2}); err != nil {
		log.Fatal(err)
	}
	for _, host := range []string{"web1", "web1", "web1", "web2"} {
		if _, err := q.Enqueue(ctx, lite.NewJob{Queue: "hosts", Kind: "ping", Key: host}); err != nil {
			log.Fatal(err)
		}
	}
	jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"hosts"}, Max: 10})
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range jobs {
		fmt.Println(j.ID, j.Key)
	}
	// Output:
	// 1 web1
	// 2 web1
	// 4 web2
}

// An expired job never starts: the reclaim pass cancels it with the
// reason in its errors.
func ExampleQueue_CancelExpired() {
	q, clock, cleanup := clockQueue(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()
	id, err := q.Enqueue(ctx, lite.NewJob{Kind: "send-code", ExpiresIn: 10 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	clock.Advance(time.Hour)
	if _, err := q.CancelExpired(ctx); err != nil {
		log.Fatal(err)
	}
	j, err := q.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(j.State, j.Errors[0].Error)
	// Output:
	// cancelled expired: not started by 2030-01-01T00:10:00.000Z
}
