package lite_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/liteq/lite/lite"
)

// runAll leases and acks every available job, one at a time, as a worker
// would, and prints each kind it ran. A handler of "publish" reads what
// the jobs it waited for returned.
func runAll(ctx context.Context, q *lite.Queue) {
	for {
		jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{lite.DefaultQueue}})
		if err != nil {
			log.Fatal(err)
		}
		if len(jobs) == 0 {
			return
		}
		j := jobs[0]
		result := []byte(j.Kind + " ok")
		if j.Kind == "publish" {
			deps, err := q.Dependencies(ctx, j.ID)
			if err != nil {
				log.Fatal(err)
			}
			result = fmt.Appendf(nil, "after %d jobs: %s, %s", len(deps), deps[0].Result, deps[1].Result)
		}
		if err := q.AckDone(ctx, j.Lease(), result); err != nil {
			log.Fatal(err)
		}
		fmt.Println("ran", j.Kind, string(result))
	}
}

// A workflow's steps wait for each other by name, before they have ids:
// a fetch, two resizes after it, and a publish after both (a diamond),
// enqueued in one transaction. Each step becomes available in the
// transaction of the last ack it waits for.
func ExampleQueue_EnqueueWorkflow() {
	q, _, cleanup := clockQueue(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()

	_, err := q.EnqueueWorkflow(ctx, lite.Workflow{Steps: []lite.Step{
		{Name: "fetch", Job: lite.NewJob{Kind: "fetch"}},
		{Name: "small", Job: lite.NewJob{Kind: "resize-small"}, After: []string{"fetch"}},
		{Name: "large", Job: lite.NewJob{Kind: "resize-large"}, After: []string{"fetch"}},
		{Name: "publish", Job: lite.NewJob{Kind: "publish"}, After: []string{"small", "large"}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	runAll(ctx, q)
	// Output:
	// ran fetch fetch ok
	// ran resize-small resize-small ok
	// ran resize-large resize-large ok
	// ran publish after 2 jobs: resize-small ok, resize-large ok
}

// A callback follows every end of a job, not only those its handler sees:
// here an admin's cancel enqueues it, with the job and how it ended in its
// meta.
func ExampleCallback() {
	q, _, cleanup := clockQueue(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()

	id, err := q.Enqueue(ctx, lite.NewJob{Kind: "export", Callback: &lite.Callback{Queue: "app", Kind: "export-ended"}})
	if err != nil {
		log.Fatal(err)
	}
	if err := q.Cancel(ctx, id); err != nil {
		log.Fatal(err)
	}
	jobs, err := q.List(ctx, lite.ListFilter{Queue: "app"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(jobs[0].Kind, jobs[0].Meta["lite.job"] == fmt.Sprint(id), jobs[0].Meta["lite.state"])
	// Output:
	// export-ended true cancelled
}

// A batch's callback is enqueued once, in the transaction of its last
// job's end, with the counts of how they ended.
func ExampleWorkflow_batch() {
	q, _, cleanup := clockQueue(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()

	wf, err := q.EnqueueWorkflow(ctx, lite.Workflow{
		Steps: []lite.Step{{Job: lite.NewJob{Kind: "convert"}}, {Job: lite.NewJob{Kind: "convert"}}},
		Batch: &lite.Callback{Queue: "reports", Kind: "report"},
	})
	if err != nil {
		log.Fatal(err)
	}
	runAll(ctx, q)
	b, err := q.GetBatch(ctx, wf.Batch)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("done %d, dead %d, pending %d\n", b.Done, b.Dead, b.Pending())
	reports, err := q.List(ctx, lite.ListFilter{Queue: "reports"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(reports), reports[0].Kind, reports[0].Meta["lite.done"])
	// Output:
	// ran convert convert ok
	// ran convert convert ok
	// done 2, dead 0, pending 0
	// 1 report 2
}
