package lite_test

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// TestClockStepsNeverLetAStaleAckLand drives three would-be workers by hand
// while the one clock jumps forward and back by minutes. Jumps may cost
// early reclaims (a forward jump past staleAfter makes a live lease look
// lapsed) or late ones (a backward jump delays them), never a stale
// result: every job ends done with the result written under its final
// generation.
func TestClockStepsNeverLetAStaleAckLand(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		const jobs = 40
		for range jobs {
			mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		}
		rng := rand.New(rand.NewPCG(7, 11))
		var held []lite.Lease
		var lost, reclaimed, backward int
		ack := func(i int) {
			l := held[i]
			held = append(held[:i], held[i+1:]...)
			err := q.AckDone(ctx, l, []byte(strconv.FormatInt(l.Generation, 10)))
			if errors.Is(err, lite.ErrLeaseLost) {
				lost++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		for range 3000 {
			switch rng.IntN(7) {
			case 0: // a jump of up to five minutes either way
				d := time.Duration(rng.IntN(600)-300) * time.Second
				if d < 0 {
					backward++
				}
				clock.Advance(d)
			case 1:
				got, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"q"}, Max: 1 + rng.IntN(3)})
				is.NoErr(err)
				for _, j := range got {
					held = append(held, j.Lease())
				}
			case 2:
				if _, err := q.Renew(ctx, held); err != nil {
					t.Fatal(err)
				}
			case 3:
				got, err := q.ReclaimOrphaned(ctx)
				is.NoErr(err)
				reclaimed += len(got)
			case 4, 5:
				if len(held) > 0 {
					ack(rng.IntN(len(held)))
				}
			case 6:
				clock.Advance(time.Second)
			}
		}
		for len(held) > 0 { // the survivors ack late; whatever was taken is skipped
			ack(0)
		}
		clock.Advance(time.Hour) // past any run_at a backward jump left ahead
		for {
			got, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"q"}, Max: jobs})
			is.NoErr(err)
			if len(got) == 0 {
				break
			}
			for _, j := range got {
				is.NoErr(q.AckDone(ctx, j.Lease(), []byte(strconv.FormatInt(j.Generation, 10))))
			}
		}
		all, err := q.List(ctx, lite.ListFilter{Limit: jobs})
		is.NoErr(err)
		for _, j := range all {
			is.Equal(j.State, lite.StateDone)
			is.Equal(string(j.Result), strconv.FormatInt(j.Generation, 10)) // no stale result landed
		}
		// why: the run must have exercised what it claims to
		is.True(lost > 0 && reclaimed > 0 && backward > 0)
		t.Logf("%d backward jumps, %d reclaims, %d stale acks skipped", backward, reclaimed, lost)
	})
}

func TestAForwardJumpShorterThanTheSlackReclaimsNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		a := mustLeaseOne(t, q, "q")
		const heartbeat = 10 * time.Second // a worker renews this often
		clock.Advance(heartbeat)
		_, err := q.Renew(ctx, []lite.Lease{a.Lease()})
		is.NoErr(err)
		// The bound: right after a beat, a jump under staleAfter takes nothing;
		// just before the next beat, a jump under staleAfter - heartbeat.
		clock.Advance(heartbeat - time.Millisecond)
		clock.Advance(staleAfter - heartbeat)
		got, err := q.ReclaimOrphaned(ctx)
		is.NoErr(err)
		is.Equal(len(got), 0)
		clock.Advance(2 * time.Millisecond) // past the bound: the live lease looks lapsed
		got, err = q.ReclaimOrphaned(ctx)
		is.NoErr(err)
		is.Equal(len(got), 1)
		is.True(errors.Is(q.AckDone(ctx, a.Lease(), nil), lite.ErrLeaseLost)) // its ack is skipped
	})
}
