package pg_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	_ "github.com/liteq/lite/lite/pg"
)

// serverURL is a URL on the test server whose connections use an empty
// schema of their own, dropped when the test ends.
func serverURL(t *testing.T) string { return litetest.RequirePostgres(t).DSN(t) }

func TestOpenRefusesABadURLWithoutPrintingItsPassword(t *testing.T) {
	_, err := lite.Open(t.Context(), "postgres://ada:s3cret@127.0.0.1:1/none?connect_timeout=1", lite.Options{})
	if err == nil {
		t.Fatal("opened a server that is not there")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the error prints the password: %v", err)
	}
}

func TestOpenMigratesOnceAndRefusesANewerSchema(t *testing.T) {
	url := serverURL(t)
	q, err := lite.Open(t.Context(), url, lite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := q.DB()
	var version int
	if err := db.QueryRowContext(t.Context(), `select max(version) from lite_migrations`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != lite.SchemaVersion() {
		t.Fatalf("schema at %d, want %d", version, lite.SchemaVersion())
	}
	if _, err := db.ExecContext(t.Context(), `insert into lite_migrations values (999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	q.Close()
	if _, err := lite.Open(t.Context(), url, lite.Options{}); !errors.Is(err, lite.ErrSchemaTooNew) {
		t.Fatalf("got %v, want ErrSchemaTooNew", err)
	}
}

func TestHostsOpeningANewSchemaAtOnceAllStart(t *testing.T) {
	url := serverURL(t)
	// A role's lock_timeout must not fail a host that waits its turn.
	url += "&lock_timeout=1ms"
	const hosts = 8
	errs := make(chan error, hosts)
	for range hosts {
		go func() {
			q, err := lite.Open(t.Context(), url, lite.Options{})
			if err == nil {
				err = q.Close()
			}
			errs <- err
		}()
	}
	for range hosts {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestThePoolKeepsConnectionsOpenBetweenUses(t *testing.T) {
	q, err := lite.Open(t.Context(), serverURL(t), lite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	db := q.DB()
	// A worker's lease loop, group commits and heartbeats and the
	// program's enqueues use several connections at once.
	var conns []*sql.Conn
	for range 8 {
		c, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	// database/sql's default keeps two and closes the rest, which the next
	// burst then opens again: a server process and its statements each.
	if s := db.Stats(); s.MaxIdleClosed != 0 || s.Idle < 8 {
		t.Fatalf("after 8 connections at once: %d idle, %d closed for want of room", s.Idle, s.MaxIdleClosed)
	}
}
