package web_test

import (
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/web"
)

// The dashboard must stay fast on a big file: 1M finished jobs and 100k
// waiting. Building it takes a while, so it is built once and kept in the
// temp dir across runs (its name says what it holds; delete it to build
// it again).
const (
	benchFinished  = 1_000_000
	benchAvailable = 100_000
)

var (
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

// benchQueue opens the big file, building it on first use: finished jobs
// spread over the last week in four queues, then the available ones, each
// set in one transaction of one statement.
func benchQueue(b *testing.B) *lite.Queue {
	b.Helper()
	benchOnce.Do(func() {
		benchPath = filepath.Join(os.TempDir(), "lite-web-bench-1000000-100000.db")
		if _, err := os.Stat(benchPath); err == nil {
			return
		}
		benchErr = buildBenchFile(b, benchPath+".tmp")
		if benchErr == nil {
			benchErr = os.Rename(benchPath+".tmp", benchPath)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	q, err := lite.Open(b.Context(), benchPath, lite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	return q
}

func buildBenchFile(b *testing.B, path string) error {
	os.Remove(path)
	q, err := lite.Open(b.Context(), path, lite.Options{})
	if err != nil {
		return err
	}
	defer q.Close()
	now := time.Now().UnixMilli()
	tx, err := q.DB().BeginTx(b.Context(), nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ?2)
insert into lite_jobs (queue, kind, payload, state, run_at, attempts, max_attempts, generation, created_at, finished_at)
select 'queue' || (i % 4), 'kind' || (i % 10), cast('{"n":' || i || '}' as blob), 'done', ?1 - 604800000 + i * 600, 1, 10, 1,
    ?1 - 604800000 + i * 600, ?1 - 604800000 + i * 600 + 50
from n`, now-1000, benchFinished); err != nil {
		return err
	}
	if _, err := tx.Exec(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ?2)
insert into lite_jobs (queue, kind, payload, run_at, max_attempts, created_at)
select 'queue' || (i % 4), 'kind' || (i % 10), cast('{"n":' || i || '}' as blob), ?1 - i, 10, ?1 - i
from n`, now, benchAvailable); err != nil {
		return err
	}
	return tx.Commit()
}

func benchPage(b *testing.B, target string) {
	q := benchQueue(b)
	h := web.Handler(q, web.Options{})
	if w := get(h, target); w.Code != http.StatusOK {
		b.Fatalf("%s: %d %s", target, w.Code, w.Body)
	}
	b.ResetTimer()
	for b.Loop() {
		get(h, target)
	}
}

func BenchmarkOverview(b *testing.B)              { benchPage(b, "/") }
func BenchmarkJobs(b *testing.B)                  { benchPage(b, "/jobs") }
func BenchmarkJobsOfAQueue(b *testing.B)          { benchPage(b, "/jobs?queue=queue1") }
func BenchmarkJobsAvailable(b *testing.B)         { benchPage(b, "/jobs?state=available") }
func BenchmarkJobsBelowTheMillionth(b *testing.B) { benchPage(b, "/jobs?before=1000000") }
