package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/internal/pprofmux"
	"github.com/openhcp/openhcp/test/internal/benchreport"
)

// Whole-path load benchmarks: open-loop load through ARM against the e2e region. Each
// prints a table and writes its figures as JSON to $BENCH_OUT (default docs/perf-data/), which
// tooling/cmd/benchplot turns into the SVG charts of docs/performance.md. None is a pass/fail
// test. Knobs (environment): rates and seconds per rate; the defaults fit the shared 2-core
// machine, the full sizes of docs/performance.md are given there.

// loadSample is one request of an open-loop run: latency is from its scheduled send time (not
// from when it was actually sent), so a stalled sender or server cannot hide its queue
// (no coordinated omission).
type loadSample struct {
	sched   time.Time
	latency time.Duration
	err     error
}

// openLoop calls fn at rate per second for d, each call in its own goroutine at its scheduled
// time whether or not earlier calls have answered, and returns every sample once all answered.
func openLoop(rate float64, d time.Duration, fn func(i int) error) []loadSample {
	n := int(rate * d.Seconds())
	period := time.Duration(float64(time.Second) / rate)
	out := make([]loadSample, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		sched := start.Add(time.Duration(i) * period)
		time.Sleep(time.Until(sched))
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := fn(i)
			out[i] = loadSample{sched: sched, latency: time.Since(sched), err: err}
		}()
	}
	wg.Wait()
	return out
}

// loadPoint is one offered load's figures, as written to JSON.
type loadPoint struct {
	Series   string  `json:"series"`
	Offered  float64 `json:"offeredPerSecond"`
	Seconds  float64 `json:"seconds"`
	N        int     `json:"n"`
	Errors   int     `json:"errors"`
	P50ms    float64 `json:"p50Ms"`
	P99ms    float64 `json:"p99Ms"`
	MaxMs    float64 `json:"maxMs"`
	Achieved float64 `json:"achievedPerSecond,omitempty"`
}

func summarize(series string, offered float64, d time.Duration, samples []time.Duration, errs int) loadPoint {
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	p := loadPoint{Series: series, Offered: offered, Seconds: d.Seconds(), N: len(samples) + errs, Errors: errs}
	if len(samples) > 0 {
		p.P50ms, p.P99ms, p.MaxMs = ms(pctRaw(samples, 50)), ms(pctRaw(samples, 99)), ms(samples[len(samples)-1])
	}
	return p
}

// pctRaw is pct without rounding to the millisecond (P1's figures are sub-millisecond).
func pctRaw(sorted []time.Duration, p int) time.Duration { return benchreport.Percentile(sorted, p) }

// benchReport is the JSON file of one benchmark run.
type benchReport struct {
	benchreport.Header
	// XLabel names the chart's x axis when it is not the offered load (benchplot).
	XLabel string `json:"xLabel,omitempty"`
	// Chart "throughput": benchplot draws the achieved rates as bars instead of latency lines;
	// "stages": one row per series, p50 bar and p99 tick (tooling/cmd/benchplot).
	Chart  string      `json:"chart,omitempty"`
	Points []loadPoint `json:"points"`
	Notes  []string    `json:"notes,omitempty"`
}

func newReport(name, title, command string) *benchReport {
	return &benchReport{Header: benchreport.NewHeader(name, title, command)}
}

// write prints the table and writes the JSON to $BENCH_OUT/<benchmark>.json.
func (r *benchReport) write(b *testing.B) {
	r.LoadEnd = benchreport.LoadAvg()
	b.Logf("%s (%s; load average %s at start, %s at end)", r.Title, r.Date, r.LoadStart, r.LoadEnd)
	b.Logf("| series | offered/s | n | errors | p50 ms | p99 ms | max ms | achieved/s |")
	for _, p := range r.Points {
		b.Logf("| %s | %g | %d | %d | %.2f | %.2f | %.2f | %.1f |", p.Series, p.Offered, p.N, p.Errors, p.P50ms, p.P99ms, p.MaxMs, p.Achieved)
	}
	path, err := benchreport.Write(r.Benchmark+".json", r)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %s", path)
}

