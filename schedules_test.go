package cronfence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/cronfence/cronfence"
)

// Schedules that live in the store are created, changed and deleted while
// the replicas run: a schedule per tenant, say. Every replica registers
// the kinds of handler it runs; a stored schedule names its kind and
// carries the handler's arguments. An update names the version it read:
// a stale one is a conflict, never a lost update.
func ExampleScheduler_Schedules() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()

	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	err = sched.RegisterKind("send-report", func(ctx context.Context, run *cronfence.Run) error {
		var args struct {
			Tenant int `json:"tenant"`
		}
		if err := json.Unmarshal(run.Args, &args); err != nil {
			return err
		}
		fmt.Printf("%s: the report of tenant %d\n", run.Job, args.Tenant)
		close(done)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	schedules := sched.Schedules()
	sc, err := schedules.Create(ctx, "report-tenant-7", cronfence.ScheduleSettings{
		Spec: "0 6 * * *", TimeZone: "Europe/Lisbon", Kind: "send-report", Args: json.RawMessage(`{"tenant":7}`),
	}, "alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sc.Name, "version", sc.Version, sc.Spec)

	weekdays := sc.ScheduleSettings
	weekdays.Spec = "30 6 * * 1-5"
	sc, err = schedules.Update(ctx, sc.Name, sc.Version, weekdays, "bob")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sc.Name, "version", sc.Version, sc.Spec)

	_, err = schedules.Update(ctx, sc.Name, 1, weekdays, "carol") // read before bob's edit
	fmt.Println("stale version refused:", errors.Is(err, cronfence.ErrScheduleConflict))

	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sched.Stop(ctx)
	if _, err := sched.Trigger(ctx, "report-tenant-7"); err != nil {
		log.Fatal(err)
	}
	<-done
	// Output:
	// report-tenant-7 version 1 0 6 * * *
	// report-tenant-7 version 2 30 6 * * 1-5
	// stale version refused: true
	// report-tenant-7: the report of tenant 7
}
