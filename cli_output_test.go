package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// rawUnsafe describes the first thing in out that must not reach a
// terminal as it is: a control character other than a newline, DEL, a C1
// control, a bidi override or isolate, or a byte of invalid UTF-8. It is
// empty when out is safe to print.
func rawUnsafe(out string) string {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Sprintf("invalid UTF-8 %#x at byte %d", out[i], i)
		case r == '\n':
		case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U at byte %d", r, i)
		}
		i += size
	}
	return ""
}

// Text that a job's enqueuer, its worker or its command controls, each
// trying to drive the terminal of whoever inspects the queue.
const (
	hostileQueue    = "q\x1b[2J\x1b]0;pwned\a"
	hostileKind     = "evil\x1b[2J\x1b]0;pwned\a\u009b31m\u202etxt\x7f"
	hostileKey      = "key\r\x1b[1A\xff"
	hostileLockedBy = "host\x1b[31m:1:\u2066abcd"
	hostileToken    = "tok\x1b[5m"
	hostileError    = "exit status 1: first line\n\x1b[2Jsecond\tline\u202e\n\u009bthird"
)

// storedKey is hostileKey as e stores it: a server's text is valid UTF-8
// only, so PostgreSQL is given the key without its invalid byte.
func storedKey(e cliEngine) string {
	if e.name == "postgres" {
		return strings.ToValidUTF8(hostileKey, "")
	}
	return hostileKey
}

// hostileDB makes a database holding one running job whose every text
// field is hostile, written with raw SQL as a foreign program or an older
// lite could have written it.
func hostileDB(t *testing.T, e cliEngine) string {
	t.Helper()
	db := e.db(t)
	q, err := lite.Open(t.Context(), db, lite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	errs, err := json.Marshal([]map[string]any{{"attempt": 1, "generation": 1, "at": time.Now().UnixMilli(), "error": hostileError}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	_, err = q.DB().ExecContext(t.Context(), `insert into lite_jobs
    (queue, kind, payload, state, run_at, attempts, max_attempts, generation,
     lease_token, locked_by, leased_at, heartbeat_at, unique_key, errors, created_at)
values ($1, $2, $3, 'running', $4, 2, 5, 2, $5, $6, $7, $8, $9, $10, $11)`,
		hostileQueue, hostileKind, []byte("pay\x1b[2Jload"), now, hostileToken, hostileLockedBy, now, now, storedKey(e), string(errs), now)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestUntrustedTextNeverReachesTheTerminalRaw(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		db := hostileDB(t, e)

		for _, args := range [][]string{{"ls"}, {"ls", "-s", "running"}, {"show", "1"}, {"stats"},
			{"--json", "ls"}, {"--json", "show", "1"}, {"--json", "stats"}} {
			t.Run(strings.Join(args, " ")+" prints hostile fields escaped", func(t *testing.T) {
				is := is.New(t)
				out := mustLite(t, db, "", args...)
				is.Equal(rawUnsafe(out), "") // nothing raw reaches the terminal
			})
		}

		t.Run("ls, show and stats quote a hostile field in Go's escaped form", func(t *testing.T) {
			is := is.New(t)
			ls := mustLite(t, db, "", "ls")
			is.True(strings.Contains(ls, strconv.Quote(hostileQueue)))
			is.True(strings.Contains(ls, strconv.Quote(hostileKind)))
			is.True(strings.Contains(ls, strconv.Quote(hostileLockedBy)))
			show := mustLite(t, db, "", "show", "1")
			for _, s := range []string{hostileQueue, hostileKind, hostileLockedBy, hostileToken, storedKey(e)} {
				is.True(strings.Contains(show, strconv.Quote(s)))
			}
			is.True(strings.Contains(show, `"pay\x1b[2Jload"`))
			is.True(strings.Contains(mustLite(t, db, "", "stats"), strconv.Quote(hostileQueue)))
		})

		t.Run("show keeps a multi-line error's lines and escapes each of them", func(t *testing.T) {
			is := is.New(t)
			show := mustLite(t, db, "", "show", "1")
			is.True(strings.Contains(show, "\n  exit status 1: first line\n")) // a clean line stays as it was
			is.True(strings.Contains(show, "\n  "+strconv.Quote("\x1b[2Jsecond\tline\u202e")+"\n"))
			is.True(strings.Contains(show, "\n  "+strconv.Quote("\u009bthird")+"\n"))
		})

		t.Run("--json keeps every hostile field's value", func(t *testing.T) {
			is := is.New(t)
			var j struct {
				Queue      string `json:"queue"`
				Kind       string `json:"kind"`
				UniqueKey  string `json:"unique_key"`
				LockedBy   string `json:"locked_by"`
				LeaseToken string `json:"lease_token"`
				Errors     []struct {
					Error string `json:"error"`
				} `json:"errors"`
			}
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "show", "1")), &j))
			is.Equal(j.Queue, hostileQueue)
			is.Equal(j.Kind, hostileKind)
			is.Equal(j.UniqueKey, strings.ToValidUTF8(storedKey(e), "\uFFFD")) // JSON holds UTF-8 only
			is.Equal(j.LockedBy, hostileLockedBy)
			is.Equal(j.LeaseToken, hostileToken)
			is.Equal(len(j.Errors), 1)
			is.Equal(j.Errors[0].Error, hostileError)
		})

		t.Run("a command's stderr recorded as its error is shown escaped", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "--max-attempts", "1", "x")
			r := runLite(t, db, "", "work", "--exit-when-empty", "--", "sh", "-c", `printf 'bad\033[2J\033]0;pwned\007' >&2; exit 1`)
			is.Equal(r.code, 3) // its one job died
			show := mustLite(t, db, "", "show", "1")
			is.Equal(rawUnsafe(show), "")
			is.True(strings.Contains(show, `"exit status 1: bad\x1b[2J\x1b]0;pwned\a"`))
		})
	})
}

