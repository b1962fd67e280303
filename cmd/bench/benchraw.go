package bench

import (
	"context"
	"database/sql"
	"path/filepath"
	"time"

	"github.com/liteq/lite/lite"
)

// The raw references measure what SQLite itself does on this machine, with
// the pragmas lite uses, on a minimal jobs table without fencing: lite's
// figures are ratios to these.

func openRaw(ctx context.Context, dir string, sync lite.Synchronous) (*sql.DB, error) {
	mode := map[lite.Synchronous]string{lite.SyncFull: "FULL", lite.SyncNormal: "NORMAL"}[sync]
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "raw-"+mode+".db")+
		"?_pragma=journal_mode(WAL)&_synchronous="+mode+"&_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	_, err = db.ExecContext(ctx, `create table if not exists jobs (
    id integer primary key, state text not null, payload blob not null, result blob) strict;
create index if not exists jobs_available on jobs (id) where state = 'available';`)
	return db, err
}

// timed runs step until d has passed and returns how many jobs per second
// the steps handled; step returns how many it handled. A step that
// handled none ends the run early: the prefilled jobs ran out, and the
// rate is that of the time they lasted.
func timed(d time.Duration, step func() (int, error)) (float64, error) {
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		k, err := step()
		if err != nil {
			return 0, err
		}
		if k == 0 {
			break
		}
		n += k
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

const rawInsertSQL = `insert into jobs (state, payload) values ('available', ?)`

// rawInsert: one autocommit insert per job, prepared; insert is the
// engine's text of rawInsertSQL.
func rawInsert(ctx context.Context, db *sql.DB, insert string, d time.Duration) (float64, error) {
	ins, err := db.PrepareContext(ctx, insert)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	payload := []byte("{}")
	return timed(d, func() (int, error) {
		_, err := ins.ExecContext(ctx, payload)
		return 1, err
	})
}

// rawNaive (R1): three transactions per job: insert, claim, complete.
func rawNaive(ctx context.Context, db *sql.DB, d time.Duration) (float64, error) {
	stmts := map[string]string{
		"insert":   rawInsertSQL,
		"claim":    `update jobs set state = 'running' where id = (select id from jobs where state = 'available' order by id limit 1) returning id`,
		"complete": `update jobs set state = 'done', result = ? where id = ?`,
	}
	prepared := map[string]*sql.Stmt{}
	for k, q := range stmts {
		s, err := db.PrepareContext(ctx, q)
		if err != nil {
			return 0, err
		}
		defer s.Close()
		prepared[k] = s
	}
	return timed(d, func() (int, error) {
		if _, err := prepared["insert"].ExecContext(ctx, []byte("{}")); err != nil {
			return 0, err
		}
		var id int64
		if err := prepared["claim"].QueryRowContext(ctx).Scan(&id); err != nil {
			return 0, err
		}
		_, err := prepared["complete"].ExecContext(ctx, []byte("ok"), id)
		return 1, err
	})
}

// rawBatched (R2): prefilled jobs, claimed 100 at a time by one statement
// and completed 100 at a time in one transaction.
func rawBatched(ctx context.Context, db *sql.DB, d time.Duration, prefill int) (float64, error) {
	if _, err := db.ExecContext(ctx, `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
insert into jobs (state, payload) select 'available', x'7b7d' from n`, prefill); err != nil {
		return 0, err
	}
	claim, err := db.PrepareContext(ctx, `update jobs set state = 'running'
where id in (select id from jobs where state = 'available' order by id limit 100) returning id`)
	if err != nil {
		return 0, err
	}
	defer claim.Close()
	complete, err := db.PrepareContext(ctx, `update jobs set state = 'done', result = ? where id = ?`)
	if err != nil {
		return 0, err
	}
	defer complete.Close()
	return timed(d, func() (int, error) {
		ids, err := claimIDs(ctx, claim)
		if err != nil {
			return 0, err
		}
		if len(ids) == 0 {
			return 0, nil
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		s := tx.StmtContext(ctx, complete)
		for _, id := range ids {
			if _, err := s.ExecContext(ctx, []byte("ok"), id); err != nil {
				return 0, err
			}
		}
		return len(ids), tx.Commit()
	})
}

// claimIDs runs a claim that returns the ids it took, and reads them all:
// until its rows are closed, a claim on SQLite holds the write lock.
func claimIDs(ctx context.Context, claim *sql.Stmt) ([]int64, error) {
	rows, err := claim.QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