// envFloats reads a comma-separated list of numbers, or def.
func envFloats(b *testing.B, name string, def []float64) []float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []float64
	for _, s := range strings.Split(v, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || f <= 0 {
			b.Fatalf("%s=%q: want positive numbers separated by commas", name, v)
		}
		out = append(out, f)
	}
	return out
}

func envSeconds(b *testing.B, name string, def float64) time.Duration {
	return time.Duration(envFloats(b, name, []float64{def})[0] * float64(time.Second))
}

// loadClient is an ARM client with enough idle connections for the highest offered load, so
// the open loop measures the frontend, not TLS handshakes of a too-small pool.
func loadClient(b *testing.B) *http.Client {
	c, err := region.Info.Frontend.HTTPClient(60 * time.Second)
	if err != nil {
		b.Fatal(err)
	}
	c.Transport.(*http.Transport).MaxIdleConnsPerHost = 512
	return c
}

// armDo sends one ARM request on c and fails (as an error, not a benchmark failure) unless the
// status is one of want.
func armDo(c *http.Client, method, path string, body []byte, want ...int) error {
	return armDoCtx(context.Background(), c, method, path, body, want...)
}

// armDoCtx is armDo with the request's context (armDoTraced's client trace).
func armDoCtx(ctx context.Context, c *http.Client, method, path string, body []byte, want ...int) error {
	u := region.Info.Frontend.URL + path
	if !strings.Contains(path, "api-version=") {
		u += "?api-version=" + apiVersion
	}
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, w := range want {
		if resp.StatusCode == w {
			return nil
		}
	}
	return fmt.Errorf("%s %s: %d %.200s", method, path, resp.StatusCode, raw)
}

