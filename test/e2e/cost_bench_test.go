package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/test/internal/benchreport"
	"github.com/openhcp/openhcp/test/internal/procstat"
)

// BenchmarkCost measures what each ARM operation costs in CPU, per process and in total, from
// the kernel's accounting (/proc/<pid>/stat utime + stime), over a running region: GET, list of
// 100, PUT create, PATCH and DELETE as their request paths, a whole create and a whole delete
// with all the asynchronous work they cause, and bare Maestro's cost per work (the same
// ManifestWork sent with Maestro's own client, no OpenHCP in the path), all in one run.
//
// How each figure is taken:
//   - Before the operations, the region idles for COST_IDLE (default 20 s) with this benchmark's
//     own completion poller running; each process's idle CPU rate is subtracted from every phase,
//     so resync loops, leases and scrapes are not charged to the operations.
//   - A request path (PUT, PATCH, DELETE): the asynchronous side is paused for the phase (SIGSTOP
//     of both backend replicas, the Maestro server(s) and every process of the management
//     clusters), so what the frontend, Cluster Service and their PostgreSQL backends use in it is
//     the synchronous request plus whatever Cluster Service's workers do before they wait on the
//     stopped Maestro server. Everything is resumed after the phase and the operations finish.
//   - A whole create or delete: nothing paused; from the first request until every operation is
//     terminal in the document store and the region's CPU has settled (COST_SETTLE, default 5 s),
//     every process of the region.
//   - Bare Maestro: the same ManifestWorks Cluster Service builds (manifests.Build), sent with
//     grpcsource, from the first send until every HostedCluster exists on a management cluster
//     and the region has settled the same COST_SETTLE.
//
// PostgreSQL's backends are charged to the login they serve (frontend, backend, clusterservice,
// maestro, ...); a backend that exits in between moves its time to the postmaster's reaped
// children ("postgres (reaped)"). The service side is the frontend, Cluster Service, the backend
// and their PostgreSQL logins. Each figure is printed against the base's, measured in the same
// run: make bench-cost first runs this benchmark on a region whose frontend, backend and Cluster
// Service are the base commit's (COST_BASE, built by localregion.BuildRelease; the region's
// other programs are this tree's), then on the tree's own, and the second run reads the first's
// JSON (COST_BASE_RUN). It is also set against the previous run's (docs/perf-data/cost.json,
// read before it is replaced) and the first baseline (docs/perf-data/cost-baseline.json), only
// when those ran on the same machine (benchreport.Machine: CPUs and their model, memory, Go):
// a figure from another machine measures the machine as much as the code.
//
// Knobs: COST_OPS (GETs, lists; default 300, or 60 with -short), COST_CREATES (creates, PATCHes,
// deletes; default 100 so that the list returns 100, or 20 with -short), COST_BARE (bare works,
// default 50, or 10 with -short), COST_READS_ONLY (set: stop after the list, for work on GET and
// list), COST_IDLE, COST_SETTLE, COST_BASE_RUN, BENCH_OUT, BENCH_PPROF_DIR (CPU profiles
// of the GET, PUT, list and whole-create phases, COST_PPROF_SECONDS each; costProfile).
// Run: make bench-cost (a region without hosted kube-apiservers: OPENHCP_E2E_HOSTED_APISERVERS=-1).
func BenchmarkCost(b *testing.B) {
	needsOwnRegion(b, "measures the region it starts")
	ops, creates, bareN := envInt(b, "COST_OPS", 300), envInt(b, "COST_CREATES", 100), envInt(b, "COST_BARE", 50)
	if testing.Short() {
		ops, creates, bareN = envInt(b, "COST_OPS", 60), envInt(b, "COST_CREATES", 20), envInt(b, "COST_BARE", 10)
	}
	idleFor, settle := envSeconds(b, "COST_IDLE", 20), envSeconds(b, "COST_SETTLE", 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	c := loadClient(b)
	sub, rg := uuid.NewString(), "rg-cost"
	registerSubscriptionB(b, sub)
	body, err := json.Marshal(clusterBody(sub, rg))
	if err != nil {
		b.Fatal(err)
	}
	done := newOperationPoller(ctx, b)
	hcs := newHostedClusterTimes()
	watchHostedClusters(ctx, b, hcs.observe)
	bare := newBareMaestro(ctx, b)

	// Warm-up, not measured: one cluster through the whole path (connections, caches, the
	// template of the bare works), then one bare work.
	warm := clusterPath(sub, rg, "cost-warm")
	if err := armDo(c, http.MethodPut, warm, body, http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	done.wait(b, armdoc.OperationCreate, []string{warm}, 5*time.Minute)
	spec := storedSpec(ctx, b, sub)
	if err := bare.create(ctx, sub, "cost-warm-bare", spec); err != nil {
		b.Fatal(err)
	}
	hcs.wait(b, []string{"cost-warm-bare"}, 5*time.Minute)
	b.Log(waitQuiet(2 * time.Minute))

	cmd := fmt.Sprintf("make bench-cost (COST_OPS=%d COST_CREATES=%d COST_BARE=%d)", ops, creates, bareN)
	run := costRun{Header: benchreport.NewHeader("cost", "CPU per operation, per process (ms), idle rate subtracted", cmd),
		Chart: "bars", YUnit: "ms of CPU per operation", Services: servicesRun(ctx, b)}

	idleStart := takeCPU()
	time.Sleep(idleFor)
	idle := takeCPU().rate(idleStart)
	run.Notes = append(run.Notes, fmt.Sprintf("idle over %s: %s", idleFor, idle.String()))

	names := make([]string, creates)
	paths := make([]string, creates)
	for i := range names {
		names[i] = fmt.Sprintf("cost-%03d", i)
		paths[i] = clusterPath(sub, rg, names[i])
	}
	sequential := func(n int, f func(i int) error) error {
		for i := 0; i < n; i++ {
			if err := f(i); err != nil {
				return fmt.Errorf("operation %d: %w", i, err)
			}
		}
		return nil
	}

	// GET of one cluster on a kept-alive connection.
	prof := costProfile(b, "cost-get")
	run.add(b, measureCost("GET", ops, idle, func() error {
		return sequential(ops, func(int) error { return armDo(c, http.MethodGet, warm, nil, http.StatusOK) })
	}))

	// PUT create, the request path, with the asynchronous side paused; then the rest of those
	// creates run, unmeasured.
	prof()
	paused, resume := pauseAsync(b)
	prof = costProfile(b, "cost-put")
	phase := measureCostPaused("PUT create (request path)", creates, idle, paused, func() error {
		return sequential(creates, func(i int) error { return armDo(c, http.MethodPut, paths[i], body, http.StatusCreated) })
	})
	resume()
	prof()
	run.add(b, phase)
	done.wait(b, armdoc.OperationCreate, paths, 10*time.Minute)

	// List of the resource group: the creates above and the warm cluster, once their
	// asynchronous work has settled.
	b.Log(waitQuiet(2 * time.Minute))
	listPath := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", sub, rg)
	prof = costProfile(b, "cost-list")
	run.add(b, measureCost(fmt.Sprintf("list of %d", creates+1), ops/3+1, idle, func() error {
		return sequential(ops/3+1, func(int) error { return armDo(c, http.MethodGet, listPath, nil, http.StatusOK) })
	}))
	prof()
	if os.Getenv("COST_READS_ONLY") != "" {
		run.compare(b)
		run.write(b)
		return
	}

	// PATCH (a property Cluster Service holds), the request path, asynchronous side paused.
	b.Log(waitQuiet(2 * time.Minute))
	patch := []byte(`{"properties":{"nodeDrainTimeoutMinutes":30}}`)
	paused, resume = pauseAsync(b)
	phase = measureCostPaused("PATCH (request path)", creates, idle, paused, func() error {
		return sequential(creates, func(i int) error {
			return armDo(c, http.MethodPatch, paths[i], patch, http.StatusOK, http.StatusAccepted)
		})
	})
	resume()
	run.add(b, phase)
	done.wait(b, armdoc.OperationUpdate, paths, 10*time.Minute)
	b.Log(waitQuiet(2 * time.Minute))

	// DELETE, the request path, asynchronous side paused; the deletes finish unmeasured.
	paused, resume = pauseAsync(b)
	phase = measureCostPaused("DELETE (request path)", creates, idle, paused, func() error {
		return sequential(creates, func(i int) error { return armDo(c, http.MethodDelete, paths[i], nil, http.StatusAccepted) })
	})
	resume()
	run.add(b, phase)
	done.wait(b, armdoc.OperationDelete, paths, 10*time.Minute)
	b.Log(waitQuiet(2 * time.Minute))

	// Whole create and whole delete, nothing paused, every process of the region.
	whole := make([]string, creates)
	for i := range whole {
		whole[i] = clusterPath(sub, rg, fmt.Sprintf("cost-w%03d", i))
	}
	prof = costProfile(b, "cost-whole-create")
	run.add(b, measureCost("whole create", creates, idle, func() error {
		if err := sequential(creates, func(i int) error { return armDo(c, http.MethodPut, whole[i], body, http.StatusCreated) }); err != nil {
			return err
		}
		done.wait(b, armdoc.OperationCreate, whole, 10*time.Minute)
		time.Sleep(settle)
		return nil
	}))
	prof()
	run.add(b, measureCost("whole delete", creates, idle, func() error {
		if err := sequential(creates, func(i int) error { return armDo(c, http.MethodDelete, whole[i], nil, http.StatusAccepted) }); err != nil {
			return err
		}
		done.wait(b, armdoc.OperationDelete, whole, 10*time.Minute)
		time.Sleep(settle)
		return nil
	}))
	b.Log(waitQuiet(2 * time.Minute))

	// Bare Maestro's cost per work, in the same run.
	bareNames := make([]string, bareN)
	for i := range bareNames {
		bareNames[i] = fmt.Sprintf("cost-bare-%03d", i)
	}
	run.add(b, measureCost("bare Maestro work (whole)", bareN, idle, func() error {
		if err := sequential(bareN, func(i int) error { return bare.create(ctx, sub, bareNames[i], spec) }); err != nil {
			return err
		}
		hcs.wait(b, bareNames, 10*time.Minute)
		time.Sleep(settle)
		return nil
	}))
	bare.deleteAll(ctx, b, append(bareNames, "cost-warm-bare"))
	if err := armDo(c, http.MethodDelete, warm, nil, http.StatusAccepted); err != nil {
		b.Logf("delete the warm cluster: %v", err)
	}
	run.compare(b)
	run.write(b)
}

// costProfile, when BENCH_PPROF_DIR is set, takes CPU profiles of the services for the first
// COST_PPROF_SECONDS (default 15) of a phase (profileServices); the returned function waits
// for them. The profile requests themselves cost the services a little CPU in that phase.
func costProfile(b *testing.B, label string) (wait func()) {
	return profileServices(b, label, envSeconds(b, "COST_PPROF_SECONDS", 15), 0)
}

// cpuSample is the CPU time each program of the region had used at one moment.
type cpuSample struct {
	at  time.Time
	cpu map[string]time.Duration
}

// takeCPU reads every process of the region (regionCPU's naming) and PostgreSQL's backends, each
// charged to its login ("postgres/<login>"), the postmaster with its reaped children apart.
func takeCPU() cpuSample {
	rp, _ := readRegionProcs() // unreadable: nothing used; no postmaster: PostgreSQL reads as no CPU used
	s := cpuSample{at: time.Now(), cpu: rp.programCPU()}
	for _, p := range rp.procs {
		switch rp.role(p) {
		case postmaster:
			s.cpu["postgres (reaped)"] += p.Own + p.Children
		case pgBackend:
			s.cpu[postgresLogin(p)] += p.Own
		}
	}
	return s
}

// postgresLogin names a PostgreSQL backend by the login it serves: its title is
// "postgres: <login> <database> <client> <state>", the client "host(port)" over TCP and
// "[local]" over a unix socket (make run's layout since 2026-11-29: until this read it, every
// backend's time was charged to "postgres (auxiliary)", off the service side); auxiliary
// processes (checkpointer, WAL writer, ...) are "postgres (auxiliary)".
func postgresLogin(p procstat.Proc) string {
	title := strings.Join(p.Args, " ")
	f := strings.Fields(strings.TrimPrefix(title, "postgres:"))
	if len(f) >= 3 && (strings.Contains(f[2], "(") || f[2] == "[local]") {
		return "postgres/" + f[0]
	}
	return "postgres (auxiliary)"
}

// rate is what each program used per second from before to s.
func (s cpuSample) rate(before cpuSample) cpuRate {
	secs := s.at.Sub(before.at).Seconds()
	out := cpuRate{}
	for name, v := range s.cpu {
		out[name] = float64(v-before.cpu[name]) / float64(time.Millisecond) / secs
	}
	return out
}

// cpuRate is ms of CPU per second, by program.
type cpuRate map[string]float64

func (r cpuRate) String() string {
	names := make([]string, 0, len(r))
	total := 0.0
	for n, v := range r {
		names = append(names, n)
		total += v
	}
	sort.Slice(names, func(i, j int) bool { return r[names[i]] > r[names[j]] })
	parts := []string{fmt.Sprintf("%.1f ms/s in all", total)}
	for _, n := range names {
		if r[n] >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.1f", n, r[n]))
		}
	}
	return strings.Join(parts, ", ")
}

// serviceSide are the programs whose cost the service's targets bound: the frontend, Cluster
// Service, the backend, and their PostgreSQL logins.
var serviceSide = map[string]bool{"frontend": true, "cluster-service": true, "backend": true,
	"postgres/frontend": true, "postgres/backend": true, "postgres/clusterservice": true}

// costPhase is one measured operation.
type costPhase struct {
	Series string  `json:"series"`
	N      int     `json:"n"`
	Secs   float64 `json:"seconds"`
	// PerOpMs is each program's CPU per operation, idle rate subtracted (may be slightly negative
	// for a program that happened to idle below its rate).
	PerOpMs map[string]float64 `json:"perOpMs"`
	// ServiceMs and RegionMs are the sums over the service side and over every program.
	ServiceMs float64 `json:"serviceMs"`
	RegionMs  float64 `json:"regionMs"`
	// Value is what the chart draws: the service side's, or the region's for whole operations.
	Value float64 `json:"value"`
	// VsPrevious and VsBaseline are ServiceMs (RegionMs for whole operations) as ratios of the
	// previous run's and the first baseline's; 0 where there is none.
	VsPrevious float64 `json:"vsPrevious,omitempty"`
	VsBaseline float64 `json:"vsBaseline,omitempty"`
	// BaseValue and VsBase are the base run's Value for the same phase and this Value as a ratio
	// of it (costRun.Base); 0 without a base run.
	BaseValue float64 `json:"baseValue,omitempty"`
	VsBase    float64 `json:"vsBase,omitempty"`
	Err       string  `json:"error,omitempty"`
}

// whole reports whether the phase is judged on the whole region rather than the service side.
func (p costPhase) whole() bool {
	return strings.Contains(p.Series, "whole")
}

// measureCost runs f (n operations) and charges the CPU every program used in it, less its idle
// rate, to the operations.
func measureCost(series string, n int, idle cpuRate, f func() error) costPhase {
	return measureCostPaused(series, n, idle, nil, f)
}

// measureCostPaused is measureCost while the programs in paused are stopped: their idle rate is
// not subtracted, since they used nothing.
func measureCostPaused(series string, n int, idle cpuRate, paused map[string]bool, f func() error) costPhase {
	before := takeCPU()
	err := f()
	after := takeCPU()
	secs := after.at.Sub(before.at).Seconds()
	p := costPhase{Series: series, N: n, Secs: secs, PerOpMs: map[string]float64{}}
	if err != nil {
		p.Err = err.Error()
	}
	for name, v := range after.cpu {
		used := float64(v-before.cpu[name]) / float64(time.Millisecond)
		if !paused[name] {
			used -= idle[name] * secs
		}
		per := used / float64(n)
		if per > -0.005 && per < 0.005 {
			continue
		}
		p.PerOpMs[name] = per
		p.RegionMs += per
		if serviceSide[name] {
			p.ServiceMs += per
		}
	}
	p.Value = p.ServiceMs
	if p.whole() {
		p.Value = p.RegionMs
	}
	return p
}

// pauseAsync stops the asynchronous side of the region (SIGSTOP): both backend replicas, the
// Maestro server(s) and every process of the management clusters. The returned function
// continues them; call it within seconds. paused names the programs stopped (programName).
func pauseAsync(b *testing.B) (paused map[string]bool, resume func()) {
	procs, err := procstat.List()
	if err != nil {
		b.Fatalf("pause the asynchronous side: %v", err)
	}
	state := filepath.Dir(region.Info.LogDir)
	var stopped []int
	paused = map[string]bool{}
	for _, p := range procs {
		if p.PID == os.Getpid() || !p.Mentions(state) || p.Comm == "postgres" {
			continue
		}
		name := programName(p)
		async := name == "backend" || name == "maestro server"
		for _, d := range managementDirs() {
			async = async || p.Mentions(d)
		}
		if !async {
			continue
		}
		if err := syscall.Kill(p.PID, syscall.SIGSTOP); err == nil {
			stopped = append(stopped, p.PID)
			paused[name] = true
		}
	}
	return paused, func() {
		for _, pid := range stopped {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				b.Errorf("continue %d: %v", pid, err)
			}
		}
	}
}

