package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/openshift-online/maestro/pkg/api/openapi"
	"github.com/openshift-online/maestro/pkg/client/cloudevents/grpcsource"
	sdklogging "github.com/openshift-online/ocm-sdk-go/logging"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	grpcoptions "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// BenchmarkP4SustainedThroughput (P4): how many creates per second complete end to
// end through OpenHCP (ARM PUT → frontend → Cluster Service → Maestro → agent → HostedCluster
// on a management cluster) against bare Maestro in the same run: the same ManifestWorks, built
// by Cluster Service's own builder (manifests.Build) from the spec Cluster Service stored for a
// cluster of this run, sent with Maestro's own source client (grpcsource, as pinned, one Create
// each, no OpenHCP in the path) to the same Maestro server and agents, and timed the same way:
// from each send's scheduled time to its HostedCluster's first watch event on a management
// cluster. Both are offered the same open-loop rate, above what either sustains, so "completed
// per second" (n over first scheduled send → last HostedCluster) is the sustained throughput.
// Rounds (P4_ROUNDS) alternate the order (OpenHCP first in even rounds), and a warm-up of each
// path runs before the first round. Not a pass/fail test; run it with -benchtime 1x (a larger
// -benchtime repeats the whole benchmark, rounds and all).
//
// In the same run it measures the stuck-delete watchdog's scan both ways (docs/maestro.md), with
// the round's bundles present: the old list of every bundle with its manifests, and the search
// for bundles being deleted only (mgmtcluster.ListDeletingBundles): latency per scan and the
// Maestro server's CPU per scan (its process_cpu_seconds_total), P4_SCANS scans each.
//
// Knobs: P4_CREATES (per phase; default 120, or 30 with -short, within the e2e region's
// capacity of 2 shards × 100 clusters), P4_ROUNDS (default 2, or 1 with -short), P4_RATE
// (offered creates/s, default 40), P4_SCANS (default 10), BENCH_OUT. JSON: p4-throughput.json and p4-watchdog-scan.json.
// Run: cd test && go test ./e2e -run '^$' -bench P4SustainedThroughput -benchtime 1x -timeout 30m
func BenchmarkP4SustainedThroughput(b *testing.B) {
	needsOwnRegion(b, "measures the region it starts")
	defN := 120
	if testing.Short() {
		defN = 30
	}
	n := envInt(b, "P4_CREATES", defN)
	rate := envFloats(b, "P4_RATE", []float64{40})[0]
	scans := envInt(b, "P4_SCANS", 10)
	defRounds := 2
	if testing.Short() {
		defRounds = 1
	}
	rounds := envInt(b, "P4_ROUNDS", defRounds)
	dur := time.Duration(float64(n) / rate * float64(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	hcs := newHostedClusterTimes()
	watchHostedClusters(ctx, b, hcs.observe)
	c := loadClient(b)
	sub := uuid.NewString()
	registerSubscriptionB(b, sub)
	body, err := json.Marshal(clusterBody(sub, "rg-p4"))
	if err != nil {
		b.Fatal(err)
	}
	bare := newBareMaestro(ctx, b)
	restAPI := mgmtcluster.MaestroREST{URL: region.Info.Maestro.REST, Client: maestroRESTClient(b)}

	// Warm-up, not measured: one cluster through OpenHCP, whose stored spec is the template of
	// every bare work, and one bare work. The warm cluster has a subscription of its own, as
	// deleteAll waits for the measured subscription to be empty.
	warm, warmSub := "p4-warm", uuid.NewString()
	registerSubscriptionB(b, warmSub)
	warmBody, err := json.Marshal(clusterBody(warmSub, "rg-p4"))
	if err != nil {
		b.Fatal(err)
	}
	if err := armDo(c, http.MethodPut, clusterPath(warmSub, "rg-p4", warm), warmBody, http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	hcs.wait(b, []string{warm}, 3*time.Minute)
	spec := storedSpec(ctx, b, warmSub)
	if err := bare.create(ctx, sub, "p4-warm-bare", spec); err != nil {
		b.Fatal(err)
	}
	hcs.wait(b, []string{"p4-warm-bare"}, 3*time.Minute)

	cmd := fmt.Sprintf("cd test && P4_CREATES=%d P4_RATE=%g P4_ROUNDS=%d P4_SCANS=%d go test ./e2e -run '^$' -bench P4SustainedThroughput -benchtime 1x -timeout 30m", n, rate, rounds, scans)
	rep := newReport("p4-throughput", "P4: creates completing end to end (send → HostedCluster on a management cluster), OpenHCP against bare Maestro in one run (ms from the scheduled send)", cmd)
	scanRep := newReport("p4-watchdog-scan", "P4: stuck-delete watchdog scan, all bundles (before) against bundles being deleted (after), with the round's bundles present", cmd)
	scanRep.XLabel = "resource bundles in Maestro"
	rep.Chart = "throughput"
	rep.XLabel = "phase, in the order run (OpenHCP first in even rounds, bare Maestro first in odd ones)"
	var thr = map[string][]float64{}
	// The watchdog's kicks take an agent off the broker for seconds to minutes (docs/maestro.md),
	// so each phase notes how many there were since the one before (its deletes included).
	kicksAtStart := region.StuckDeleteKicks()
	kicksBefore := kicksAtStart
	for round := 0; round < rounds*b.N; round++ {
		phases := []string{"OpenHCP", "bare Maestro"}
		if round%2 == 1 {
			phases[0], phases[1] = phases[1], phases[0]
		}
		for _, phase := range phases {
			names := make([]string, n)
			for j := range names {
				names[j] = fmt.Sprintf("p4%s%d-%d", map[string]string{"OpenHCP": "o", "bare Maestro": "b"}[phase], round, j)
			}
			quiet := waitQuiet(2 * time.Minute)
			kicks := region.StuckDeleteKicks()
			rep.Notes = append(rep.Notes, fmt.Sprintf("round %d, %s: %s; stuck-delete watchdog kicks since the phase before: %d", round, phase, quiet, kicks-kicksBefore))
			kicksBefore = kicks
			cpuBefore := processCPU(region.Info.Maestro.MetricsURL)
			csCPUBefore := processCPU(region.Info.ClusterService.MetricsURL)
			start := time.Now()
			samples, sent := measure("sent ("+phase+")", rate, dur, func(j int) error {
				if phase == "OpenHCP" {
					return armDo(c, http.MethodPut, clusterPath(sub, "rg-p4", names[j]), body, http.StatusCreated)
				}
				return bare.create(ctx, sub, names[j], spec)
			})
			lat, last := hcs.latencies(names, samples, 5*time.Minute)
			p := summarize(phase, rate, dur, lat, n-len(lat))
			if len(lat) > 0 {
				p.Achieved = float64(len(lat)) / last.Sub(start).Seconds()
			}
			thr[phase] = append(thr[phase], p.Achieved)
			rep.Points = append(rep.Points, p)
			rep.Notes = append(rep.Notes, fmt.Sprintf("round %d, %s: sends answered p50 %.0f ms / p99 %.0f ms (%d errors); CPU seconds while its HostedClusters appeared: Maestro server %s, Cluster Service %s",
				round, phase, sent.P50ms, sent.P99ms, sent.Errors, cpuDelta(cpuBefore, processCPU(region.Info.Maestro.MetricsURL)),
				cpuDelta(csCPUBefore, processCPU(region.Info.ClusterService.MetricsURL))))

			scanRep.Points = append(scanRep.Points, watchdogScans(ctx, b, restAPI, scans, fmt.Sprintf("round %d after %s", round, phase), scanRep)...)

			if phase == "OpenHCP" {
				deleteAll(b, c, sub, "rg-p4", names)
			} else {
				bare.deleteAll(ctx, b, names)
				// While they delete, the search must find exactly the deleting bundles the full list has.
				rep.Notes = append(rep.Notes, fmt.Sprintf("round %d: right after deleting the bare works, %s", round, compareDeleting(ctx, restAPI)))
				hcs.waitGone(b, names, 3*time.Minute)
			}
		}
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("stuck-delete watchdog kicks over the measured rounds (the last phase's deletes included): %d", region.StuckDeleteKicks()-kicksAtStart))
	if o, m := mean(thr["OpenHCP"]), mean(thr["bare Maestro"]); m > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("throughput ratio OpenHCP / bare Maestro: %.2f (%.2f / %.2f creates/s, mean over %d rounds; target ≥ 0.8)", o/m, o, m, rounds*b.N))
		b.ReportMetric(o/m, "ratio")
	}
	rep.write(b)
	scanRep.write(b)
	for _, n := range append(rep.Notes, scanRep.Notes...) {
		b.Log(n)
	}
	deleteAll(b, c, warmSub, "rg-p4", []string{warm})
	bare.deleteAll(ctx, b, []string{"p4-warm-bare"})
}

// watchdogScans times scans scans of each kind, alternating, and reads the Maestro server's CPU
// before and after each kind's block; it returns one point per kind (x: bundles listed in full).
func watchdogScans(ctx context.Context, b *testing.B, m mgmtcluster.MaestroREST, scans int, label string, rep *benchReport) []loadPoint {
	type kind struct {
		series string
		list   func() (int, error)
		lat    []time.Duration
		cpu    float64
	}
	all := 0
	kinds := []*kind{
		{series: "every bundle with manifests (before)", list: func() (int, error) {
			bs, err := m.ListBundles(ctx, "")
			all = len(bs)
			return len(bs), err
		}},
		{series: "bundles being deleted (after)", list: func() (int, error) {
			bs, err := m.ListDeletingBundles(ctx)
			return len(bs), err
		}},
	}
	found := map[string]int{}
	for _, k := range kinds {
		cpu0 := processCPU(region.Info.Maestro.MetricsURL)
		for range scans {
			t := time.Now()
			got, err := k.list()
			if err != nil {
				b.Logf("watchdog scan (%s): %v", k.series, err)
				continue
			}
			k.lat = append(k.lat, time.Since(t))
			found[k.series] = got
		}
		if cpu0 >= 0 {
			k.cpu = (processCPU(region.Info.Maestro.MetricsURL) - cpu0) / float64(scans)
		}
	}
	var out []loadPoint
	for _, k := range kinds {
		p := summarize(k.series, float64(all), 0, k.lat, scans-len(k.lat))
		out = append(out, p)
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s, %d bundles: %s: %d listed, p50 %.1f ms, p99 %.1f ms, Maestro CPU %.1f ms per scan",
			label, all, k.series, found[k.series], p.P50ms, p.P99ms, 1000*k.cpu))
	}
	if a, d := out[0], out[1]; a.P50ms > 0 && kinds[0].cpu > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: after/before p50 latency %.3f, Maestro CPU per scan %.3f", label, d.P50ms/a.P50ms, kinds[1].cpu/kinds[0].cpu))
	}
	return out
}

