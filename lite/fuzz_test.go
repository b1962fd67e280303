package lite_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/liteq/lite/lite"
)

// FuzzPayloadAndResultRoundTrip stores arbitrary bytes as a payload and as
// a result (through the group-commit path, which carries results as hex)
// and reads them back unchanged.
func FuzzPayloadAndResultRoundTrip(f *testing.F) {
	for _, seed := range [][]byte{nil, {}, []byte("hello"), {0, 1, 2, 255}, []byte(`{"json":true}`), bytes.Repeat([]byte{0xff}, 300)} {
		f.Add(seed)
	}
	q := mustOpenOpts(f, filepath.Join(f.TempDir(), "fuzz.db"), lite.Options{Synchronous: lite.SyncNormal})
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := q.Enqueue(t.Context(), lite.NewJob{Queue: "fuzz", Payload: data})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"fuzz"}})
		if err != nil || len(jobs) != 1 || jobs[0].ID != id {
			t.Fatalf("lease: %v %v", jobs, err)
		}
		if !bytes.Equal(jobs[0].Payload, data) {
			t.Fatalf("payload %x came back as %x", data, jobs[0].Payload)
		}
		errs, err := q.AckDoneMany(t.Context(), []lite.Done{{Lease: jobs[0].Lease(), Result: data}})
		if err != nil || errs[0] != nil {
			t.Fatalf("ack: %v %v", errs, err)
		}
		j, err := q.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		// why: an empty result is no result, stored as null on every path
		if !bytes.Equal(j.Result, data) || (len(data) == 0) != (j.Result == nil) {
			t.Fatalf("result %x came back as %x", data, j.Result)
		}
	})
}
