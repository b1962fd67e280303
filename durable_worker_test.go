package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/liteq/lite/lite"
)

// durableWorkerEnv, set to a database, makes the test binary a worker
// process of TestDurableGoJobsThroughKilledAndFrozenWorkers: TestMain
// runs durableWorker instead of the tests.
const durableWorkerEnv = "LITE_TEST_DURABLE_WORKER"

// durableWorkerReady is what a worker process logs once it serves.
const durableWorkerReady = "durable worker: working"

// durableSleep is how long each durable job sleeps: the workers run on
// the real clock.
const durableSleep = 200 * time.Millisecond

// appendEffectSQL appends a step's row to the test's own table, with the
// generation of the lease that runs it and what the job's row holds as
// the row is written.
var appendEffectSQL = map[string]string{
	"sqlite": `insert into durable_effects (job_id, step, generation, job_generation, job_state)
select id, ?, ?, generation, state from lite_jobs where id = ?`,
	"postgres": `insert into durable_effects (job_id, step, generation, job_generation, job_state)
select id, $1::text, $2::bigint, generation, state from lite_jobs where id = $3`,
}

// durableHandler runs s1 and s2, sleeps, runs s3, awaits the signal "go",
// runs s4 and s5, and answers with the signal's payload. Each step
// appends its row through RunStepTx, and records the generation that ran
// it.
func durableHandler(engine string) lite.Handler {
	return func(ctx context.Context, job *lite.Job) error {
		step := func(name string) error {
			_, err := lite.RunStepTx(ctx, name, func(ctx context.Context, tx *sql.Tx) (int64, error) {
				_, err := tx.ExecContext(ctx, appendEffectSQL[engine], name, job.Generation, job.ID)
				return job.Generation, err
			})
			return err
		}
		var payload []byte
		for _, do := range []func() error{
			func() error { return step("s1") },
			func() error { return step("s2") },
			func() error { return lite.Sleep(ctx, durableSleep) },
			func() error { return step("s3") },
			func() (err error) { payload, err = lite.AwaitSignal(ctx, "go", 0); return err },
			func() error { return step("s4") },
			func() error { return step("s5") },
		} {
			if err := do(); err != nil {
				return err
			}
		}
		lite.SetResult(ctx, payload)
		return nil
	}
}

// durableWorker serves db's jobs with durableHandler until SIGTERM, with
// the heartbeat, stale-after and grace of the lite work processes the
// shell variant runs; it returns the process's exit code.
func durableWorker(db string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := serveDurable(ctx, db); err != nil && ctx.Err() == nil { // not cut short by the SIGTERM
		fmt.Fprintln(os.Stderr, "durable worker:", err)
		return 1
	}
	return 0
}

func serveDurable(ctx context.Context, db string) error {
	q, err := lite.Open(ctx, db, lite.Options{})
	if err != nil {
		return err
	}
	defer q.Close()
	w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: 8, HeartbeatInterval: 100 * time.Millisecond,
		StaleAfter: 400 * time.Millisecond, ShutdownGrace: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	engine := "sqlite"
	if lite.IsServerURL(db) {
		engine = "postgres"
	}
	w.Handle(lite.AnyKind, durableHandler(engine))
	fmt.Fprintln(os.Stderr, durableWorkerReady)
	return w.Run(ctx)
}
