package lite_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/liteq/lite/lite"
)

// Welcome is a typed job: its JSON is the payload, Kind names its kind,
// and JobDefaults gives every job of the kind its queue and attempts.
type Welcome struct {
	UserID int64  `json:"user_id"`
	Email  string `json:"email"`
}

func (Welcome) Kind() string { return "welcome" }

func (Welcome) JobDefaults() lite.NewJob { return lite.NewJob{Queue: "mail", MaxAttempts: 3} }

// An order and its job commit together, or neither does: the job is
// enqueued in the transaction that writes the order.
func ExampleQueue_EnqueueTx() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()

	placeOrder := func(id int64, commit bool) error {
		tx, err := q.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `insert into orders values ($1, 'placed')`, id); err != nil {
			return err
		}
		if _, err := q.EnqueueTx(ctx, tx, lite.NewJob{Kind: "ship", Payload: fmt.Appendf(nil, "order %d", id)}); err != nil {
			return err
		}
		if !commit {
			return errors.New("payment declined") // the deferred rollback takes the job too
		}
		return tx.Commit()
	}
	fmt.Println(placeOrder(1, true))
	fmt.Println(placeOrder(2, false))

	jobs, err := q.List(ctx, lite.ListFilter{Kind: "ship"})
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range jobs {
		fmt.Printf("job %d: %s, %s\n", j.ID, j.Payload, j.State)
	}
	// Output:
	// <nil>
	// payment declined
	// job 1: order 1, available
}

// A typed job is enqueued by value; its type's defaults fill what the
// call leaves out, and a NewJob given to the call wins over them.
func ExampleEnqueueArgs() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()

	id, err := lite.EnqueueArgs(ctx, q, Welcome{UserID: 7, Email: "ada@example.com"})
	if err != nil {
		log.Fatal(err)
	}
	urgent, err := lite.EnqueueArgs(ctx, q, Welcome{UserID: 8}, lite.NewJob{Priority: 10})
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []int64{id, urgent} {
		j, err := q.Get(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s in %s, priority %d, %d attempts: %s\n", j.Kind, j.Queue, j.Priority, j.MaxAttempts, j.Payload)
	}
	// Output:
	// welcome in mail, priority 0, 3 attempts: {"user_id":7,"email":"ada@example.com"}
	// welcome in mail, priority 10, 3 attempts: {"user_id":8,"email":""}
}
