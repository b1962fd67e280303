package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestCtrlCExits130WithOneLineSayingWhatWasDone(t *testing.T) {
	t.Parallel()
	t.Run("enqueue --file says how many jobs it stored", func(t *testing.T) {
		is := is.New(t)
		db := filepath.Join(t.TempDir(), "q.db")
		file := filepath.Join(t.TempDir(), "jobs.jsonl")
		var lines bytes.Buffer
		for i := range 300_000 {
			fmt.Fprintf(&lines, "{\"payload\":\"job %d\"}\n", i)
		}
		is.NoErr(os.WriteFile(file, lines.Bytes(), 0o600))
		var errOut bytes.Buffer
		cmd := startLite(t, db, nil, &errOut, "enqueue", "--file", file)
		eventually(t, "a batch committed", func() bool {
			return strings.Contains(runLite(t, db, "", "stats").stdout, "default")
		})
		is.NoErr(cmd.Process.Signal(syscall.SIGINT))
		is.Equal(exitCode(t, cmd), 130)
		got := regexp.MustCompile(`^lite: created new database .*\nlite: enqueue --file .*jobs\.jsonl: interrupted; (\d+) jobs before line (\d+) were enqueued, nothing from line (\d+) on\n$`).
			FindStringSubmatch(errOut.String())
		is.True(got != nil) // one line, no rollback or driver internals
		n, _ := strconv.Atoi(got[1])
		is.Equal(got[2], strconv.Itoa(n+1))
		var stats []struct {
			Counts map[string]int `json:"counts"`
		}
		is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "stats")), &stats))
		is.Equal(stats[0].Counts["available"], n) // what it says it stored is what is stored
	})
	t.Run("wait says the jobs go on", func(t *testing.T) {
		is := is.New(t)
		db := filepath.Join(t.TempDir(), "q.db")
		mustLite(t, db, "", "enqueue", "x")
		var errOut bytes.Buffer
		cmd := startLite(t, db, nil, &errOut, "wait", "1")
		// why: a signal before lite handles signals would kill it; the
		// queue opens in well under this.
		time.Sleep(500 * time.Millisecond)
		is.NoErr(cmd.Process.Signal(syscall.SIGINT))
		is.Equal(exitCode(t, cmd), 130)
		is.Equal(errOut.String(), "lite: wait: interrupted; the jobs go on\n")
	})
}
