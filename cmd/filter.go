package cmd

import (
	"cmp"
	"slices"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// checkName refuses a queue or kind flag that no job can have, as a usage
// error, before anything is read or stored.
func checkName(flag, name string) error {
	if err := lite.CheckName(name); err != nil {
		return usagef("--%s %w", flag, err)
	}
	return nil
}

// checkNewQueue refuses a --queue that no new job can have, an empty one
// included (it would pass for no --queue at all), as a usage error.
func checkNewQueue(name string) error {
	if name == "" {
		return usagef("--queue is empty: give a queue's name, or leave --queue out for %s", lite.DefaultQueue)
	}
	if err := lite.CheckQueueName(name); err != nil {
		return usagef("--queue %w", err)
	}
	return nil
}

// checkKey refuses a --key that no job can have: an empty one given
// (it would pass for no key at all), one the library refuses.
func checkKey(kctx *kong.Context, key string) error {
	switch {
	case key == "" && flagGiven(kctx, "key"):
		return usagef("--key is empty: give a key, or no --key")
	case len(key) > lite.MaxKeyBytes:
		return usagef("--key of %d bytes is over the limit of %d", len(key), lite.MaxKeyBytes)
	}
	return checkName("key", key)
}

// checkMaxAttempts refuses a --max-attempts under 1, as a usage error.
// Its zero value stands for the flag left out (the library's default), so
// a 0 given is refused rather than read as 10.
func checkMaxAttempts(kctx *kong.Context, n int) error {
	switch {
	case n < 0:
		return usagef("--max-attempts %d is negative: give at least 1, or leave it out for %d", n, lite.DefaultMaxAttempts)
	case n == 0 && flagGiven(kctx, "max-attempts"):
		return usagef("--max-attempts 0 would never run the job: give at least 1, or leave it out for %d", lite.DefaultMaxAttempts)
	}
	return nil
}

// checkTags refuses a --tag that no job can carry.
func checkTags(tags []string) error {
	for _, t := range tags {
		if err := lite.CheckTag(t); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// jobFilter is what the filter flags of ls, retry, cancel and delete
// picked.
type jobFilter struct {
	states      []lite.State
	queue, kind string
	tags        []string
}

// check refuses a filter flag given with an empty value, which the
// library reads as no filter: --queue "$QUEUE" with QUEUE unset would
// list, or delete, the jobs of every queue. It refuses a name no job can
// have, too.
func (f jobFilter) check(kctx *kong.Context) error {
	for _, flag := range []struct {
		name  string
		empty bool
	}{
		{"state", len(f.states) == 0 || slices.Contains(f.states, "")},
		{"queue", f.queue == ""},
		{"kind", f.kind == ""},
		{"tag", len(f.tags) == 0 || slices.Contains(f.tags, "")},
	} {
		if flag.empty && flagGiven(kctx, flag.name) {
			return usagef("--%s is empty: give a value, or leave the flag out not to filter on it", flag.name)
		}
	}
	return cmp.Or(checkName("queue", f.queue), checkName("kind", f.kind), checkTags(f.tags))
}