// BenchmarkP1Frontend (P1): GET and PUT latency through ARM at fixed open-loop offered loads. A
// GET reads one existing cluster (document store and Cluster Service GetCluster); a PUT creates a new cluster (the frontend's document
// transaction and its Cluster Service call; the answer does not wait for Maestro), so every PUT
// adds a cluster that the region then reconciles in the background.
// Knobs: P1_GET_RATES (default 100,250,500), P1_PUT_RATES (default 100,250,500), P1_SECONDS
// (GET seconds per rate, default 3), P1_PUT_SECONDS (default 0.2: 20/50/100 creates, within
// the e2e region's capacity of 2 shards × 100 clusters).
// BENCH_LAYOUT=cpuset gives the service side a CPU of its own (applyLayout), the only layout
// whose latencies are a verdict.
// Run: cd test && go test ./e2e -run '^$' -bench P1Frontend -benchtime 1x -timeout 20m
func BenchmarkP1Frontend(b *testing.B) {
	needsOwnRegion(b, "measures the region it starts")
	getRates := envFloats(b, "P1_GET_RATES", []float64{100, 250, 500})
	putRates := envFloats(b, "P1_PUT_RATES", []float64{100, 250, 500})
	getDur, putDur := envSeconds(b, "P1_SECONDS", 3), envSeconds(b, "P1_PUT_SECONDS", 0.2)
	c := loadClient(b)
	sub, rg := uuid.NewString(), "rg-p1"
	registerSubscriptionB(b, sub)
	body, err := json.Marshal(clusterBody(sub, rg))
	if err != nil {
		b.Fatal(err)
	}
	target := clusterPath(sub, rg, "p1-get")
	if err := armDo(c, http.MethodPut, target, body, http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	// Warm the connection pool and the frontend's caches; not measured.
	openLoop(50, time.Second, func(int) error { return armDo(c, http.MethodGet, target, nil, http.StatusOK) })
	// P1_WARM_CONNS: that many connections opened at once before the steps, as a caller that keeps
	// a pool of connections to the RP has them (ARM does); 0 leaves the steps to open what they
	// need, each a mutual-TLS handshake that costs the frontend milliseconds of CPU.
	if n := envNumber("P1_WARM_CONNS"); n > 0 {
		warmConnections(b, c, target, n)
	}

	rep := newReport("p1-frontend", "P1: frontend GET and PUT latency at open-loop offered load (ms from the scheduled send)",
		"cd test && "+envSet("P1_GET_RATES", "P1_PUT_RATES", "P1_WARM_CONNS")+"P1_SECONDS="+fmt.Sprint(getDur.Seconds())+" P1_PUT_SECONDS="+fmt.Sprint(putDur.Seconds())+" go test ./e2e -run '^$' -bench P1Frontend -benchtime 1x -timeout 20m")
	layoutNote(b, rep)
	puts := []string{"p1-get"}
	modes, err := parsePutModes(os.Getenv("P1_PUT_MODES"))
	if err != nil {
		b.Fatal(err)
	}
	if len(modes) > 1 || modes[0].label != "" {
		// A same-run comparison of PUT modes goes to its own file, beside the defaults' run.
		rep.Benchmark += "-modes"
		rep.Command = strings.Replace(rep.Command, "go test", "P1_PUT_MODES='"+os.Getenv("P1_PUT_MODES")+"' go test", 1)
		if flags := putModeFlags(modes); len(flags) > 0 {
			defer restoreRegion(b, flags)
		}
	}
	// putStep runs the PUTs of one rate and returns the names of the clusters it created.
	putStep := func(i int, m putMode, rate float64) []string {
		label := fmt.Sprintf("put-%g", rate)
		if m.label != "" {
			label += "-" + strings.NewReplacer(" ", "_", "=", "_", "-", "").Replace(m.label)
		}
		// The goroutine dumps come just after the last PUT is sent, while the queue is longest.
		stop := profileServices(b, label, putDur+3*time.Second, putDur+100*time.Millisecond)
		stopLocks := sampleLockWaits(context.Background(), b)
		names := make([]string, int(rate*putDur.Seconds()))
		for j := range names {
			names[j] = fmt.Sprintf("p1-%d-%d-%d-%s", i, int(rate), j, uuid.NewString()[:6])
		}
		phases := make([]requestPhases, len(names))
		resume := func() {}
		if m.paused {
			// Continued at the step's last answer, and whatever happens before it.
			resume = sync.OnceFunc(pauseManagementClusters(b))
			defer resume()
		}
		usage := startUsage(b)
		series := "PUT"
		if m.label != "" {
			series += " [" + m.label + "]"
		}
		samples, p := measure(series, rate, putDur, func(j int) error {
			return armDoTraced(&phases[j], c, http.MethodPut, clusterPath(sub, rg, names[j]), body, http.StatusCreated)
		})
		used := usage.end(b, len(names))
		resume()
		rep.Points = append(rep.Points, p)
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s at %g/s (until the last answer): %s", series, rate, used))
		stop()
		rep.Notes = append(rep.Notes, fmt.Sprintf("Cluster Service during the %s at %g/s: %s", series, rate, stopLocks()),
			fmt.Sprintf("%s at %g/s, client side: %s", series, rate, phaseSummary(samples, phases)))
		return names
	}
	for i := 0; i < b.N; i++ {
		for _, rate := range getRates {
			stop := profileServices(b, fmt.Sprintf("get-%g", rate), getDur, 0)
			usage := startUsage(b)
			phases := make([]requestPhases, int(rate*getDur.Seconds())+1)
			samples, p := measure("GET", rate, getDur, func(j int) error {
				return armDoTraced(&phases[j], c, http.MethodGet, target, nil, http.StatusOK)
			})
			stop()
			rep.Points = append(rep.Points, p)
			rep.Notes = append(rep.Notes, fmt.Sprintf("GET at %g/s (until the last answer): %s", rate, usage.end(b, len(samples))),
				fmt.Sprintf("GET at %g/s, client side: %s", rate, phaseSummary(samples, phases[:len(samples)])))
		}
		if len(modes) == 1 && modes[0].label == "" {
			for _, rate := range putRates {
				puts = append(puts, putStep(i, modes[0], rate)...)
			}
			continue
		}
		// Modes compared: each step starts from a region with no clusters of its own and at rest,
		// so that no step pays for the work an earlier one left behind.
		for _, m := range modes {
			if len(putModeFlags(modes)) > 0 {
				rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
				err := restartRegionWith(rctx, m.flags)
				rcancel()
				if err != nil {
					b.Fatalf("mode %q: %v", m.label, err)
				}
			}
			for _, rate := range putRates {
				names := putStep(i, m, rate)
				deleteAll(b, c, sub, rg, names)
				rep.Notes = append(rep.Notes, fmt.Sprintf("after the PUTs [%s] at %g/s: %s", m.label, rate, waitRegionIdle(b, 0.25, 2*time.Minute)))
			}
		}
	}
	rep.write(b)
	for _, n := range rep.Notes {
		b.Log(n)
	}
	for _, p := range rep.Points {
		b.ReportMetric(p.P99ms, fmt.Sprintf("%s-%g-p99-ms", strings.NewReplacer(" ", "-", "[", "", "]", "").Replace(p.Series), p.Offered))
	}
	deleteAll(b, c, sub, rg, puts)
}

// profileServices, when BENCH_PPROF_DIR is set, takes a CPU profile of d from the frontend,
// Cluster Service and the backend (their metrics listeners, internal/pprofmux) and from each
// Maestro agent and, dumpAt after the start (half of d when 0), goroutine dumps of each (debug=1
// and =2), written to BENCH_PPROF_DIR/<label>-<service>.*; the returned function waits for them.
func profileServices(b *testing.B, label string, d, dumpAt time.Duration) (wait func()) {
	dir := os.Getenv("BENCH_PPROF_DIR")
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	type target struct {
		name, base string // base: the URL that ends in /debug/pprof/
		client     *http.Client
	}
	var targets []target
	for _, svc := range []struct{ name, metrics string }{
		{"frontend", region.Info.Frontend.MetricsURL},
		{"cluster-service", region.Info.ClusterService.MetricsURL},
		{"backend", region.Info.Backend.MetricsURL},
	} {
		targets = append(targets, target{svc.name, strings.TrimSuffix(svc.metrics, "/metrics") + "/debug/pprof/", pprofmux.Client(region.Info.PprofTokenFile, 0)})
	}
	// Each management cluster's Maestro agent serves /debug/pprof/ behind Kubernetes
	// authentication, which its library-go server delegates to the cluster's kube-apiserver:
	// the cluster's admin client certificate (system:masters) passes. (The kube-apiservers run
	// with --profiling=false; regionCPU notes their CPU time instead.)
	for _, mc := range region.Info.ManagementClusters {
		agent, err := agentProfileClient(mc.Kubeconfig)
		if err != nil {
			b.Logf("profile %s: %v", mc.Name, err)
			continue
		}
		targets = append(targets, target{mc.Name + "-maestro-agent", strings.TrimSuffix(mc.AgentHealthURL, "/healthz") + "/debug/pprof/", agent})
	}
	fetch := func(c *http.Client, url, file string, delay time.Duration) {
		defer wg.Done()
		time.Sleep(delay)
		resp, err := c.Get(url)
		if err != nil {
			b.Logf("profile %s: %v", url, err)
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			b.Logf("profile %s: %s %.200s", url, resp.Status, raw)
			return
		}
		if err := os.WriteFile(filepath.Join(dir, file), raw, 0o644); err != nil {
			b.Logf("profile %s: %v", file, err)
		}
	}
	if dumpAt == 0 {
		dumpAt = d / 2
	}
	for _, t := range targets {
		wg.Add(3)
		go fetch(t.client, fmt.Sprintf("%sprofile?seconds=%d", t.base, int(d.Seconds()+0.5)), label+"-"+t.name+".cpu.pprof", 0)
		go fetch(t.client, t.base+"goroutine?debug=1", label+"-"+t.name+".goroutines.txt", dumpAt)
		// Where each goroutine waits and for how long (debug=2).
		go fetch(t.client, t.base+"goroutine?debug=2", label+"-"+t.name+".goroutines-full.txt", dumpAt)
	}
	return wg.Wait
}

// agentProfileClient returns an HTTP client for a management cluster's Maestro agent's serving
// port that presents the cluster's admin client certificate. The agent serves a self-signed
// certificate it made at start-up, so that one is not verified (loopback; a profile of our own
// test region).
func agentProfileClient(kubeconfig string) (*http.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	tlsConf, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("agent client TLS: %w", err)
	}
	tlsConf.InsecureSkipVerify = true //nolint:gosec // see above
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}}, nil
}

