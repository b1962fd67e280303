package main

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestDeclareOwnsWhatItDeclares(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		billing := `{"owner": "billing-app",
  "schedules": [{"name": "invoice", "spec": "@hourly", "queue": "billing", "kind": "invoice"},
                {"name": "dunning", "spec": "@daily", "queue": "billing", "kind": "dunning"}],
  "retention": {"done": "36h"},
  "limits": {"mail": {"max_running": 5, "rate": "50/1s"}}}`
		is.Equal(mustLite(t, db, billing, "declare", "-"),
			"wrote schedule invoice\nwrote schedule dunning\nwrote retention done\nwrote limits mail\n")
		is.Equal(mustLite(t, db, "", "limit", "mail"), "queue mail: at most 5 running, 50 starts per 1s (code:billing-app)\n")
		is.True(strings.HasPrefix(mustLite(t, db, "", "retention"), "done       36h (code:billing-app)\ncancelled  1d\n"))
		is.True(strings.Contains(mustLite(t, db, "", "schedule", "ls"), "code:billing-app"))

		mustLite(t, db, "", "retention", "--done", "2d") // the operator's
		mustLite(t, db, "", "schedule", "add", "backup", "@daily", "--kind", "backup")
		smaller := `{"owner": "billing-app", "schedules": [{"name": "invoice", "spec": "@hourly", "queue": "billing", "kind": "invoice"}],
  "retention": {"done": "36h"}}`
		is.Equal(mustLite(t, db, smaller, "declare", "-"),
			"removed schedule dunning\nremoved limits mail\n"+
				"held retention done: set by hand or by another owner; --force takes it\nunchanged schedule invoice\n")
		is.True(strings.HasPrefix(mustLite(t, db, "", "retention"), "done       2d (hand)\n"))
		all := listSchedules(t, db)
		is.Equal(len(all), 2)
		is.Equal([2]string{all[0].Name, all[0].Owner}, [2]string{"backup", ""}) // set by hand: kept
		is.Equal([2]string{all[1].Name, all[1].Owner}, [2]string{"invoice", "billing-app"})
		is.Equal(mustLite(t, db, "", "limit", "mail"), "queue mail: no limits\n")

		is.Equal(mustLite(t, db, smaller, "declare", "--force", "-"), "wrote retention done\nunchanged schedule invoice\n")
		is.True(strings.HasPrefix(mustLite(t, db, "", "retention"), "done       36h (code:billing-app)\n"))

		r := runLite(t, db, `{"owner": "x", "schedule": []}`, "declare", "-")
		is.Equal(r.code, 2) // a misspelt field is refused
		is.True(strings.Contains(r.stderr, `unknown field "schedule"`))
		r = runLite(t, db, `{"schedules": []}`, "declare", "-")
		is.Equal(r.code, 2)
		is.True(strings.Contains(r.stderr, "the owner is empty"))

		// A declaration's limits take the per-key settings too (the file
		// once refused them, and a declaration of the queue erased them).
		mustLite(t, db, `{"owner": "keys", "limits": {"hosts": {"max_running_per_key": 2, "sequence": "continue"}}}`, "declare", "-")
		is.Equal(mustLite(t, db, "", "limit", "hosts"),
			"queue hosts: at most 2 running per key, one at a time per key in order (continue after a dead or cancelled job) (code:keys)\n")

		// Nothing after the one object, and nothing unknown inside it: each
		// of these once declared (and removed the billing-app's schedule).
		for _, bad := range []string{
			`{"owner": "billing-app"} trailing`,
			`{"owner": "billing-app"}{"owner": "z"}`,
			`{"owner": "billing-app", "schedules": [{"name": "s", "spec": "@daily", "kind": "k", "bogus": 1}]}`,
		} {
			before := mustLite(t, db, "", "schedule", "ls")
			r := runLite(t, db, bad, "declare", "-")
			is.Equal(r.code, 2)
			is.Equal(strings.Count(r.stderr, "\n"), 1)
			is.Equal(mustLite(t, db, "", "schedule", "ls"), before) // nothing changed
		}
	})
}
