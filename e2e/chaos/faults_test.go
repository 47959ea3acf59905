package chaos

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"
)

// faultKind names a fault. Every kind is drawn in each round of the
// schedule, in a seeded order, so even a short run injects all of them.
type faultKind string

const (
	faultKill      faultKind = "kill"      // SIGKILL of a lock holder, restarted after 1-3s
	faultFreeze    faultKind = "freeze"    // SIGSTOP of a replica's tree for TTL+1..3s, then SIGCONT
	faultPGRestart faultKind = "pgrestart" // pg_ctl restart of the cluster
	faultPartition faultKind = "partition" // the replica's proxy disabled for 4-7s
	faultLatency   faultKind = "latency"   // 200-700ms each way on the replica's proxy for 5-8s
	faultRolling   faultKind = "rolling"   // SIGTERM and restart of every replica, one by one
	faultOffset    faultKind = "offset"    // a replica restarted with its clock 1-3 minutes off
	faultPause     faultKind = "pause"     // a job paused through the API for 5-8s, then unset
	faultFailover  faultKind = "failover"  // the primary killed, its standby promoted, a new standby made (with harnessOpts.failover only)
)

var allFaults = []faultKind{faultKill, faultFreeze, faultPGRestart, faultPartition, faultLatency, faultRolling, faultOffset, faultPause}

// fault is one injected fault on the timeline. Replica is -1 when every
// replica is hit (the database restart) or, with Restarts, each in turn
// (the rolling restart).
type fault struct {
	Kind    faultKind
	Replica int
	Job     string // pause only
	Start   time.Time
	End     time.Time
	// Restarts are the replicas' stops and starts (kill, rolling, offset):
	// one per replica restarted, so the checker knows when each was down
	// and when each ran its start-up catch-up.
	Restarts []restart
	// Acked is when a pause was written (the API answered) and Lifting
	// when the request lifting it was sent: the job must start no slot due
	// in between.
	Acked   time.Time
	Lifting time.Time
	Note    string
}

// restart is one replica's stop and start inside a fault: signalled at
// Stop, launched at Launched, ready (its start-up, catch-up included, done)
// at Ready.
type restart struct {
	Replica               int
	Stop, Launched, Ready time.Time
}

func (f fault) String() string {
	who := "all"
	switch {
	case f.Kind == faultPause:
		who = "api"
	case f.Replica >= 0:
		who = fmt.Sprintf("r%d", f.Replica)
	case len(f.Restarts) > 1:
		who = "each"
	}
	s := fmt.Sprintf("%-9s %-3s %s +%.1fs", f.Kind, who, f.Start.Format("15:04:05.000"), f.End.Sub(f.Start).Seconds())
	if f.Job != "" {
		s += " job=" + f.Job
	}
	if f.Note != "" {
		s += " " + f.Note
	}
	return s
}

// chaos injects faults, one at a time, until the duration has passed.
type chaos struct {
	h     *harness
	rng   *rand.Rand
	kinds []faultKind // restrict the draw (the broken-build test freezes only)
	// aimAlways makes every freeze aim at an open transaction of "slow",
	// and freezeFor is how long past the lease TTL a freeze lasts.
	aimAlways            bool
	freezeMin, freezeMax time.Duration

	mu     sync.Mutex
	faults []fault
}

func newChaos(h *harness, seed uint64, kinds []faultKind) *chaos {
	if len(kinds) == 0 {
		kinds = allFaults
	}
	return &chaos{h: h, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), kinds: kinds,
		freezeMin: time.Second, freezeMax: 3 * time.Second}
}

func (c *chaos) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.rng.Int64N(int64(hi-lo)+1))
}

