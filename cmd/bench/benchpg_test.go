package bench

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	_ "github.com/liteq/lite/lite/pg" // lite.Open of a postgres:// URL, for BenchmarkServerWorker
	"github.com/matryer/is"
)

// testServer is the PostgreSQL server the tests may use; .ci/run starts
// one. Without it the test is skipped, except in CI.
func testServer(t testing.TB) string {
	t.Helper()
	u := os.Getenv("LITE_TEST_POSTGRES")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but LITE_TEST_POSTGRES is not set: .ci/run starts the server and sets it")
		}
		t.Skip("LITE_TEST_POSTGRES is not set: the PostgreSQL bench was skipped")
	}
	return u
}

func TestBenchServerDropsWhatAFailedFigureLeft(t *testing.T) {
	is := is.New(t)
	admin, err := sql.Open("pgx", testServer(t))
	is.NoErr(err)
	defer admin.Close()
	var warnings bytes.Buffer
	s, err := openPGServer(t.Context(), testServer(t), &warnings, strconv.Quote)
	is.NoErr(err)
	schemas := func() (n int) {
		is.NoErr(admin.QueryRowContext(t.Context(), `select count(*) from pg_namespace where starts_with(nspname, $1)`,
			s.prefix()).Scan(&n))
		return n
	}
	first, err := s.schema(t.Context())
	is.NoErr(err)
	_, err = s.schema(t.Context())
	is.NoErr(err)
	is.Equal(schemas(), 2)
	is.NoErr(s.drop(first)) // after its figure
	is.Equal(schemas(), 1)
	s.close() // the second figure failed before it dropped its own
	is.Equal(schemas(), 0)
	is.Equal(warnings.String(), "")
}

func TestBenchServerMeasuresWithoutTheRightToCheckpointAndSaysSo(t *testing.T) {
	is := is.New(t)
	base := testServer(t)
	admin, err := sql.Open("pgx", base)
	is.NoErr(err)
	t.Cleanup(func() { admin.Close() })
	role := fmt.Sprintf("lite_bench_plain_%d", os.Getpid())
	_, err = admin.ExecContext(t.Context(), "create role "+role+" login")
	is.NoErr(err)
	t.Cleanup(func() { // before admin closes: cleanups run last first
		if _, err := admin.Exec("drop role " + role); err != nil {
			t.Errorf("drop role: %v", err)
		}
	})
	u, err := url.Parse(base)
	is.NoErr(err)
	u.User = url.User(role) // the test server trusts its clients

	var warnings bytes.Buffer
	s, err := openPGServer(t.Context(), u.String(), &warnings, strconv.Quote)
	is.NoErr(err)
	defer s.close()
	is.NoErr(s.checkpoint(t.Context()))
	is.NoErr(s.checkpoint(t.Context()))
	is.True(s.noCheckpoint)
	is.Equal(strings.Count(warnings.String(), "may not checkpoint"), 1) // said once, not at every figure

	// A role that may checkpoint does, in silence.
	warnings.Reset()
	super, err := openPGServer(t.Context(), base, &warnings, strconv.Quote)
	is.NoErr(err)
	defer super.close()
	is.NoErr(super.checkpoint(t.Context()))
	is.True(!super.noCheckpoint)
	is.Equal(warnings.String(), "")
}

// BenchmarkServerWorker drains b.N prefilled jobs on the server of
// LITE_TEST_POSTGRES with a no-op handler, as lite bench's worker figures
// do, in a fresh schema each time. Give it a fixed count, so that the
// fill is not redone as b.N grows, and take turns with the code it is
// compared with: -benchtime 20000x -count 6, then benchstat.
func BenchmarkServerWorker(b *testing.B) {
	dsn := testServer(b)
	for _, c := range []int{16, 256} {
		b.Run(fmt.Sprintf("concurrency-%d", c), func(b *testing.B) {
			s, err := openPGServer(b.Context(), dsn, io.Discard, strconv.Quote)
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			r := &benchRun{c: &Flags{}, server: s, name: "postgres"}
			q, db, err := r.open(b.Context(), "")
			if err != nil {
				b.Fatal(err)
			}
			defer r.close(q, db)
			if err := s.fill(b.Context(), q, b.N, lite.StateAvailable); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			rate, err := drain(b.Context(), q, c, time.Hour, int64(b.N), io.Discard, noop)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(rate, "jobs/s")
		})
	}
}
