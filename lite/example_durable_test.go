package lite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/liteq/lite/lite"
)

// A step runs once per job: the retry after a later failure gets the
// charge's recorded receipt instead of charging the card again.
func ExampleRunStep() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()
	id, err := q.Enqueue(ctx, lite.NewJob{Kind: "order"})
	if err != nil {
		log.Fatal(err)
	}
	w := quietWorker(q)
	attempt := 0
	w.Handle("order", func(ctx context.Context, job *lite.Job) error {
		attempt++
		receipt, err := lite.RunStep(ctx, "charge", func(context.Context) (string, error) {
			fmt.Println("charging the card")
			return "receipt-7", nil
		})
		if err != nil {
			return err
		}
		if attempt == 1 {
			return errors.New("the mail server is down")
		}
		fmt.Println("mailing", receipt)
		return nil
	})
	for range 2 {
		ev, err := w.RunJob(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Kind)
	}
	// Output:
	// charging the card
	// failed
	// mailing receipt-7
	// done
}

// A job waits for a signal without holding a slot: AwaitSignal parks it,
// and Signal makes it available again with the payload to consume.
func ExampleQueue_Signal() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()
	id, err := q.Enqueue(ctx, lite.NewJob{Kind: "publish"})
	if err != nil {
		log.Fatal(err)
	}
	w := quietWorker(q)
	w.Handle("publish", func(ctx context.Context, job *lite.Job) error {
		verdict, err := lite.AwaitSignal(ctx, "approved", 0)
		if err != nil {
			return err // parked: the job waits for the signal
		}
		fmt.Printf("publishing, %s\n", verdict)
		return nil
	})
	ev, err := w.RunJob(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	j, err := q.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ev.Kind, j.State, j.Parked, j.ParkedOn)
	if err := q.Signal(ctx, id, "approved", []byte("ok by ada")); err != nil {
		log.Fatal(err)
	}
	rep, err := w.RunOnce(ctx) // due now: the signal woke it
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("done", rep.Done)
	// Output:
	// parked available signal approved
	// publishing, ok by ada
	// done 1
}

// A job fans out to children, enqueued once in a step, and awaits them
// without a slot: the end of the last child makes it available again.
func ExampleAwait() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()
	id, err := q.Enqueue(ctx, lite.NewJob{Kind: "sum"})
	if err != nil {
		log.Fatal(err)
	}
	w := quietWorker(q)
	w.Handle("square", func(ctx context.Context, job *lite.Job) error {
		var n int
		if err := json.Unmarshal(job.Payload, &n); err != nil {
			return lite.Permanent(err)
		}
		lite.SetResult(ctx, fmt.Appendf(nil, "%d", n*n))
		return nil
	})
	w.Handle("sum", func(ctx context.Context, job *lite.Job) error {
		ids, err := lite.RunStepTx(ctx, "children", func(ctx context.Context, tx *sql.Tx) ([]int64, error) {
			var ids []int64
			for n := 1; n <= 3; n++ {
				id, err := q.EnqueueTx(ctx, tx, lite.NewJob{Kind: "square", Payload: fmt.Appendf(nil, "%d", n)})
				if err != nil {
					return nil, err
				}
				ids = append(ids, id)
			}
			return ids, nil
		})
		if err != nil {
			return err
		}
		outcomes, err := lite.Await(ctx, ids...)
		if err != nil {
			return err // parked until the three have ended
		}
		sum := 0
		for _, o := range outcomes {
			n, err := lite.ResultOf[int](o)
			if err != nil {
				return err
			}
			sum += n
		}
		fmt.Println("sum of squares:", sum)
		return nil
	})
	run := func(id int64) {
		ev, err := w.RunJob(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("job", id, ev.Kind, ev.State)
	}
	run(id)
	children, err := q.Dependencies(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range children {
		run(c.ID)
	}
	run(id)
	// Output:
	// job 1 parked blocked
	// job 2 done done
	// job 3 done done
	// job 4 done done
	// sum of squares: 14
	// job 1 done done
}