// compareDeleting lists the deleting bundles both ways and says whether they agree.
func compareDeleting(ctx context.Context, m mgmtcluster.MaestroREST) string {
	searched, err := m.ListDeletingBundles(ctx)
	if err != nil {
		return "search failed: " + err.Error()
	}
	full, err := m.ListBundles(ctx, "")
	if err != nil {
		return "full list failed: " + err.Error()
	}
	inFull := map[string]bool{}
	for _, bd := range full {
		if bd.DeletedAt != nil {
			inFull[bd.ID] = true
		}
	}
	missing := 0
	for _, bd := range searched {
		if !inFull[bd.ID] {
			missing++ // deleted for good between the two lists, or a search result without deleted_at
		}
	}
	return fmt.Sprintf("the search listed %d deleting bundles and the full list (read after it) %d with deleted_at; %d of the searched were not deleting in the full list", len(searched), len(inFull), missing)
}

// bareMaestro sends works as a bare Maestro source would: Maestro's grpcsource client, one
// Create per work, no read before it. It publishes as source "cluster-service" with Cluster
// Service's identity (the only source this region's Maestro authorizes) under work names that
// Cluster Service's controller does not map to a cluster (manifests.ClusterIDFromWorkName), so
// Cluster Service ignores their events.
type bareMaestro struct {
	works     map[string]workv1client.ManifestWorkInterface // consumer → its work client
	consumers []string
	cfg       manifests.Config
	mu        sync.Mutex
	next      int
	placed    map[string]string // work name → consumer
}