// costRun is the JSON of one run (docs/perf-data/cost.json), in the shape benchplot reads.
type costRun struct {
	benchreport.Header
	Chart  string `json:"chart"`
	YUnit  string `json:"yUnit"`
	XLabel string `json:"xLabel,omitempty"`
	// Services is the commit whose frontend, backend and Cluster Service ran
	// (OPENHCP_E2E_SERVICES_AT, or this tree's HEAD, "+changes" when the tree differs from it).
	Services string `json:"services"`
	// Base is the run the ratios VsBase are against (COST_BASE_RUN): the base commit's services
	// measured just before, in the same make bench-cost.
	Base   *costBaseRun `json:"base,omitempty"`
	Points []costPhase  `json:"points"`
	Notes  []string     `json:"notes,omitempty"`
}

// costBaseRun is what a run keeps of its base run: its header (when, where, under what load)
// and which services ran.
type costBaseRun struct {
	benchreport.Header
	Services string `json:"services"`
}

func (r *costRun) add(b *testing.B, p costPhase) {
	if p.Err != "" {
		b.Errorf("%s: %s", p.Series, p.Err)
	}
	b.Logf("%s: %.2f ms service side, %.2f ms region, per operation (n %d, %.1f s)", p.Series, p.ServiceMs, p.RegionMs, p.N, p.Secs)
	r.Points = append(r.Points, p)
}