// selfCPU is the CPU time this process (the load generator) has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// requestPhases is where one request's time went, from the client's side: started (its
// goroutine ran), gotConn (a connection was ready; newConn if it had to be dialled and shaken
// hands with), wrote (the request was sent), firstByte (the answer began).
type requestPhases struct {
	started, gotConn, wrote, firstByte time.Time
	newConn                            bool
}

// armDoTraced is armDo recording the request's phases in ph.
func armDoTraced(ph *requestPhases, c *http.Client, method, path string, body []byte, want ...int) error {
	ph.started = time.Now()
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { ph.gotConn, ph.newConn = time.Now(), !i.Reused },
		WroteRequest:         func(httptrace.WroteRequestInfo) { ph.wrote = time.Now() },
		GotFirstResponseByte: func() { ph.firstByte = time.Now() },
	})
	return armDoCtx(ctx, c, method, path, body, want...)
}

// phaseSummary says where a step's requests spent their time: p50/p99 of the wait from the
// scheduled send to the goroutine running, to a ready connection, and from the request sent to
// the first byte of the answer (the server's share), and how many needed a new connection.
func phaseSummary(samples []loadSample, phases []requestPhases) string {
	var lag, conn, server []time.Duration
	fresh := 0
	for i, ph := range phases {
		if ph.firstByte.IsZero() || ph.gotConn.IsZero() {
			continue
		}
		lag = append(lag, ph.started.Sub(samples[i].sched))
		conn = append(conn, ph.gotConn.Sub(ph.started))
		server = append(server, ph.firstByte.Sub(ph.wrote))
		if ph.newConn {
			fresh++
		}
	}
	if len(server) == 0 {
		return "no request answered"
	}
	q := func(d []time.Duration) string {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return fmt.Sprintf("%.1f / %.1f ms", float64(pctRaw(d, 50).Microseconds())/1000, float64(pctRaw(d, 99).Microseconds())/1000)
	}
	return fmt.Sprintf("client goroutine start lag p50/p99 %s; to a connection %s (%d of %d new); request sent → first byte (the region) %s",
		q(lag), q(conn), fresh, len(server), q(server))
}