// run injects faults until d has passed and every kind was drawn, then
// returns the timeline. A fault
// that cannot be injected (a harness error, not a cronfence one) fails.
func (c *chaos) run(ctx context.Context, d time.Duration) ([]fault, error) {
	end := time.Now().Add(d)
	var round []faultKind
	// Past d, the first round is still finished: every kind is injected at
	// least once, however short the run.
	for drawn := 0; time.Now().Before(end) || drawn < len(c.kinds); drawn++ {
		if len(round) == 0 {
			round = append([]faultKind(nil), c.kinds...)
			c.rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		kind := round[0]
		round = round[1:]
		if err := sleepCtx(ctx, c.between(2*time.Second, 4*time.Second)); err != nil {
			return c.timeline(), err
		}
		f, err := c.inject(ctx, kind)
		if err != nil {
			return c.timeline(), fmt.Errorf("injecting %s: %w", kind, err)
		}
		c.mu.Lock()
		c.faults = append(c.faults, f)
		c.mu.Unlock()
		c.h.t.Logf("fault %s", f)
	}
	return c.timeline(), nil
}

func (c *chaos) timeline() []fault {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]fault(nil), c.faults...)
}

func (c *chaos) inject(ctx context.Context, kind faultKind) (fault, error) {
	f := fault{Kind: kind, Replica: -1, Start: time.Now()}
	var err error
	switch kind {
	case faultKill:
		r, target := c.holderOrAny(ctx)
		f.Note = target
		f.Replica = c.index(r)
		f.Start = time.Now()
		err = c.restart(ctx, &f, r, r.kill, c.between(time.Second, 3*time.Second), 0)
	case faultFreeze:
		var r *replica
		r, f.Note = c.freezeTarget(ctx)
		f.Replica = c.index(r)
		f.Start = time.Now()
		if err = r.freeze(); err == nil {
			err = sleepCtx(ctx, leaseTTL+c.between(c.freezeMin, c.freezeMax))
			r.thaw()
		}
	case faultPGRestart:
		if c.h.mysql != nil {
			f.Note = "mariadbd"
			err = c.h.mysql.Restart()
			break
		}
		err = c.h.cluster.Restart()
	case faultPartition:
		r, target := c.holderOrAny(ctx)
		f.Note = target
		f.Replica = c.index(r)
		r.proxy.Stop()
		err = sleepCtx(ctx, c.between(4*time.Second, 7*time.Second))
		if serr := r.proxy.Start(); serr != nil && err == nil {
			err = serr
		}
	case faultLatency:
		r, target := c.holderOrAny(ctx)
		f.Replica = c.index(r)
		ms := c.between(200*time.Millisecond, 700*time.Millisecond).Milliseconds()
		f.Note = fmt.Sprintf("%dms %s", ms, target)
		err = c.latency(ctx, r, ms, c.between(5*time.Second, 8*time.Second))
	case faultRolling:
		for _, r := range c.h.replicas {
			if err = c.restart(ctx, &f, r, func() error { return r.term(15 * time.Second) }, 0, 0); err != nil {
				break
			}
		}
	case faultOffset:
		r := c.h.replicas[c.rng.IntN(len(c.h.replicas))]
		f.Replica = c.index(r)
		off := c.between(time.Minute, 3*time.Minute).Round(time.Second)
		if c.rng.IntN(2) == 0 {
			off = -off
		}
		f.Note = "clock " + off.String()
		err = c.restart(ctx, &f, r, func() error { return r.term(15 * time.Second) }, 0, off)
	case faultPause:
		f.Job = jobs[c.rng.IntN(len(jobs))].Name
		err = c.pause(ctx, &f)
	case faultFailover:
		err = c.h.failOver(ctx, &f)
	}
	if f.End.IsZero() {
		f.End = time.Now()
	}
	return f, err
}

// restart stops r with stop, waits, starts it with the clock offset and
// records the three instants in f.Restarts.
func (c *chaos) restart(ctx context.Context, f *fault, r *replica, stop func() error, wait, offset time.Duration) error {
	rs := restart{Replica: c.index(r), Stop: time.Now()}
	err := stop()
	if err == nil && wait > 0 {
		err = sleepCtx(ctx, wait)
	}
	if err == nil {
		rs.Launched = time.Now()
		err = r.start(offset)
		rs.Ready = time.Now()
	}
	if !rs.Ready.IsZero() {
		f.Restarts = append(f.Restarts, rs)
	}
	return err
}