// liteJSON runs the binary with --json and decodes what it printed.
func liteJSON(t *testing.T, db, stdin string, args ...string) any {
	t.Helper()
	out := mustLite(t, db, stdin, append([]string{"--json"}, args...)...)
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("lite --json %v: %v: %q", args, err, out)
	}
	return v
}

func TestAdminCommandsPrintJSON(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		// Job 1 is leased an hour ago and never renewed; job 2 is leased now.
		hourAgo := func() time.Time { return time.Now().Add(-time.Hour) }
		q, err := lite.Open(t.Context(), db, lite.Options{Now: hourAgo})
		is.NoErr(err)
		for range 3 {
			_, err := q.Enqueue(t.Context(), lite.NewJob{})
			is.NoErr(err)
		}
		_, err = q.Lease(t.Context(), lite.LeaseRequest{Max: 1})
		is.NoErr(err)
		is.NoErr(q.Close())
		q, err = lite.Open(t.Context(), db, lite.Options{})
		is.NoErr(err)
		_, err = q.Lease(t.Context(), lite.LeaseRequest{Max: 1})
		is.NoErr(err)
		is.NoErr(q.Close())

		type obj = map[string]any
		is.Equal(liteJSON(t, db, "", "reclaim"), []any{obj{"id": 1.0, "state": "available", "generation": 2.0}})
		is.Equal(liteJSON(t, db, "", "reclaim"), []any{}) // none left: a list, not null
		is.Equal(liteJSON(t, db, "", "release", "2"), obj{"id": 2.0, "state": "available", "generation": 2.0})
		is.Equal(liteJSON(t, db, "", "cancel", "3"), obj{"id": 3.0, "state": "cancelled"})
		is.Equal(liteJSON(t, db, "", "retry", "3"), obj{"id": 3.0, "state": "available"})
		mustLite(t, db, "", "cancel", "3")
		is.Equal(liteJSON(t, db, "", "purge", "--state", "cancelled", "--older-than", "0s"), obj{"purged": 1.0})
		is.Equal(liteJSON(t, db, "{\"unique_key\":\"k\"}\n\n{\"unique_key\":\"k\"}\n", "enqueue", "--file", "-"),
			obj{"enqueued": 1.0, "duplicates": 1.0, "debounced": 0.0, "ids": []any{4.0, 4.0}, "batch": nil})
	})
}