// maestroSourceParts is what a Maestro gRPC source client of the region is made of: the REST
// API client, a gRPC dialer with the region's client certificate (the caller closes it) and a
// logger that only warns.
func maestroSourceParts(b *testing.B) (*openapi.APIClient, *grpcoptions.GRPCDialer, sdklogging.Logger) {
	tlsCfg, err := region.Info.Maestro.ClientTLS.Files().Client(region.Info.Maestro.GRPC)
	if err != nil {
		b.Fatal(err)
	}
	apiCfg := openapi.NewConfiguration()
	apiCfg.Servers = openapi.ServerConfigurations{{URL: region.Info.Maestro.REST}}
	apiCfg.HTTPClient = maestroRESTClient(b)
	logger, err := sdklogging.NewGoLoggerBuilder().Debug(false).Info(false).Warn(true).Build()
	if err != nil {
		b.Fatal(err)
	}
	return openapi.NewAPIClient(apiCfg), &grpcoptions.GRPCDialer{URL: region.Info.Maestro.GRPC, TLSConfig: tlsCfg}, logger
}

func newBareMaestro(ctx context.Context, b *testing.B) *bareMaestro {
	api, dialer, logger := maestroSourceParts(b)
	b.Cleanup(func() { dialer.Close() })
	bm := &bareMaestro{works: map[string]workv1client.ManifestWorkInterface{}, placed: map[string]string{},
		cfg: manifests.Config{DevWorkloadIdentityClientID: uuid.NewString()}}
	for _, mc := range region.Info.ManagementClusters {
		wc, err := grpcsource.NewMaestroGRPCSourceWorkClient(ctx, logger, api, &grpcoptions.GRPCOptions{Dialer: dialer}, maestro.DefaultSourceID)
		if err != nil {
			b.Fatalf("maestro source client for %s: %v", mc.ConsumerName, err)
		}
		bm.works[mc.ConsumerName] = wc.ManifestWorks(mc.ConsumerName)
		bm.consumers = append(bm.consumers, mc.ConsumerName)
	}
	return bm
}

