package lite

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds on a job's tags and metadata. Tags are short labels to find jobs
// by (lite ls --tag, ListFilter.Tags); metadata is a small string map
// that travels with the job for middleware and handlers, such as the W3C
// trace context package litetrace stores. Neither is a second payload.
const (
	// MaxTags is how many tags a job may carry.
	MaxTags = 16
	// MaxTagBytes is the longest tag.
	MaxTagBytes = 64
	// MaxMetaBytes bounds a job's metadata as stored: the JSON object of
	// its keys and values, 8 KiB.
	MaxMetaBytes = 8 << 10
)

// tagProblem says what makes a tag unusable, or "" when nothing does.
// Tags are names (see nameProblem), short, and without a comma, which
// the CLI's --tag a,b splits on.
func tagProblem(tag string) string {
	switch {
	case tag == "":
		return "is empty"
	case len(tag) > MaxTagBytes:
		return fmt.Sprintf("is over %d bytes", MaxTagBytes)
	case strings.ContainsRune(tag, ','):
		return "contains a comma"
	}
	return nameProblem(tag)
}

// CheckTag says why tag cannot be a job's tag, or nil when it can.
func CheckTag(tag string) error {
	if problem := tagProblem(tag); problem != "" {
		return fmt.Errorf("tag %q %s", tag, problem)
	}
	return nil
}

// checkTags validates tags and returns them sorted without duplicates.
func checkTags(tags []string) ([]string, error) {
	for _, t := range tags {
		if err := CheckTag(t); err != nil {
			return nil, err
		}
	}
	tags = slices.Compact(slices.Sorted(slices.Values(tags)))
	if len(tags) > MaxTags {
		return nil, fmt.Errorf("%d tags: over the limit of %d", len(tags), MaxTags)
	}
	return tags, nil
}

// encodeTags is the tags column's JSON text for tags, checked.
func encodeTags(tags []string) (string, error) {
	tags, err := checkTags(tags)
	if err != nil || len(tags) == 0 {
		return emptyTags, err
	}
	b, err := json.Marshal(tags)
	return string(b), err
}

// MetaPrefix begins the metadata keys that lite alone writes: a
// callback's "lite.job", "lite.state", "lite.batch" and counts. A
// handler trusts them to name what ended, so an enqueue that sets one is
// refused (ErrInvalid).
const MetaPrefix = "lite."

// encodeMeta is the meta column's JSON text for meta, checked: keys are
// not empty and not lite's (MetaPrefix), keys and values are UTF-8 (JSON
// would turn other bytes into U+FFFD), and the whole is at most
// MaxMetaBytes.
func encodeMeta(meta map[string]string) (string, error) {
	if len(meta) == 0 {
		return emptyMeta, nil
	}
	for k, v := range meta {
		switch {
		case k == "":
			return "", fmt.Errorf("metadata: an empty key")
		case strings.HasPrefix(k, MetaPrefix):
			return "", fmt.Errorf("metadata key %q: keys starting %q are lite's own: %w", k, MetaPrefix, ErrInvalid)
		case !utf8.ValidString(k):
			return "", fmt.Errorf("metadata key %q is not valid UTF-8", k)
		case !utf8.ValidString(v):
			return "", fmt.Errorf("metadata %q: the value is not valid UTF-8", k)
		}
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return "", err
	}
	if len(b) > MaxMetaBytes {
		return "", fmt.Errorf("metadata of %d bytes: %w (limit %d)", len(b), ErrTooLarge, MaxMetaBytes)
	}
	return string(b), nil
}

// What the columns hold for a job without tags or metadata.
const (
	emptyTags = "[]"
	emptyMeta = "{}"
)

// orEmpty is text, or empty when text is "" (a jobRow not made by
// validate, such as a schedule's).
func orEmpty(text, empty string) string {
	if text == "" {
		return empty
	}
	return text
}

// decodeMeta fills j's Tags and Meta from their columns' JSON texts.
func decodeMeta(j *Job, tags, meta string) error {
	if err := json.Unmarshal([]byte(tags), &j.Tags); err != nil {
		return fmt.Errorf("job %d: tags column: %w", j.ID, err)
	}
	if err := json.Unmarshal([]byte(meta), &j.Meta); err != nil {
		return fmt.Errorf("job %d: meta column: %w", j.ID, err)
	}
	if len(j.Tags) == 0 {
		j.Tags = nil
	}
	if len(j.Meta) == 0 {
		j.Meta = nil
	}
	return nil
}