// envSet is "NAME=value " for each of names set in the environment, for a report's command.
func envSet(names ...string) string {
	var out string
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			out += n + "=" + v + " "
		}
	}
	return out
}

// warmConnections sends n GETs of target at once, so that the client opens up to n connections
// (every one still busy when the next request starts needs its own) and keeps them idle for the
// steps; it says how many it opened.
func warmConnections(b *testing.B, c *http.Client, target string, n int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	opened, failed := 0, 0
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ph requestPhases
			<-start
			err := armDoTraced(&ph, c, http.MethodGet, target, nil, http.StatusOK)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
			} else if ph.newConn {
				opened++
			}
		}()
	}
	close(start)
	wg.Wait()
	b.Logf("warmed the client's connection pool: %d of %d simultaneous GETs opened a connection, %d failed", opened, n, failed)
}

// measure runs one open-loop step and returns its samples and their summary.
func measure(series string, rate float64, d time.Duration, fn func(int) error) ([]loadSample, loadPoint) {
	start := time.Now()
	samples := openLoop(rate, d, fn)
	elapsed := time.Since(start)
	var ok []time.Duration
	errs := 0
	var firstErr error
	for _, s := range samples {
		if s.err != nil {
			errs++
			if firstErr == nil {
				firstErr = s.err
			}
			continue
		}
		ok = append(ok, s.latency)
	}
	p := summarize(series, rate, d, ok, errs)
	p.Achieved = float64(len(ok)) / elapsed.Seconds()
	if firstErr != nil {
		fmt.Fprintf(os.Stderr, "%s at %g/s: %d errors, first: %v\n", series, rate, errs, firstErr)
	}
	return samples, p
}