// costDir is where the run's JSON goes (benchreport.Dir).
func costDir(b *testing.B) string {
	dir, err := benchreport.Dir()
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// compare sets each phase's ratios against the base run (COST_BASE_RUN, the same make
// bench-cost), the previous run's cost.json and the first baseline's cost-baseline.json (written
// from this run when there is none). The previous run and the baseline count only when they ran
// on this machine.
func (r *costRun) compare(b *testing.B) {
	dir := costDir(b)
	read := func(path string) *costRun {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var prev costRun
		if json.Unmarshal(raw, &prev) != nil {
			return nil
		}
		return &prev
	}
	byKey := func(run *costRun) map[string]costPhase {
		out := map[string]costPhase{}
		if run != nil {
			for _, p := range run.Points {
				out[seriesKey(p.Series)] = p
			}
		}
		return out
	}
	sameMachine := func(name string, run *costRun) map[string]costPhase {
		if run == nil || run.Machine == r.Machine {
			return byKey(run)
		}
		r.Notes = append(r.Notes, fmt.Sprintf("no ratio to %s: it ran on another machine (%s; this run: %s)", name, run.Machine, r.Machine))
		return nil
	}
	var base map[string]costPhase
	if path := os.Getenv("COST_BASE_RUN"); path != "" {
		run := read(path)
		if run == nil {
			b.Fatalf("COST_BASE_RUN=%s: no run to compare with", path)
		}
		if run.Machine != r.Machine {
			b.Fatalf("COST_BASE_RUN=%s ran on %s, this run on %s", path, run.Machine, r.Machine)
		}
		r.Base = &costBaseRun{Header: run.Header, Services: run.Services}
		base = byKey(run)
	}
	prevRun, baselineRun := read(filepath.Join(dir, "cost.json")), read(filepath.Join(dir, "cost-baseline.json"))
	previous, baseline := sameMachine("the previous run", prevRun), sameMachine("the first baseline", baselineRun)
	for i := range r.Points {
		p := &r.Points[i]
		if q, ok := base[seriesKey(p.Series)]; ok && q.Value > 0 {
			p.BaseValue, p.VsBase = q.Value, p.Value/q.Value
		}
		if q, ok := previous[seriesKey(p.Series)]; ok && q.Value > 0 {
			p.VsPrevious = p.Value / q.Value
		}
		if q, ok := baseline[seriesKey(p.Series)]; ok && q.Value > 0 {
			p.VsBaseline = p.Value / q.Value
		}
	}
	if baselineRun == nil {
		r.Notes = append(r.Notes, "first run: written as the baseline (cost-baseline.json)")
		r.writeAs(b, "cost-baseline.json")
	}
}

// servicesRun is the commit whose services this run measures: OPENHCP_E2E_SERVICES_AT's, or the
// tree's HEAD ("+changes" when the working tree differs from it).
func servicesRun(ctx context.Context, b *testing.B) string {
	if at := os.Getenv("OPENHCP_E2E_SERVICES_AT"); at != "" {
		return at
	}
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	head, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		b.Fatalf("read the tree's commit: %v", err)
	}
	out := strings.TrimSpace(string(head))
	if changes, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(changes) > 0 {
		out += "+changes"
	}
	return out
}