// create builds the work Cluster Service would send for a cluster named name with spec, renamed
// so Cluster Service ignores it, and creates it on the next consumer (round robin).
func (bm *bareMaestro) create(ctx context.Context, sub, name string, spec *csv1.ClusterSpec) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	ssh, err := store.NewSSHPublicKey()
	if err != nil {
		return err
	}
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	w, err := manifests.Build(bm.cfg, manifests.Cluster{ID: id, ARMResourceID: clusterPath(sub, "rg-p4-bare", name), Spec: spec,
		EtcdEncryptionKey: key, SSHPublicKey: ssh, WatchStatus: true})
	if err != nil {
		return fmt.Errorf("build work: %w", err)
	}
	w.Name = "p4-bare-" + id
	bm.mu.Lock()
	consumer := bm.consumers[bm.next%len(bm.consumers)]
	bm.next++
	bm.placed[name] = consumer + "/" + w.Name
	bm.mu.Unlock()
	w.Namespace = consumer
	_, err = bm.works[consumer].Create(ctx, w, metav1.CreateOptions{})
	return err
}

// deleteAll deletes the bare works of the named clusters.
func (bm *bareMaestro) deleteAll(ctx context.Context, b *testing.B, names []string) {
	for _, n := range names {
		bm.mu.Lock()
		at := bm.placed[n]
		bm.mu.Unlock()
		consumer, work, ok := strings.Cut(at, "/")
		if !ok {
			continue
		}
		if err := bm.works[consumer].Delete(ctx, work, metav1.DeleteOptions{}); err != nil {
			b.Logf("delete bare work %s: %v", work, err)
		}
	}
}