// deleteAll deletes the benchmark's clusters and waits (at most 3 minutes) until Cluster Service
// has none of them left, so the next benchmark finds the shards' capacity free. Other clusters
// of the subscription are neither deleted nor waited for.
func deleteAll(b *testing.B, c *http.Client, sub, rg string, names []string) {
	ours := map[string]bool{}
	for _, n := range names {
		ours[strings.ToLower(clusterPath(sub, rg, n))] = true
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := armDo(c, http.MethodDelete, clusterPath(sub, rg, n), nil, http.StatusAccepted, http.StatusNoContent, http.StatusOK); err != nil {
				b.Logf("delete %s: %v", n, err)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := clusterServiceB(b)
	left := -1 // clusters listed by the last list that answered
	for {
		resp, err := cs.ListClusters(ctx, csListRequest(sub))
		if err == nil {
			left = 0
			for _, cl := range resp.GetClusters() {
				if ours[strings.ToLower(cl.GetArmResourceId())] {
					left++
				}
			}
		}
		if left == 0 {
			return
		}
		if ctx.Err() != nil {
			b.Logf("clusters of the benchmark still deleting after 3 min: %d at the last list (last error: %v)", left, err)
			return
		}
		time.Sleep(time.Second)
	}
}

// BenchmarkP3CreateToHostedCluster (P3): for clusters created through ARM at a fixed open-loop
// rate, the time from each PUT's scheduled send to its HostedCluster's first appearance on a
// management cluster (a watch on every management cluster), and to the PUT's answer.
// P3_CS_FLAGS: Cluster Service variants compared in one run, separated by ";", e.g.
// "--workers=4;--workers=16" (or region variants such as maestro-servers=N, restartRegionWith):
// for each, Cluster Service is restarted with those flags and every rate is run (JSON:
// p3-create-to-hostedcluster-cs-flags.json); each step also samples Cluster Service's database
// sessions waiting for locks (sampleLockWaits).
// BENCH_PPROF_DIR (both benchmarks): CPU profiles and goroutine dumps of our services during
// each step (profileServices).
// Knobs: P3_RATES (default 5,20,35), P3_SECONDS (per rate, default 2: 10/40/70 creates, within
// the e2e region's capacity of 2 shards × 100 clusters).
// Run: cd test && go test ./e2e -run '^$' -bench P3CreateToHostedCluster -benchtime 1x -timeout 20m
func BenchmarkP3CreateToHostedCluster(b *testing.B) {
	needsOwnRegion(b, "measures the region it starts")
	rates := envFloats(b, "P3_RATES", []float64{5, 20, 35})
	dur := envSeconds(b, "P3_SECONDS", 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	appeared := map[string]time.Time{} // HostedCluster name → first seen
	watchHostedClusters(ctx, b, func(ev watch.Event, now time.Time) {
		o, ok := ev.Object.(metav1.Object)
		if ev.Type != watch.Added || !ok {
			return
		}
		mu.Lock()
		if _, seen := appeared[o.GetName()]; !seen {
			appeared[o.GetName()] = now
		}
		mu.Unlock()
	})
	c := loadClient(b)
	sub := uuid.NewString()
	registerSubscriptionB(b, sub)
	body, err := json.Marshal(clusterBody(sub, "rg-p3"))
	if err != nil {
		b.Fatal(err)
	}
	rep := newReport("p3-create-to-hostedcluster", "P3: ARM PUT → HostedCluster exists on a management cluster, open-loop creates/s (ms from the scheduled send)",
		"cd test && P3_RATES="+strings.Trim(strings.Join(strings.Fields(fmt.Sprint(rates)), ","), "[]")+" P3_SECONDS="+fmt.Sprint(dur.Seconds())+" P3_CS_FLAGS='"+os.Getenv("P3_CS_FLAGS")+"' go test ./e2e -run '^$' -bench P3CreateToHostedCluster -benchtime 1x -timeout 20m")
	layoutNote(b, rep)
	variants := []string{""}
	if v := os.Getenv("P3_CS_FLAGS"); v != "" {
		// A comparison of Cluster Service flags goes to its own file, beside the defaults' run.
		rep.Benchmark += "-cs-flags"
		variants = strings.Split(v, ";")
		defer restoreRegion(b, strings.Fields(strings.ReplaceAll(v, ";", " ")))
	}
	for i := 0; i < b.N; i++ {
		for vi, variant := range variants {
			label := ""
			if len(variants) > 1 || variant != "" {
				label = " [" + strings.TrimSpace(variant) + "]"
				rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
				err := restartRegionWith(rctx, strings.Fields(variant))
				rcancel()
				if err != nil {
					b.Fatalf("variant %q: %v", variant, err)
				}
			}
			rg := fmt.Sprintf("rg-p3-%d-%d", i, vi)
			before, maestroBefore := csReconcileMetrics(b), maestroMetrics()
			var all []string
			for _, rate := range rates {
				n := int(rate * dur.Seconds())
				names := make([]string, n)
				for j := range names {
					names[j] = fmt.Sprintf("p3r%dn%d-%d-%d", int(rate), j, i, vi)
				}
				all = append(all, names...)
				stop := profileServices(b, fmt.Sprintf("create-%g-%d", rate, vi), dur+8*time.Second, 0)
				stopLocks := sampleLockWaits(ctx, b)
				start := time.Now()
				samples, put := measure("PUT answered"+label, rate, dur, func(j int) error {
					return armDo(c, http.MethodPut, clusterPath(sub, rg, names[j]), body, http.StatusCreated)
				})
				// Wait (bounded) for every HostedCluster of this step, then time them.
				deadline := time.Now().Add(3 * time.Minute)
				var lat []time.Duration
				last := time.Time{}
				for {
					lat, last = lat[:0], time.Time{}
					mu.Lock()
					for j, nm := range names {
						if t, ok := appeared[nm]; ok {
							lat = append(lat, t.Sub(samples[j].sched))
							if t.After(last) {
								last = t
							}
						}
					}
					mu.Unlock()
					if len(lat) == n || time.Now().After(deadline) {
						break
					}
					time.Sleep(250 * time.Millisecond)
				}
				hc := summarize("PUT → HostedCluster"+label, rate, dur, lat, n-len(lat))
				// Achieved: HostedClusters per second from the first scheduled send to the last one seen.
				if len(lat) > 0 {
					hc.Achieved = float64(len(lat)) / last.Sub(start).Seconds()
				}
				rep.Points = append(rep.Points, put, hc)
				stop()
				rep.Notes = append(rep.Notes, fmt.Sprintf("Cluster Service%s at %g/s: %s", label, rate, stopLocks()))
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("Cluster Service%s during the steps: %s", label, csReconcileMetrics(b).since(before)))
			rep.Notes = append(rep.Notes, fmt.Sprintf("Maestro server%s during the steps: %s", label, maestroMetrics().meanOf(maestroBefore)))
			deleteAll(b, c, sub, rg, all)
		}
	}
	rep.write(b)
	for _, n := range rep.Notes {
		b.Log(n)
	}
	for _, p := range rep.Points {
		b.ReportMetric(p.P99ms, fmt.Sprintf("%s-%g-p99-ms", strings.NewReplacer(" ", "-", "[", "", "]", "").Replace(p.Series), p.Offered))
	}
}

// csMetrics is the part of Cluster Service's /metrics that says what its cluster reconciles
// and creates cost: counters and duration sums, by metric and label set.
type csMetrics map[string]float64

func csReconcileMetrics(b *testing.B) csMetrics {
	resp, err := http.Get(region.Info.ClusterService.MetricsURL)
	if err != nil {
		b.Logf("cluster service metrics: %v", err)
		return nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := csMetrics{}
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(l, "cluster_service_reconciles_total{kind=\"cluster\"") &&
			!strings.HasPrefix(l, "cluster_service_work_status_reads_total") &&
			!strings.HasPrefix(l, "cluster_service_maestro_republishes_total") &&
			!strings.HasPrefix(l, "process_cpu_seconds_total") &&
			!strings.HasPrefix(l, "cluster_service_reconcile_duration_seconds_sum{kind=\"cluster\"") &&
			!strings.HasPrefix(l, "cluster_service_grpc_request_duration_seconds_sum{code=\"OK\",method=\"/openhcp.clusterservice.v1.Clusters/CreateCluster\"") &&
			!strings.HasPrefix(l, "cluster_service_grpc_request_duration_seconds_count{code=\"OK\",method=\"/openhcp.clusterservice.v1.Clusters/CreateCluster\"") {
			continue
		}
		k, v, ok := strings.Cut(l, " ")
		if f, err := strconv.ParseFloat(v, 64); ok && err == nil {
			out[k] = f
		}
	}
	return out
}

// since describes the change from before, one "metric{labels} +delta" per series.
func (m csMetrics) since(before csMetrics) string {
	var parts []string
	for k, v := range m {
		if d := v - before[k]; d != 0 {
			parts = append(parts, fmt.Sprintf("%s +%.3g", k, d))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "no change (or Cluster Service restarted: counters start again)"
	}
	return strings.Join(parts, "; ")
}

// sampleLockWaits samples, every 20 ms until the returned function is called, Cluster
// Service's PostgreSQL sessions (pg_stat_activity, as Cluster Service's own login, which sees
// its own sessions' wait events): how many run a statement and how many of those wait for a
// lock, advisory or other. The returned function stops it and describes the averages.
func sampleLockWaits(ctx context.Context, b *testing.B) (stop func() string) {
	role, err := region.Info.Postgres.Role("cluster-service")
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("PGPASSFILE", role.PassFile)
	conn, err := pgx.Connect(ctx, role.DSN)
	if err != nil {
		b.Fatalf("connect as cluster-service: %v", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	var samples, active, advisory, otherLock int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sctx.Err() == nil {
			var a, adv, other int
			err := conn.QueryRow(sctx, `SELECT count(*) FILTER (WHERE state = 'active'),
				count(*) FILTER (WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'),
				count(*) FILTER (WHERE wait_event_type = 'Lock' AND wait_event <> 'advisory')
				FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid()`).Scan(&a, &adv, &other)
			if err == nil {
				samples++
				active += a
				advisory += adv
				otherLock += other
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() string {
		cancel()
		<-done
		conn.Close(context.Background())
		if samples == 0 {
			return "no pg_stat_activity samples"
		}
		f := float64(samples)
		return fmt.Sprintf("%d samples of its database sessions: on average %.2f running a statement, %.2f of them waiting for the write (advisory) lock, %.2f for another lock",
			samples, float64(active)/f, float64(advisory)/f, float64(otherLock)/f)
	}
}

// watchHostedClusters watches HostedClusters on every management cluster until ctx ends and
// hands each event to fn with the time it arrived.
func watchHostedClusters(ctx context.Context, b *testing.B, fn func(ev watch.Event, now time.Time)) {
	for _, mc := range region.Info.ManagementClusters {
		w, err := kubeClient(b, mc.Kubeconfig).Resource(hostedClusterGVR).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatalf("watch hostedclusters on %s: %v", mc.Name, err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				fn(ev, time.Now())
			}
		}()
	}
}