// seriesKey is a phase's name without the list's size, so runs of other sizes compare.
func seriesKey(s string) string {
	if strings.HasPrefix(s, "list of ") {
		return "list"
	}
	return s
}

func (r *costRun) write(b *testing.B) {
	r.LoadEnd = benchreport.LoadAvg()
	b.Logf("%s (%s; load average %s at start, %s at end)", r.Title, r.Date, r.LoadStart, r.LoadEnd)
	if r.Base != nil {
		b.Logf("services %s against the base's %s (measured %s, load average %s at start, %s at end)", r.Services, r.Base.Services, r.Base.Date, r.Base.LoadStart, r.Base.LoadEnd)
	}
	b.Logf("| operation | n | service side ms | region ms | base ms | vs base | vs previous | vs baseline | top programs |")
	for _, p := range r.Points {
		b.Logf("| %s | %d | %.2f | %.2f | %s | %s | %s | %s | %s |", p.Series, p.N, p.ServiceMs, p.RegionMs, ms(p.BaseValue), ratio(p.VsBase), ratio(p.VsPrevious), ratio(p.VsBaseline), topPrograms(p.PerOpMs, 5))
	}
	for _, n := range r.Notes {
		b.Log(n)
	}
	r.writeAs(b, "cost.json")
}

func (r *costRun) writeAs(b *testing.B, name string) {
	path, err := benchreport.Write(name, r)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %s", path)
}

