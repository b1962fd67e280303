package lite_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/liteq/lite/lite"
)

// A program declares, at every start, the schedules and defaults it owns.
// What it declared before and no longer does is removed; what an operator
// set by hand stays, until a declaration forces. Declaring the same thing
// again keeps each schedule's next tick.
func ExampleQueue_Declare() {
	q, _, cleanup := clockQueue(time.Date(2030, 1, 1, 0, 30, 0, 0, time.UTC))
	defer cleanup()
	ctx := context.Background()
	show := func(d lite.Declared, err error) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("wrote %q, removed %q, held %q\n", d.Written, d.Removed, d.Held)
	}

	// Version 1 of the app: two schedules, a retention and a limit.
	v1 := lite.Declaration{
		Owner: "billing-app",
		Schedules: []lite.Schedule{
			{Name: "invoice", Spec: "@hourly", Job: lite.NewJob{Queue: "billing", Kind: "invoice"}},
			{Name: "dunning", Spec: "@daily", Job: lite.NewJob{Queue: "billing", Kind: "dunning"}},
		},
		Retention: lite.Retention{Done: 36 * time.Hour},
		Limits:    map[string]lite.Limits{"mail": {MaxRunning: 5}},
	}
	show(q.Declare(ctx, v1))

	// An operator keeps done jobs longer, by hand (lite retention --done 7d).
	if err := q.SetRetention(ctx, lite.Retention{Done: 7 * 24 * time.Hour}); err != nil {
		log.Fatal(err)
	}

	// Version 2 no longer sends dunning letters, nor limits mail.
	v2 := v1
	v2.Schedules = v1.Schedules[:1]
	v2.Limits = nil
	show(q.Declare(ctx, v2))

	r, _ := q.Retention(ctx)
	scheds, _ := q.Schedules(ctx)
	fmt.Printf("done jobs kept %s; schedules: %s of %s\n", lite.FormatRetention(r.Done), scheds[0].Name, scheds[0].Owner)
	// Output:
	// wrote ["schedule invoice" "schedule dunning" "retention done" "limits mail"], removed [], held []
	// wrote [], removed ["schedule dunning" "limits mail"], held ["retention done"]
	// done jobs kept 7d; schedules: invoice of billing-app
}
