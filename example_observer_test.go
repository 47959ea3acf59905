package cronfence_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/cronfence/cronfence"
)

// An Observer sees what the scheduler does as it happens: the hook for
// metrics and alert delivery (the cronfence binary feeds Prometheus and a
// webhook from it). Observe must be quick: it runs on the scheduler's
// goroutines.
func ExampleObserver() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()

	ended := make(chan struct{})
	observer := cronfence.ObserverFunc(func(e cronfence.Event) {
		switch e := e.(type) {
		case cronfence.RunStartEvent:
			fmt.Printf("start %s: %s, generation %d\n", e.Job, e.Origin, e.Generation)
		case cronfence.RunEndEvent:
			fmt.Printf("end %s: %s, recorded %v\n", e.Job, e.Outcome, e.Recorded)
			close(ended)
		}
	})
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, Observer: observer})
	if err != nil {
		log.Fatal(err)
	}
	err = sched.Register(cronfence.Job{
		Name:     "export",
		Schedule: "0 3 * * *",
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			return errors.New("the export target is read-only")
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sched.Stop(ctx)

	if _, err := sched.Trigger(ctx, "export"); err != nil {
		log.Fatal(err)
	}
	<-ended
	// Output:
	// start export: manual, generation 1
	// end export: failure, recorded true
}