// storedSpec is the spec Cluster Service stored for the subscription's first cluster.
func storedSpec(ctx context.Context, b *testing.B, sub string) *csv1.ClusterSpec {
	resp, err := clusterServiceB(b).ListClusters(ctx, csListRequest(sub))
	if err != nil || len(resp.GetClusters()) == 0 {
		b.Fatalf("read the stored spec: %v (%d clusters)", err, len(resp.GetClusters()))
	}
	return resp.GetClusters()[0].GetSpec()
}

// hostedClusterTimes records when each HostedCluster was first added and when it was deleted.
type hostedClusterTimes struct {
	mu       sync.Mutex
	appeared map[string]time.Time
	gone     map[string]bool
}

func newHostedClusterTimes() *hostedClusterTimes {
	return &hostedClusterTimes{appeared: map[string]time.Time{}, gone: map[string]bool{}}
}

func (h *hostedClusterTimes) observe(ev watch.Event, now time.Time) {
	o, ok := ev.Object.(metav1.Object)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch ev.Type {
	case watch.Added:
		if _, seen := h.appeared[o.GetName()]; !seen {
			h.appeared[o.GetName()] = now
		}
	case watch.Deleted:
		h.gone[o.GetName()] = true
	}
}

// latencies waits (at most max) for the HostedCluster of every name and returns each one's time
// from its scheduled send, and the last arrival.
func (h *hostedClusterTimes) latencies(names []string, samples []loadSample, max time.Duration) ([]time.Duration, time.Time) {
	deadline := time.Now().Add(max)
	for {
		var lat []time.Duration
		var last time.Time
		h.mu.Lock()
		for j, nm := range names {
			if t, ok := h.appeared[nm]; ok && samples[j].err == nil {
				lat = append(lat, t.Sub(samples[j].sched))
				if t.After(last) {
					last = t
				}
			}
		}
		h.mu.Unlock()
		if len(lat) == len(names) || time.Now().After(deadline) {
			return lat, last
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *hostedClusterTimes) wait(b *testing.B, names []string, max time.Duration) {
	if lat, _ := h.latencies(names, make([]loadSample, len(names)), max); len(lat) != len(names) {
		b.Fatalf("HostedClusters %v did not appear within %s", names, max)
	}
}

func (h *hostedClusterTimes) waitGone(b *testing.B, names []string, max time.Duration) {
	deadline := time.Now().Add(max)
	for {
		h.mu.Lock()
		left := 0
		for _, n := range names {
			if !h.gone[n] {
				left++
			}
		}
		h.mu.Unlock()
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Logf("%d bare HostedClusters still there after %s", left, max)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// processCPU is process_cpu_seconds_total from a Prometheus endpoint, or -1.
func processCPU(metricsURL string) float64 {
	resp, err := httpClient.Get(metricsURL)
	if err != nil {
		if resp, err = http.Get(metricsURL); err != nil {
			return -1
		}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "process_cpu_seconds_total "); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return f
			}
		}
	}
	return -1
}

// waitQuiet waits, at most max, until Cluster Service and the Maestro server are each using
// under 5 % of a core over 3 s, so a phase does not start while the previous one's deletes are
// still being worked through (the order effect of the earlier runs); it says how long it waited.
func waitQuiet(max time.Duration) string {
	const window, share = 3 * time.Second, 0.05
	urls := []string{region.Info.ClusterService.MetricsURL, region.Info.Maestro.MetricsURL}
	start := time.Now()
	for {
		before := make([]float64, len(urls))
		for i, u := range urls {
			before[i] = processCPU(u)
		}
		time.Sleep(window)
		quiet := true
		for i, u := range urls {
			after := processCPU(u)
			if before[i] < 0 || after < 0 {
				return "CPU of Cluster Service or Maestro server unreadable; phase started without waiting"
			}
			quiet = quiet && after-before[i] <= share*window.Seconds()
		}
		if quiet {
			return fmt.Sprintf("Cluster Service and Maestro server quiet after %s", time.Since(start).Round(time.Second))
		}
		if time.Since(start) >= max {
			return fmt.Sprintf("Cluster Service or Maestro server still busy after %s; phase started anyway", max)
		}
	}
}

func cpuDelta(before, after float64) string {
	if before < 0 || after < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f s", after-before)
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	i, err := strconv.Atoi(v)
	if err != nil || i <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return i
}