func (c *chaos) latency(ctx context.Context, r *replica, ms int64, d time.Duration) error {
	for _, stream := range []string{"upstream", "downstream"} {
		body := fmt.Sprintf(`{"name":"lat_%s","type":"latency","stream":%q,"attributes":{"latency":%d,"jitter":%d}}`, stream, stream, ms, ms/4)
		if _, err := r.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			return err
		}
	}
	err := sleepCtx(ctx, d)
	// Removing a toxic waits for the links it slows to drain.
	rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, stream := range []string{"upstream", "downstream"} {
		if rerr := r.proxy.Toxics.RemoveToxic(rctx, "lat_"+stream); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// pause pauses f.Job through a running replica's API, holds, and unsets the
// override. A replica may be mid-restart: the next one is tried.
func (c *chaos) pause(ctx context.Context, f *fault) error {
	off := false
	if err := c.viaAPI(ctx, f.Job, &off); err != nil {
		return err
	}
	f.Acked = time.Now()
	if err := sleepCtx(ctx, c.between(5*time.Second, 8*time.Second)); err != nil {
		return err
	}
	f.Lifting = time.Now()
	return c.viaAPI(ctx, f.Job, nil)
}

func (c *chaos) viaAPI(ctx context.Context, job string, enabled *bool) error {
	var last error
	for range 3 {
		for _, r := range c.h.replicas {
			if _, ok := r.running(); !ok {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			last = r.setEnabled(rctx, job, enabled)
			cancel()
			if last == nil {
				return nil
			}
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("no replica's API took the override of %s: %w", job, last)
}

// holderOrAny is the running replica holding some job's live lease (or,
// under weakcron, its guard's lock), so the fault hits a run in flight; any
// running replica when none holds one.
func (c *chaos) holderOrAny(ctx context.Context) (*replica, string) {
	holders := c.holders(ctx)
	if len(holders) > 0 {
		return holders[c.rng.IntN(len(holders))], "lock holder"
	}
	return c.h.replicas[c.rng.IntN(len(c.h.replicas))], "no lock holder"
}

func (c *chaos) holders(ctx context.Context) []*replica {
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	pids, _ := c.h.holderPids(qctx)
	var out []*replica
	for _, pid := range pids {
		if r := c.h.byPid(pid); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// freezeTarget picks the replica to freeze. Half the time it waits for the
// next start of "slow" and aims at its open transaction (start + work +
// a little): a writer paused between its fence and its commit, the case
// fencing exists for. Otherwise a lease holder.
func (c *chaos) freezeTarget(ctx context.Context) (*replica, string) {
	if c.aimAlways || c.rng.IntN(2) == 0 {
		if r, ok := c.awaitStart(ctx, "slow", 8*time.Second); ok {
			slow, _ := jobByName("slow")
			_ = sleepCtx(ctx, slow.Work+300*time.Millisecond)
			return r, "mid-transaction"
		}
	}
	return c.holderOrAny(ctx)
}

// awaitStart waits for a new "start JOB" line in any replica's log and
// returns that replica.
func (c *chaos) awaitStart(ctx context.Context, job string, within time.Duration) (*replica, bool) {
	sizes := make([]int64, len(c.h.replicas))
	for i, r := range c.h.replicas {
		if fi, err := os.Stat(r.log); err == nil {
			sizes[i] = fi.Size()
		}
	}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for i, r := range c.h.replicas {
			if _, ok := r.running(); ok && newStart(r.log, sizes[i], job) {
				return r, true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, false
}

func newStart(path string, from int64, job string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(from, 0); err != nil {
		return false
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "start "+job+" ") {
			return true
		}
	}
	return false
}

func (c *chaos) index(r *replica) int {
	for i, x := range c.h.replicas {
		if x == r {
			return i
		}
	}
	return -1
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
