package chaos

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/test/chaos/invariant"
)

// outage is one dependency taken away (localregion.Region.Outage) for a while.
type outage struct {
	name, component string
	down            time.Duration // 0: brought back at once (a restart)
}

// outageOpTimeout bounds each operation of an outage test: a stuck one fails the test in
// minutes rather than the chaos run's ten.
const outageOpTimeout = 4 * time.Minute

// TestDependencyOutage takes one dependency at a time away while operations are in flight and
// new ones arrive, then brings it back. While it is away every new write must be accepted or
// refused with 503 and a Retry-After (never another 5xx); after it is back every operation
// must end Succeeded (within outageOpTimeout) with the region's truth matching (package
// invariant). The time from the recovery to the last operation's end is measured and printed
// (CONVERGENCE lines; the target is 30 s, docs/reliability.md records what was measured) but
// not asserted: timing is not a pass/fail matter on a busy machine.
func TestDependencyOutage(t *testing.T) {
	if deployed != nil {
		t.Skip("the region is a make deploy one (CHAOS_DEPLOY=1): the outages are the make run region's")
	}
	mc := region.Info.ManagementClusters[0].Name
	for _, o := range []outage{
		{"broker_down_60s", "mosquitto", 60 * time.Second},
		{"postgres_restarted", "postgres", 0},
		{"management_kube_apiserver_down_60s", mc + "-kube-apiserver", 60 * time.Second},
		{"maestro_server_down_60s", "maestro-server", 60 * time.Second},
		{"agent_restarted_with_empty_work_store", "maestro-agent-" + mc, 0},
	} {
		t.Run(o.name, func(t *testing.T) {
			// make test runs only the outages whose invariants hold; those that can fail on a
			// defect found and not yet fixed run with CHAOS_KNOWN_DEFECTS=1 (make chaos-outages),
			// so make test does not fail at random while the defect stays visible.
			if why, known := knownDefect[o.name]; known && !knownDefects() {
				t.Skip("CHAOS_KNOWN_DEFECTS=1 (make chaos-outages) runs it: " + why)
			}
			runOutage(t, o)
		})
	}
}

// knownDefect names, by outage, the outages that can fail on a defect found and not yet fixed, with it
// (docs/reliability.md, "Defects found").
// None today: the PostgreSQL outage joined make test after three passing runs once the stores
// stopped handing out connections a restart killed (defect 7).
var knownDefect = map[string]string{}

// knownDefects says whether the outages of knownDefect run too: CHAOS_KNOWN_DEFECTS=1.
func knownDefects() bool { return os.Getenv("CHAOS_KNOWN_DEFECTS") == "1" }

func runOutage(t *testing.T, o outage) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	w, err := newWorkload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.opTimeout = outageOpTimeout
	var wg sync.WaitGroup
	unit := 0
	startUnit := func(withPool bool) {
		unit++
		i := unit
		wg.Add(1)
		go func() { defer wg.Done(); w.unit(ctx, i, withPool) }()
	}
	// Operations in flight when the dependency goes.
	for i := range 3 {
		startUnit(i == 0)
	}
	eventuallyInFlight(ctx, t, w, 3)
	before := len(w.arm.writesSnapshot())
	// The dependency is away from the moment it is taken, not once Outage returns: a read
	// answered 503 while PostgreSQL was being killed came 16 ms before a window that began after
	// the kill, and was counted as a 5xx outside the outage.
	wentAt := time.Now()
	restore, err := region.Outage(o.component)
	if err != nil {
		t.Fatal(err)
	}
	// New operations arrive while it is away.
	for time.Since(wentAt) < o.down {
		startUnit(false)
		sleep(ctx, 10*time.Second)
	}
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Minute)
	err = restore(rctx)
	rcancel()
	if err != nil {
		t.Fatalf("bring %s back: %v", o.component, err)
	}
	recovered := time.Now()
	inFlight := w.inFlightNamed()
	startUnit(false) // and one after
	wg.Wait()
	last, _ := w.endedAll(slices.Collect(maps.Keys(inFlight)))
	converged := max(0, last.Sub(recovered))
	printTimeline(o.name, wentAt, recovered, inFlight, w)

	// Every write answered while the dependency was away (and the 90 s of retries after).
	for _, a := range w.arm.writesSnapshot()[before:] {
		switch {
		case a.Status == http.StatusServiceUnavailable && a.Header.Get("Retry-After") == "":
			t.Errorf("a write at %s answered 503 without Retry-After: %.300s", a.At.Format("15:04:05"), a.Raw)
		case a.Status >= 500 && a.Status != http.StatusServiceUnavailable:
			t.Errorf("a write at %s answered %d (want 201/202 or 503 + Retry-After): %.300s", a.At.Format("15:04:05"), a.Status, a.Raw)
		case a.Status == 0:
			t.Errorf("a write at %s got no answer: %v", a.At.Format("15:04:05"), a.Err)
		}
	}
	final := w.finalTruth(ctx, 2*time.Minute)
	w.mu.Lock()
	state := invariant.State{Ops: w.ops, Final: final, Down: []invariant.Window{{Component: o.component, From: wentAt, To: recovered}}}
	w.mu.Unlock()
	state.BadReads = w.arm.badReadsSnapshot()
	res := invariant.Check(state)
	t.Logf("outage %s: %s away %s; %d operations; in-flight operations ended %s after its recovery; orphaned AppliedManifestWorks swept in the region so far: %d\n%s",
		o.name, o.component, recovered.Sub(wentAt).Round(100*time.Millisecond), len(state.Ops), converged.Round(100*time.Millisecond), region.OrphanedAppliedWorksSwept(), res.Table())
	fmt.Printf("CONVERGENCE %s %s\n", o.name, converged.Round(100*time.Millisecond))
	if !res.OK() {
		t.Errorf("%d invariant violations after the outage of %s (logs in %s)", len(res.Violations), o.component, logDir)
	}
}

// printTimeline prints, for the operations in flight at the recovery (by number, with what
// each is), when each ended after the recovery, in order: the data of an outage's timeline
// (docs/reliability.md), beside the region's logs that CHAOS_KEEP_LOGS=1 keeps.
func printTimeline(name string, wentAt, recovered time.Time, inFlight map[int]string, w *workload) {
	type line struct {
		what  string
		ended time.Duration
	}
	var lines []line
	w.mu.Lock()
	for n, what := range inFlight {
		lines = append(lines, line{what, w.ended[n].Sub(recovered)})
	}
	w.mu.Unlock()
	sort.Slice(lines, func(i, j int) bool { return lines[i].ended < lines[j].ended })
	fmt.Printf("TIMELINE %s away %s..%s (%s)\n", name, wentAt.UTC().Format("15:04:05.0"), recovered.UTC().Format("15:04:05.0"), recovered.Sub(wentAt).Round(100*time.Millisecond))
	for _, l := range lines {
		fmt.Printf("TIMELINE %s %s ended %+.1fs after the recovery\n", name, l.what, l.ended.Seconds())
	}
}

// eventuallyInFlight waits until n operations are in flight.
func eventuallyInFlight(ctx context.Context, t *testing.T, w *workload, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for len(w.inFlightNow()) < n {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%d operations in flight after 2m, want %d", len(w.inFlightNow()), n)
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func (c *armClient) writesSnapshot() []answer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]answer(nil), c.writes...)
}

func (c *armClient) badReadsSnapshot() []invariant.Read {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]invariant.Read(nil), c.badReads...)
}