func ms(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func ratio(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v)
}

// topPrograms are the n programs that cost the most per operation.
func topPrograms(per map[string]float64, n int) string {
	names := make([]string, 0, len(per))
	for k := range per {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return per[names[i]] > per[names[j]] })
	if len(names) > n {
		names = names[:n]
	}
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %.2f", k, per[k])
	}
	return strings.Join(parts, ", ")
}

// operationPoller follows the document store's change feed, once a second, for terminal
// operations, by request kind and ARM resource ID (lower case). Polling once a second keeps its
// own cost in the idle rate that every phase subtracts.
type operationPoller struct {
	mu       sync.Mutex
	terminal map[armdoc.OperationRequest]map[string]armdoc.ProvisioningState
}

func newOperationPoller(ctx context.Context, b *testing.B) *operationPoller {
	db, err := region.Info.Postgres.Role("backend")
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("PGPASSFILE", db.PassFile)
	st, err := postgres.Open(ctx, db.DSN, postgres.Options{})
	if err != nil {
		b.Fatalf("open the document store: %v", err)
	}
	b.Cleanup(st.Close)
	p := &operationPoller{terminal: map[armdoc.OperationRequest]map[string]armdoc.ProvisioningState{}}
	go p.follow(ctx, st)
	return p
}

func (p *operationPoller) follow(ctx context.Context, st docstore.Store) {
	var checkpoint docstore.Checkpoint
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for {
			page, err := st.Changes(ctx, checkpoint, 1000)
			if err != nil {
				break
			}
			checkpoint = page.Next
			if len(page.Changes) == 0 {
				break
			}
			for _, ch := range page.Changes {
				if ch.Deleted || ch.Doc == nil || ch.Doc.Type != docstore.TypeOperation {
					continue
				}
				var op armdoc.OperationDocument
				if json.Unmarshal(ch.Doc.Body, &op) != nil || op.EndTime == nil {
					continue
				}
				p.mu.Lock()
				if p.terminal[op.Request] == nil {
					p.terminal[op.Request] = map[string]armdoc.ProvisioningState{}
				}
				p.terminal[op.Request][strings.ToLower(op.ExternalID)] = op.Status
				p.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// wait waits until an operation of kind req is terminal for every path, and fails the benchmark
// if one did not succeed or max passed.
func (p *operationPoller) wait(b *testing.B, req armdoc.OperationRequest, paths []string, max time.Duration) {
	deadline := time.Now().Add(max)
	for {
		var left, failed []string
		p.mu.Lock()
		for _, path := range paths {
			switch st, ok := p.terminal[req][strings.ToLower(path)]; {
			case !ok:
				left = append(left, path)
			case st != armdoc.StateSucceeded:
				failed = append(failed, path+": "+string(st))
			}
		}
		p.mu.Unlock()
		if len(failed) > 0 {
			b.Fatalf("%s operations did not succeed: %v", req, failed)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d %s operations not terminal after %s, e.g. %s", len(left), req, max, left[0])
		}
		time.Sleep(500 * time.Millisecond)
	}
}
