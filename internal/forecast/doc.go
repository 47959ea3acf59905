// Package forecast tells what a job's schedule will do, without running it
// or reading a database: its next slots with their jittered starts and the
// exclusions that hold them (slots.go), what each change of its zone's UTC
// offset does to it (transitions.go, dst.go), and the settings that will
// surprise its operator (warnings.go). `cronfence next --explain` and
// `cronfence doctor` print it.
//
// Everything here is derived from the same functions the scheduler uses
// (schedule.Schedule's Next, schedule.Exclusions, jitter.Delay), never
// from a model of them, so a forecast cannot disagree with what runs: a
// daylight-saving effect is found by comparing the job's real slots around
// a change with the wall-clock times its spec names.
package forecast
