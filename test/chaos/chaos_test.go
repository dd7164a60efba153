package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/test/chaos/invariant"
)

// size is a chaos run's workload and kill rate.
type size struct {
	units, concurrency, poolEvery int
	// minKills is how many kills the run makes at least, the workload done or not.
	minKills int
	// gap is the pause between one component's convergence and the next kill, at random in
	// [gap, 2*gap).
	gap time.Duration
}

// sizes: "short" runs in make test (a few minutes); "full" is make chaos (CHAOS_SIZE=full); a
// make deploy region (make chaos DEPLOY=1) has its own default. CHAOS_UNITS overrides the
// number of units, CHAOS_KILLS the least number of kills; CHAOS_MUST names components each
// killed at least once (mustKill; each must be one the loop may kill).
func chaosSize(t *testing.T) size {
	s := size{units: 12, concurrency: 4, poolEvery: 3, minKills: 4, gap: 5 * time.Second}
	switch {
	case os.Getenv("CHAOS_SIZE") == "full":
		s = size{units: 500, concurrency: 16, poolEvery: 5, minKills: 40, gap: 10 * time.Second}
	case deployed != nil:
		// A make deploy region: 8 min of workload and kills here (docs/reliability.md), after a
		// bring-up of 4-9 min; every kind of kill on every component at least once
		// (TestChaosDeployed) while the workload runs.
		s = size{units: 70, concurrency: 6, poolEvery: 3, minKills: 20, gap: 5 * time.Second}
	}
	if v := os.Getenv("CHAOS_UNITS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CHAOS_UNITS=%q: want a positive number", v)
		}
		s.units = n
	}
	if v := os.Getenv("CHAOS_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CHAOS_KILLS=%q: want a positive number", v)
		}
		s.minKills = n
	}
	return s
}

// chaosLoop crashes one component at a time at random moments while the workload runs, waits
// until it runs again (the launcher's supervisor restarts all but PostgreSQL, which the loop
// restarts after a random pause), and measures how long the operations that were in flight
// at the kill took to end.
type chaosLoop struct {
	w          *workload
	rng        *rand.Rand
	target     target
	components []string
	// must are killed at least once each, first (in random order, while the workload runs),
	// and the loop does not stop before.
	must []string

	mu    sync.Mutex
	kills []invariant.Kill
	down  []invariant.Window
}

