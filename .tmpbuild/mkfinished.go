//go:build ignore

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/liteq/lite/lite"
)

func main() {
	ctx := context.Background()
	q, err := lite.Open(ctx, os.Args[1], lite.Options{Synchronous: lite.SyncNormal})
	if err != nil {
		panic(err)
	}
	batch := make([]lite.NewJob, 10000)
	for i := range batch {
		batch[i] = lite.NewJob{Queue: "q", Payload: []byte("payload of a finished job")}
	}
	for range 100 {
		if _, err := q.EnqueueBatch(ctx, batch); err != nil {
			panic(err)
		}
	}
	old := time.Now().Add(-48 * time.Hour).UnixMilli()
	if _, err := q.DB().ExecContext(ctx, `update lite_jobs set state = 'done', generation = 1, attempts = 1, finished_at = ?, leased_at = ?`, old, old); err != nil {
		panic(err)
	}
	fmt.Println("ok")
	q.Close()
}
