package cronfence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

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

// ExampleSchedules runs the README's snippet.
func ExampleSchedules() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	sc, err := readmeSchedules(ctx, sched, func(context.Context, *cronfence.Run) error { return nil })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sc.Name, "version", sc.Version, sc.Spec)
	// Output:
	// report-tenant-7 version 2 30 6 * * 1-5
}

// readmeSchedules is README.md's "Schedules that change at runtime" snippet.
func readmeSchedules(ctx context.Context, sched *cronfence.Scheduler, sendReport cronfence.Handler) (cronfence.Schedule, error) {
	sched.RegisterKind("send-report", sendReport) // on every replica; sendReport reads run.Args

	sc, err := sched.Schedules().Create(ctx, "report-tenant-7", cronfence.ScheduleSettings{
		Spec: "0 6 * * *", Kind: "send-report", Args: json.RawMessage(`{"tenant":7}`),
	}, "alice")
	if err != nil {
		return sc, err
	}
	sc.Spec = "30 6 * * 1-5"
	sc, err = sched.Schedules().Update(ctx, sc.Name, sc.Version, sc.ScheduleSettings, "bob") // stale version: ErrScheduleConflict
	return sc, err
}

// ExampleSchedules_tour runs docs/schedules.md's Go snippet.
func ExampleSchedules_tour() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	sendReport := func(ctx context.Context, run *cronfence.Run, tenant int) error { return nil }
	if err := schedulesTour(ctx, sched, sendReport); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 schedules, 2 changes
}

// schedulesTour is docs/schedules.md's "In Go" snippet.
func schedulesTour(ctx context.Context, sched *cronfence.Scheduler, sendReport func(context.Context, *cronfence.Run, int) error) error {
	sched.RegisterKind("send-report", func(ctx context.Context, run *cronfence.Run) error {
		var args struct {
			Tenant int `json:"tenant"`
		}
		if err := json.Unmarshal(run.Args, &args); err != nil {
			return err
		}
		return sendReport(ctx, run, args.Tenant) // fence its writes with run.Fence, as any handler
	})

	schedules := sched.Schedules()
	sc, err := schedules.Create(ctx, "report-tenant-7", cronfence.ScheduleSettings{
		Spec: "0 6 * * *", TimeZone: "Europe/Lisbon", Kind: "send-report", Args: json.RawMessage(`{"tenant":7}`),
	}, "alice")
	if err != nil {
		return err
	}
	weekdays := sc.ScheduleSettings
	weekdays.Spec = "30 6 * * 1-5"
	sc, err = schedules.Update(ctx, sc.Name, sc.Version, weekdays, "bob") // a stale sc.Version: ErrScheduleConflict
	if err != nil {
		return err
	}
	page, err := schedules.List(ctx, "", 100) // name order; the next page starts after the last name
	if err != nil {
		return err
	}
	changes, err := schedules.Audit(ctx, "", 0, 50) // newest first, every schedule's
	if err != nil {
		return err
	}
	fmt.Println(len(page), "schedules,", len(changes), "changes")
	_, err = schedules.Delete(ctx, sc.Name, sc.Version, "bob")
	return err
}

// TestTheSchedulesSnippetsAreTheExamples: the README's and
// docs/schedules.md's Go snippets are the code the examples run.
func TestTheSchedulesSnippetsAreTheExamples(t *testing.T) {
	example, err := os.ReadFile("schedules_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(example), "\n")
	for _, doc := range []struct{ file, heading string }{
		{"README.md", "### Schedules that change at runtime"},
		{"docs/schedules.md", "## In Go"},
	} {
		text, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		snippet, err := firstGoBlock(string(text), doc.heading)
		if err != nil {
			t.Fatal(err)
		}
		if err := containsIndented(lines, snippet); err != nil {
			t.Errorf("%s's snippet under %q is not schedules_test.go's code: %v", doc.file, doc.heading, err)
		}
	}
}