func TestEnqueueFileJSONHasOneShape(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "q.db")
	type obj = map[string]any
	for _, c := range []struct {
		name  string
		lines string
		args  []string
		want  obj
	}{
		{"an empty file", "", nil,
			obj{"enqueued": 0.0, "duplicates": 0.0, "debounced": 0.0, "ids": []any{}, "batch": nil}},
		{"plain lines with a duplicate", "{\"unique_key\":\"a\"}\n{\"unique_key\":\"a\"}\n", nil,
			obj{"enqueued": 1.0, "duplicates": 1.0, "debounced": 0.0, "ids": []any{1.0, 1.0}, "batch": nil}},
		{"a workflow", "{\"name\":\"a\"}\n{\"after_names\":[\"a\"]}\n", nil,
			obj{"enqueued": 2.0, "duplicates": 0.0, "debounced": 0.0, "ids": []any{2.0, 3.0}, "batch": nil}}, // the duplicate took its key's hold, no id
		{"a batch", "{}\n", []string{"--batch", "nightly"},
			obj{"enqueued": 1.0, "duplicates": 0.0, "debounced": 0.0, "ids": []any{4.0}, "batch": 1.0}},
	} {
		t.Run(c.name+" prints every field", func(t *testing.T) {
			is := is.New(t)
			is.Equal(liteJSON(t, db, c.lines, append([]string{"enqueue", "--file", "-"}, c.args...)...), c.want)
		})
	}
}

