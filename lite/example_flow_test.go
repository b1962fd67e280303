package lite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"
	_ "time/tzdata" // the zone database, for hosts that have none

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
)

// clockQueue opens a queue in a fresh directory on a fake clock, and
// returns it with the clock and a cleanup.
func clockQueue(start time.Time) (*lite.Queue, *litetest.Clock, func()) {
	dir, err := os.MkdirTemp("", "lite-example")
	if err != nil {
		log.Fatal(err)
	}
	clock := litetest.NewClock(start)
	q, err := lite.Open(context.Background(), filepath.Join(dir, "app.db"), lite.Options{Now: clock.Now})
	if err != nil {
		log.Fatal(err)
	}
	return q, clock, func() {
		q.Close()
		os.RemoveAll(dir)
	}
}

// A schedule lives in the file: register it at every start (the same
// spec keeps its next run), and any running Worker fires each tick
// exactly once, however many processes share the file. FireSchedules is
// what a worker calls when a tick comes due.
func ExampleQueue_SetSchedule() {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		log.Fatal(err)
	}
	q, clock, cleanup := clockQueue(time.Date(2030, 1, 1, 2, 0, 0, 0, berlin))
	defer cleanup()
	ctx := context.Background()

	err = q.SetSchedule(ctx, lite.Schedule{
		Name: "nightly-report", Spec: "0 3 * * *", TimeZone: "Europe/Berlin",
		Job: lite.NewJob{Kind: "report", Payload: []byte(`{"to":"ops"}`)},
	})
	if err != nil {
		log.Fatal(err)
	}
	fire := func() {
		n, err := q.FireSchedules(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: fired %d\n", clock.Now().In(berlin).Format("Jan 2 15:04"), n)
	}
	fire()
	clock.Advance(time.Hour)
	fire()
	fire() // the tick is taken: nothing twice

	jobs, _ := q.List(ctx, lite.ListFilter{Kind: "report"})
	scheds, _ := q.Schedules(ctx)
	fmt.Printf("a job for the tick of %s; next tick %s\n",
		jobs[0].RunAt.In(berlin).Format("Jan 2 15:04"), scheds[0].NextRunAt.In(berlin).Format("Jan 2 15:04"))
	// Output:
	// Jan 1 02:00: fired 0
	// Jan 1 03:00: fired 1
	// Jan 1 03:00: fired 0
	// a job for the tick of Jan 1 03:00; next tick Jan 2 03:00
}

// Limits hold across every process that shares the file, because each
// lease statement reads them as it claims: here at most two of the
// queue's jobs run at once.
func ExampleQueue_SetLimits() {
	q, _, cleanup := clockQueue(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()
	for range 5 {
		if _, err := q.Enqueue(ctx, lite.NewJob{Queue: "mail"}); err != nil {
			log.Fatal(err)
		}
	}

	if err := q.SetLimits(ctx, "mail", lite.Limits{MaxRunning: 2, Rate: 50, Per: time.Second}); err != nil {
		log.Fatal(err)
	}
	jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"mail"}, Max: 5})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leased", len(jobs), "of 5")
	if err := q.AckDone(ctx, jobs[0].Lease(), nil); err != nil {
		log.Fatal(err)
	}
	more, _ := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"mail"}, Max: 5})
	fmt.Println("one done: leased", len(more), "more")
	// Output:
	// leased 2 of 5
	// one done: leased 1 more
}

// A paused queue starts no job in any process until it is resumed; its
// running jobs finish as usual.
func ExampleQueue_Pause() {
	q, _, cleanup := clockQueue(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()
	if _, err := q.Enqueue(ctx, lite.NewJob{Queue: "mail"}); err != nil {
		log.Fatal(err)
	}
	lease := func() {
		jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"mail"}})
		if err != nil {
			log.Fatal(err)
		}
		stats, _ := q.Stats(ctx)
		fmt.Printf("paused %v: leased %d\n", stats[0].Paused, len(jobs))
	}

	if err := q.Pause(ctx, "mail"); err != nil {
		log.Fatal(err)
	}
	lease()
	if err := q.Resume(ctx, "mail"); err != nil {
		log.Fatal(err)
	}
	lease()
	// Output:
	// paused true: leased 0
	// paused false: leased 1
}