func (c *chaosLoop) killOne(ctx context.Context, name string) invariant.Kill {
	k := invariant.Kill{Component: name, At: time.Now()}
	inFlight := c.w.inFlightNow()
	victim, err := c.target.kill(ctx, name)
	k.PID = victim.pid
	if err != nil {
		k.Err = err.Error()
		return k
	}
	if name == "postgres" {
		// Not supervised: it stays down for a random pause, as a failover would take.
		sleep(ctx, time.Duration(1+c.rng.IntN(5))*time.Second)
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	err = c.target.recover(rctx, name, victim)
	cancel()
	recovered := time.Now()
	k.Recovered = recovered.Sub(k.At)
	c.mu.Lock()
	c.down = append(c.down, invariant.Window{Component: c.target.downs(name), From: k.At, To: recovered})
	c.mu.Unlock()
	if err != nil {
		k.Err = err.Error()
		return k
	}
	deadline := time.Now().Add(c.w.opTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if last, ok := c.w.endedAll(inFlight); ok {
			k.Converged = max(0, last.Sub(recovered))
			return k
		}
		sleep(ctx, 200*time.Millisecond)
	}
	k.Err = fmt.Sprintf("operations in flight at the kill not all ended within %s", c.w.opTimeout)
	return k
}

// missing are the components of must not killed yet; c.mu is held.
func (c *chaosLoop) missing() []string {
	var out []string
	for _, m := range c.must {
		if !slices.ContainsFunc(c.kills, func(k invariant.Kill) bool { return k.Component == m }) {
			out = append(out, m)
		}
	}
	return out
}

// run kills until ctx ends, or until stop is closed once at least minKills were made and every
// one of must was killed.
func (c *chaosLoop) run(ctx context.Context, gap time.Duration, minKills int, stop <-chan struct{}) {
	for ctx.Err() == nil {
		c.mu.Lock()
		n := len(c.kills)
		missing := c.missing()
		c.mu.Unlock()
		if n >= minKills && len(missing) == 0 {
			select {
			case <-stop:
				return
			default:
			}
		}
		sleep(ctx, gap+time.Duration(c.rng.Int64N(int64(gap))))
		name := c.components[c.rng.IntN(len(c.components))]
		if len(missing) > 0 {
			name = missing[c.rng.IntN(len(missing))]
		}
		k := c.killOne(ctx, name)
		fmt.Fprintf(os.Stderr, "chaos: killed %s (pid %d) at %s: running again after %s, in-flight operations ended %s after that %s\n",
			k.Component, k.PID, k.At.Format("15:04:05"), k.Recovered.Round(100*time.Millisecond), k.Converged.Round(100*time.Millisecond), k.Err)
		c.mu.Lock()
		c.kills = append(c.kills, k)
		c.mu.Unlock()
	}
}

// postgresChaos says whether PostgreSQL is crashed too: CHAOS_POSTGRES=1, which make chaos
// sets. make test leaves it out while the pinned Maestro can lose a work or a status when its
// database restarts (docs/reliability.md, "Defects found" 2), which would fail make test at
// random; the outage test says so when it skips.
func postgresChaos() bool { return os.Getenv("CHAOS_POSTGRES") == "1" }

// TestChaos runs the mixed workload (cluster creates and deletes, node-pool creates, scales
// and deletes) while one component at a time is SIGKILLed at random moments, then checks every
// invariant (package invariant) and prints its tables. The short size runs in make test; make
// chaos runs the full one (CHAOS_SIZE=full). The seed is printed; CHAOS_SEED replays it.
func TestChaos(t *testing.T) {
	if deployed != nil {
		t.Skip("the region is a make deploy one (CHAOS_DEPLOY=1): TestChaosDeployed runs against it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	if _, err := region.StartBackend(ctx, "backend-2"); err != nil {
		t.Fatalf("start a second backend replica: %v", err)
	}
	want := []string{"frontend", "backend", "backend-2", "cluster-service", "maestro-server", "mosquitto"}
	if postgresChaos() {
		want = append(want, "postgres")
	}
	runChaos(ctx, t, processes{postgres: postgresChaos()}, want, mustKill()...)
}

// mustKill are the components CHAOS_MUST names (comma-separated), each killed at least once.
func mustKill() []string {
	var out []string
	for _, c := range strings.Split(os.Getenv("CHAOS_MUST"), ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// runChaos runs the workload of chaosSize while a chaos loop kills tgt's components (want
// must be among them; each of must is killed at least once), then checks every invariant and
// prints the tables.
func runChaos(ctx context.Context, t *testing.T, tgt target, want []string, must ...string) {
	sz := chaosSize(t)
	w, err := newWorkload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// CHAOS_OP_TIMEOUT bounds each operation (default opTimeout, 10 min).
	if v := os.Getenv("CHAOS_OP_TIMEOUT"); v != "" {
		if w.opTimeout, err = time.ParseDuration(v); err != nil || w.opTimeout <= 0 {
			t.Fatalf("CHAOS_OP_TIMEOUT=%q: want a positive duration", v)
		}
	}
	r := rng(t)
	components := tgt.components()
	for _, want := range append(slices.Clone(want), must...) {
		if !slices.Contains(components, want) {
			t.Fatalf("the region offers no component %q to kill (has %v)", want, components)
		}
	}
	loop := &chaosLoop{w: w, rng: rand.New(rand.NewPCG(r.Uint64(), r.Uint64())), target: tgt, components: components, must: must}
	start := time.Now()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { loop.run(ctx, sz.gap, sz.minKills, stop); close(done) }()
	listed := make(chan int)
	go func() { listed <- w.listUntil(ctx, done) }()
	w.run(ctx, sz.units, sz.concurrency, sz.poolEvery, r)
	close(stop)
	<-done
	lists := <-listed
	elapsed := time.Since(start)

	final := w.finalTruth(ctx, 2*time.Minute)
	w.mu.Lock()
	state := invariant.State{Ops: w.ops, Final: final, Down: loop.down}
	w.mu.Unlock()
	w.arm.mu.Lock()
	state.BadReads = w.arm.badReads
	w.arm.mu.Unlock()
	res := invariant.Check(state)
	creates, deletes, poolOps := 0, 0, 0
	for _, op := range state.Ops {
		switch op.Kind {
		case invariant.CreateCluster:
			creates++
		case invariant.DeleteCluster:
			deletes++
		default:
			poolOps++
		}
	}
	restarts, err := tgt.restarts(ctx)
	if err != nil {
		t.Errorf("restarts: %v", err)
	}
	t.Logf("chaos run, seed %d: %d units in %s; %d cluster creates, %d cluster deletes, %d node-pool operations; %d ARM lists; %d kills\n\n%s\n%s",
		seed, sz.units, elapsed.Round(time.Second), creates, deletes, poolOps, lists, len(loop.kills),
		res.Table(), invariant.KillTable(loop.kills, restarts))
	for _, k := range loop.kills {
		if k.Err != "" {
			t.Errorf("kill of %s at %s: %s", k.Component, k.At.Format("15:04:05"), k.Err)
		}
	}
	if !res.OK() {
		t.Errorf("%d invariant violations (seed %d; logs in %s)", len(res.Violations), seed, logDir)
	}
}

// listUntil lists the subscription's clusters every 2 s, as a portal would, until done is
// closed; answers that are 5xx or missing are recorded as bad reads. It returns how many lists
// it made.
func (w *workload) listUntil(ctx context.Context, done <-chan struct{}) int {
	n := 0
	for {
		select {
		case <-done:
			return n
		case <-ctx.Done():
			return n
		case <-time.After(2 * time.Second):
		}
		w.arm.get(ctx, "/subscriptions/"+w.sub+"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version="+clusterAPIVersion)
		n++
	}
}