// TestJSONOutputIsTheLibrarysForm pins that --json prints exactly what
// json.Marshal makes of the library's values, so an application serving
// them and a script reading the CLI see one form.
func TestJSONOutputIsTheLibrarysForm(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		db := e.db(t)
		q, err := lite.Open(t.Context(), db, lite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		ctx := t.Context()
		// A done job with a binary result, a dead one with its errors, and a
		// delayed one, so that no job is ready and oldest_ready_ms is 0.
		enqueue := func(j lite.NewJob) *lite.Job {
			t.Helper()
			if _, err := q.Enqueue(ctx, j); err != nil {
				t.Fatal(err)
			}
			jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"mail"}})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("lease: %v, %d jobs", err, len(jobs))
			}
			return jobs[0]
		}
		done := enqueue(lite.NewJob{Queue: "mail", Kind: "send", Payload: []byte(`{"to":"ada"}`), UniqueKey: "ada"})
		if err := q.AckDone(ctx, done.Lease(), []byte{0x89, 'P', 'N', 'G'}); err != nil {
			t.Fatal(err)
		}
		dead := enqueue(lite.NewJob{Queue: "mail", Kind: "send", Payload: []byte{0xff}, MaxAttempts: 1})
		if err := q.AckFailed(ctx, dead.Lease(), errors.New("smtp refused")); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Enqueue(ctx, lite.NewJob{Queue: "mail", Delay: time.Hour}); err != nil {
			t.Fatal(err)
		}
		marshalled := func(v any) string {
			t.Helper()
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			return string(b) + "\n"
		}

		t.Run("show --json prints json.Marshal of the job Get returns", func(t *testing.T) {
			is := is.New(t)
			for _, id := range []int64{done.ID, dead.ID} {
				j, err := q.Get(ctx, id)
				is.NoErr(err)
				is.Equal(mustLite(t, db, "", "--json", "show", fmt.Sprint(id)), marshalled(j))
			}
		})

		t.Run("ls --json prints json.Marshal of the jobs List returns", func(t *testing.T) {
			is := is.New(t)
			jobs, err := q.List(ctx, lite.ListFilter{Newest: true})
			is.NoErr(err)
			is.Equal(len(jobs), 3)
			is.Equal(mustLite(t, db, "", "--json", "ls"), marshalled(jobs))
			slices.Reverse(jobs)
			is.Equal(mustLite(t, db, "", "--json", "ls", "--oldest-first"), marshalled(jobs))
			is.Equal(mustLite(t, db, "", "--json", "ls", "--state", "running"), "[]\n") // none: a list, not null
		})

		t.Run("stats --json prints json.Marshal of Stats, with every state counted", func(t *testing.T) {
			is := is.New(t)
			stats, err := q.Stats(ctx)
			is.NoErr(err)
			out := mustLite(t, db, "", "--json", "stats")
			is.Equal(out, marshalled(stats))
			var compact bytes.Buffer
			is.NoErr(json.Compact(&compact, []byte(out)))
			is.Equal(compact.String(), `[{"queue":"mail","counts":{"available":1,"blocked":0,"cancelled":0,"dead":1,"done":1,"running":0},"oldest_ready_ms":0,"sleeping":0,"awaiting":0,"paused":false}]`)
		})

		t.Run("show --json escapes what a terminal acts on and still reads back as the job", func(t *testing.T) {
			is := is.New(t)
			payload := "del\x7f c1\u009b31m bidi\u202etxt"
			id, err := q.Enqueue(ctx, lite.NewJob{Queue: "other", Payload: []byte(payload)})
			is.NoErr(err)
			j, err := q.Get(ctx, id)
			is.NoErr(err)
			out := mustLite(t, db, "", "--json", "show", fmt.Sprint(id))
			is.Equal(rawUnsafe(out), "")
			is.True(strings.Contains(out, `"payload": "del\u007f c1\u009b31m bidi\u202etxt"`))
			var back lite.Job
			is.NoErr(json.Unmarshal([]byte(out), &back))
			is.Equal(string(back.Payload), payload)
			is.Equal(marshalled(back), marshalled(j)) // the same job, field for field
		})
	})
}

func TestAServerThatRefusesTheConnectionIsOneReadableLine(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	// Two addresses, each refusing: pgx gives a line for each, indented.
	r := runLite(t, "postgres://ada@127.0.0.1:1,127.0.0.1:2/app?sslmode=disable", "", "ls")
	is.Equal(r.code, 1)
	is.Equal(strings.Count(r.stderr, "\n"), 1) // one line
	is.Equal(rawUnsafe(r.stderr), "")
	is.True(!strings.Contains(r.stderr, `\n`)) // no escaped line breaks,
	is.True(!strings.Contains(r.stderr, `\t`)) // nor tabs
	is.True(strings.Contains(r.stderr, "127.0.0.1:1"))
	is.True(strings.Contains(r.stderr, "; 127.0.0.1:2")) // each address's error, joined
}

func TestShowJSONCarriesTheLinksTheTextFormShows(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	file := filepath.Join(t.TempDir(), "flow.jsonl")
	is.NoErr(os.WriteFile(file, []byte(`{"name":"a"}`+"\n"+`{"name":"b","after_names":["a"],"on_dep_failure":"run"}`+"\n"), 0o600))
	mustLite(t, db, "", "enqueue", "--file", file, "--batch", "nightly")
	var b, a map[string]any
	is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "show", "2")), &b))
	is.Equal(b["waits_for"], []any{map[string]any{"id": 1.0, "kind": "default", "state": "available"}})
	is.Equal(b["deps_pending"], 1.0)
	is.Equal(b["on_dep_failure"], "run")
	is.Equal(b["batch"], 1.0)
	is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "show", "1")), &a))
	is.Equal(a["waited_for_by"], []any{map[string]any{"id": 2.0, "kind": "default", "state": "blocked"}})
	is.Equal(a["on_dep_failure"], nil) // a policy is a waiting job's alone
}
