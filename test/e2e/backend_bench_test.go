package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/openshift-online/maestro/pkg/client/cloudevents/grpcsource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	workv1 "open-cluster-management.io/api/work/v1"
	cecommon "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/common"
	ceutils "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/utils"
	grpcoptions "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/test/internal/procstat"
	"github.com/openhcp/openhcp/test/internal/reqcount"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/test/internal/benchreport"
)

// benchClusters is how many clusters each status mode creates.
const benchClusters = 100

// BenchmarkStatusModes compares the backend's watch and poll modes in one run, on the shared
// region: for each mode a backend in that mode replaces the region's own, benchClusters
// clusters are created through ARM, and for each the time from its HostedCluster turning
// Available (seen by a watch on the management cluster) to its create operation turning
// Succeeded (seen on the document store's change feed) is measured. Both clocks are this
// process's. Run: go test ./test/e2e -run '^$' -bench StatusModes -benchtime 1x -timeout 60m
func BenchmarkStatusModes(b *testing.B) {
	needsOwnRegion(b, "measures the region it starts")
	for i := 0; i < b.N; i++ {
		results := map[string][]time.Duration{}
		shares := map[string][]time.Duration{}
		for _, mode := range []string{"watch", "poll"} {
			results[mode], shares[mode] = benchMode(b, mode)
		}
		b.Logf("time from HostedCluster Available to ARM Succeeded, %d clusters per mode:", benchClusters)
		b.Logf("| mode | n | p50 | p90 | p99 | max |")
		for _, mode := range []string{"watch", "poll"} {
			d := results[mode]
			b.Logf("| %s | %d | %s | %s | %s | %s |", mode, len(d), pct(d, 50), pct(d, 90), pct(d, 99), d[len(d)-1].Round(time.Millisecond))
			b.ReportMetric(float64(pct(d, 50).Milliseconds()), mode+"-p50-ms")
			b.ReportMetric(float64(pct(d, 99).Milliseconds()), mode+"-p99-ms")
		}
		b.Logf("of which Cluster Service's READY write (update_time) → ARM Succeeded:")
		for _, mode := range []string{"watch", "poll"} {
			if d := shares[mode]; len(d) > 0 {
				b.Logf("| %s | %d | %s | %s | %s | %s |", mode, len(d), pct(d, 50), pct(d, 90), pct(d, 99), d[len(d)-1].Round(time.Millisecond))
			}
		}
	}
}

func pct(sorted []time.Duration, p int) time.Duration {
	return pctRaw(sorted, p).Round(time.Millisecond)
}

// benchMode returns, sorted, the Available → Succeeded times and the backend's own share of
// them: Cluster Service's update_time of the cluster (its READY write) → Succeeded.
func benchMode(b *testing.B, mode string) (total, backend []time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The region's backend steps aside (it releases the lease); one in this mode leads.
	main, err := region.Process("backend")
	if err != nil {
		b.Fatal(err)
	}
	// The benchmark reads the document store as the backend does: its own login, its password
	// from its password file.
	db, err := region.Info.Postgres.Role("backend")
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("PGPASSFILE", db.PassFile)
	dsn := db.DSN
	main.Stop(10 * time.Second)
	defer func() {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		if err := region.Restart(rctx, "backend"); err != nil {
			b.Errorf("restart backend: %v", err)
		}
	}()
	name := "backend-bench-" + mode
	if _, err := region.StartBackend(ctx, name, "--status-mode", mode); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	defer func() {
		if p, err := region.Process(name); err == nil {
			p.Stop(10 * time.Second)
		}
	}()
	return timeCreates(ctx, b, dsn, mode, benchClusters)
}

// clusterTimes are the moments one bench cluster passed each stage, all on this machine's clock.
type clusterTimes struct {
	put        time.Time // the ARM PUT that created it was sent
	available  time.Time // its HostedCluster Available=True, seen by a watch on the management cluster
	agentSend  time.Time // the Maestro agent began to send the status event carrying it (its log at -v=5)
	serverRead time.Time // the Maestro server began to handle that event (its log)
	maestro    time.Time // a work status with Available=True delivered on Maestro's gRPC source stream
	ready      time.Time // Cluster Service's update_time of the cluster, first seen READY
	succeeded  time.Time // its create operation Succeeded, seen on the document store's change feed
}

// createRun is what timeCreates saw of one batch.
type createRun struct {
	times map[string]*clusterTimes // CS cluster ID → stage times
	uids  map[string]string        // CS cluster ID → its work's Maestro resource ID
	// queueMean and queueMax are Cluster Service's reconcile queue depth sampled every 250 ms
	// from the first PUT until the last create succeeded.
	queueMean float64
	queueMax  int
	// serverReads says how fast the Maestro server read agent status events during the batch
	// (serverReadGaps).
	serverReads string
	// statusEvents says how many status events the agents sent per created work, and what
	// each changed (agentStatusKinds).
	statusEvents string
}

func putAt(t *clusterTimes) time.Time        { return t.put }
func availableAt(t *clusterTimes) time.Time  { return t.available }
func agentSendAt(t *clusterTimes) time.Time  { return t.agentSend }
func serverReadAt(t *clusterTimes) time.Time { return t.serverRead }
func maestroAt(t *clusterTimes) time.Time    { return t.maestro }
func readyAt(t *clusterTimes) time.Time      { return t.ready }
func succeededAt(t *clusterTimes) time.Time  { return t.succeeded }

// stage returns, sorted, to(t) − from(t) over the clusters that have both.
func (r createRun) stage(from, to func(*clusterTimes) time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range r.times {
		if f, e := from(t), to(t); !f.IsZero() && !e.IsZero() {
			out = append(out, e.Sub(f))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// timeCreates creates n clusters through ARM at 5/s in a fresh subscription and returns, sorted,
// for each the time from its HostedCluster turning Available to its create operation turning
// Succeeded, and the backend's share of it (Cluster Service's READY write → Succeeded); then it
// deletes them. dsn reads the document store as the backend (PGPASSFILE set by the caller).
func timeCreates(ctx context.Context, b *testing.B, dsn, mode string, benchClusters int) (total, backend []time.Duration) {
	r := timeCreateStages(ctx, b, dsn, mode, benchClusters, false)
	return r.stage(availableAt, succeededAt), r.stage(readyAt, succeededAt)
}

// timeCreateStages is timeCreates keeping every stage of every cluster; with viaMaestro it also
// follows Maestro's gRPC source stream (a subscriber of its own beside Cluster Service's) for
// the moment each work's status first says Available.
func timeCreateStages(ctx context.Context, b *testing.B, dsn, mode string, benchClusters int, viaMaestro bool) createRun {
	return timeCreateStagesThen(ctx, b, dsn, mode, benchClusters, viaMaestro, nil)
}

// timeCreateStagesThen is timeCreateStages calling then, if set, with the batch's subscription,
// resource group and stages once every create succeeded and before the deletes.
func timeCreateStagesThen(ctx context.Context, b *testing.B, dsn, mode string, benchClusters int, viaMaestro bool, then func(sub, rg string, run createRun)) createRun {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	run := createRun{times: map[string]*clusterTimes{}, uids: map[string]string{}}
	at := func(id string) *clusterTimes { // under mu
		t, ok := run.times[id]
		if !ok {
			t = &clusterTimes{}
			run.times[id] = t
		}
		return t
	}
	watchHostedClusters(ctx, b, func(ev watch.Event, now time.Time) {
		hc, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Deleted || condition(*hc, "Available") != "True" {
			return
		}
		ns := hc.GetNamespace()
		id := ns[strings.LastIndex(ns, "-")+1:]
		mu.Lock()
		if t := at(id); t.available.IsZero() {
			t.available = now
		}
		mu.Unlock()
	})
	if viaMaestro {
		watchMaestroAvailable(ctx, b, func(id, uid string, available bool, now time.Time) {
			mu.Lock()
			run.uids[id] = uid
			if t := at(id); available && t.maestro.IsZero() {
				t.maestro = now
			}
			mu.Unlock()
		})
	}
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		b.Fatalf("open document store: %v", err)
	}
	defer st.Close()
	succeeded := map[string]time.Time{} // CS cluster ID → create Succeeded seen
	go followSucceeded(ctx, st, &mu, succeeded)

	sub, rg := uuid.NewString(), "rg-bench-"+mode
	registerSubscriptionB(b, sub)
	// Cluster Service's READY writes, read from the start so that a later status write does not
	// move update_time before it is read.
	go func() {
		cs := clusterServiceB(b)
		for ctx.Err() == nil {
			resp, err := cs.ListClusters(ctx, csListRequest(sub))
			if err == nil {
				mu.Lock()
				for _, c := range resp.GetClusters() {
					if c.GetStatus().GetState() == csv1.ClusterState_CLUSTER_STATE_READY {
						if t := at(c.GetId()); t.ready.IsZero() {
							t.ready = c.GetUpdateTime().AsTime()
						}
					}
				}
				mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	}()
	stopQueue := sampleQueueDepth(ctx)
	// Paced at 5 creates/s, well under Maestro's ≈62/s, so queueing upstream stays small.
	tick := time.NewTicker(200 * time.Millisecond)
	createsStart := time.Now()
	putAtPath := map[string]time.Time{} // lower-case ARM resource ID → PUT sent
	for i := range benchClusters {
		<-tick.C
		path := clusterPath(sub, rg, fmt.Sprintf("c%03d", i))
		putAtPath[strings.ToLower(path)] = time.Now()
		r := armB(b, http.MethodPut, path, clusterBody(sub, rg))
		if r.Status != http.StatusCreated {
			b.Fatalf("PUT cluster %d: %d %s", i, r.Status, r.Raw)
		}
	}
	tick.Stop()
	ids := map[string]bool{}
	deadline := time.Now().Add(6 * time.Minute)
	for {
		resp, err := clusterServiceB(b).ListClusters(ctx, csListRequest(sub))
		if err != nil {
			b.Fatalf("list clusters: %v", err)
		}
		mu.Lock()
		for _, c := range resp.GetClusters() {
			ids[c.GetId()] = true
			at(c.GetId()).put = putAtPath[strings.ToLower(c.GetArmResourceId())]
		}
		done := 0
		for id := range ids {
			if _, ok := succeeded[id]; ok {
				done++
			}
		}
		mu.Unlock()
		if done == benchClusters {
			break
		}
		if time.Now().After(deadline) {
			// Not fatal: the unfinished ones count as missing in every stage that ends later.
			b.Logf("%s mode: only %d of %d creates succeeded after 6 min; going on without the rest", mode, done, benchClusters)
			break
		}
		time.Sleep(time.Second)
	}
	run.queueMean, run.queueMax = stopQueue()
	time.Sleep(1500 * time.Millisecond) // the last READY's update_time to be read
	mu.Lock()
	out := createRun{times: map[string]*clusterTimes{}, uids: run.uids, queueMean: run.queueMean, queueMax: run.queueMax}
	for id := range ids {
		t := at(id)
		if t.available.IsZero() {
			continue // Available came before the watch: never, as the watch starts first
		}
		t.succeeded = succeeded[id]
		if t.ready.After(t.succeeded) {
			t.ready = time.Time{} // a later status write moved update_time: not the READY write
		}
		c := *t
		out.times[id] = &c
	}
	mu.Unlock()
	cancel() // the readers above stop before the deletes
	if viaMaestro {
		out.serverReads = serverReadGaps(agentSends(b, out, createsStart))
		out.statusEvents = agentStatusKinds(b, out)
	}
	if len(out.times) < benchClusters {
		b.Logf("%s mode: Available seen for only %d of %d clusters", mode, len(out.times), benchClusters)
	}
	if len(out.times) == 0 {
		b.Fatalf("%s mode: no cluster became Available", mode)
	}
	total, backend := out.stage(availableAt, succeededAt), out.stage(readyAt, succeededAt)
	if len(total) > 0 {
		b.Logf("%s mode: Available → Succeeded p50 %s p90 %s p99 %s max %s over %d clusters", mode, pct(total, 50), pct(total, 90), pct(total, 99), total[len(total)-1].Round(time.Millisecond), len(total))
	}
	if len(backend) > 0 {
		b.Logf("%s mode: CS READY write → Succeeded p50 %s p90 %s p99 %s max %s over %d clusters", mode, pct(backend, 50), pct(backend, 90), pct(backend, 99), backend[len(backend)-1].Round(time.Millisecond), len(backend))
	}

	if then != nil {
		then(sub, rg, out)
	}

	// Give the shards' capacity back before the next mode. A delete that does not finish is
	// reported, not fatal: it is not what this measures, and the shards have room for it.
	dctx := context.WithoutCancel(ctx)
	var delAsync []string
	for i := range benchClusters {
		r := armB(b, http.MethodDelete, clusterPath(sub, rg, fmt.Sprintf("c%03d", i)), nil)
		if r.Status != http.StatusAccepted {
			b.Fatalf("DELETE cluster %d: %d %s", i, r.Status, r.Raw)
		}
		delAsync = append(delAsync, r.Header.Get("Azure-AsyncOperation"))
	}
	// Wait for the deletes (up to 4 min on a loaded machine), so the next batch does not share
	// the region with them; describe a few that did not finish.
	wait, unfinished := time.Now().Add(4*time.Minute), 0
	for i, a := range delAsync {
		if st := waitOperationB(b, a, time.Until(wait)); st != "Succeeded" {
			if unfinished++; unfinished <= 3 {
				b.Logf("%s mode: delete of c%03d is %q after 4 min; cluster service: %s", mode, i, st, csState(dctx, b, sub, rg, i))
			}
		}
	}
	if unfinished > 0 {
		b.Logf("%s mode: %d of %d deletes unfinished after 4 min", mode, unfinished, benchClusters)
	}
	return out
}

// sampleQueueDepth samples Cluster Service's reconcile queue depth (its /metrics) every 250 ms
// until the returned function is called, which gives the mean and the maximum seen.
func sampleQueueDepth(ctx context.Context) (stop func() (mean float64, maxDepth int)) {
	ctx, cancel := context.WithCancel(ctx)
	var sum, n, top int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if resp, err := http.Get(region.Info.ClusterService.MetricsURL); err == nil {
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				for _, l := range strings.Split(string(raw), "\n") {
					if v, ok := strings.CutPrefix(l, "cluster_service_reconcile_queue_depth "); ok {
						if f, err := strconv.ParseFloat(v, 64); err == nil {
							sum, n, top = sum+int(f), n+1, max(top, int(f))
						}
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() (float64, int) {
		cancel()
		<-done
		if n == 0 {
			return 0, 0
		}
		return float64(sum) / float64(n), top
	}
}

// watchMaestroAvailable subscribes to Maestro's gRPC source stream as Cluster Service's source
// (as P4's bare source does; Maestro sends every status event of the source to each subscriber)
// and calls fn with the cluster ID, its work's Maestro resource ID, whether the work's
// HostedCluster feedback says Available=True and the arrival time of every work event, until
// ctx ends. It always drains its watches:
// grpcsource holds up its delivery until a watcher takes the event.
func watchMaestroAvailable(ctx context.Context, b *testing.B, fn func(id, uid string, available bool, now time.Time)) {
	api, dialer, logger := maestroSourceParts(b)
	go func() { <-ctx.Done(); dialer.Close() }()
	wc, err := grpcsource.NewMaestroGRPCSourceWorkClient(ctx, logger, api, &grpcoptions.GRPCOptions{Dialer: dialer}, maestro.DefaultSourceID)
	if err != nil {
		b.Fatalf("maestro source client: %v", err)
	}
	for _, mc := range region.Info.ManagementClusters {
		// The watch starts with a List through Maestro's REST API, which a loaded region can
		// answer after the client's timeout: retry, and without it go on with no Maestro stage.
		var w watch.Interface
		for attempt := 1; ; attempt++ {
			if w, err = wc.ManifestWorks(mc.ConsumerName).Watch(ctx, metav1.ListOptions{}); err == nil || attempt == 4 {
				break
			}
			time.Sleep(time.Duration(attempt) * 2 * time.Second)
		}
		if err != nil {
			b.Logf("watch works of %s, 4 tries: %v; no Maestro stage for its clusters", mc.ConsumerName, err)
			continue
		}
		go func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					drain(w.ResultChan())
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					now := time.Now()
					work, ok := ev.Object.(*workv1.ManifestWork)
					if !ok || ev.Type == watch.Deleted {
						continue
					}
					id, ok := manifests.ClusterIDFromWorkName(work.Name)
					if !ok {
						continue
					}
					fb, err := controller.ParseFeedback(work)
					fn(id, ceutils.UID(maestro.DefaultSourceID, cecommon.ManifestWorkGR.String(), mc.ConsumerName, work.Name), err == nil && feedbackAvailable(fb), now)
				}
			}
		}()
	}
}

// agentAvailable is how a HostedCluster's Available=True condition reads inside a status event
// the Maestro agent logs at -v=5 ("Sending event" event="{…}"): a JSON string (the feedback's
// raw value) in the event's JSON in a quoted log value, its fields in alphabetical order.
const agentAvailable = `\\\"status\\\":\\\"True\\\",\\\"type\\\":\\\"Available\\\"`

// agentSends sets, for each cluster of r, when a Maestro agent began to send the status event
// that first carried its HostedCluster's Available=True (agentSend) and when the Maestro server
// began to handle that event (serverRead), read from the logs. It needs the agents at -v=5
// (OPENHCP_E2E_AGENT_V=5), where each sent event is logged whole; the server at its -v=2 logs
// each event it receives with its extensions, the status sequence ID among them:
//
//	I1124 02:27:47.380001 pid baseclient.go:181] "Sending event" event="{…\"resourceid\":\"<uid>\",…\"sequenceid\":\"<n>\"…}"
//	I1124 02:27:47.390002 pid baseclient.go:303] "Received event" … extensions={…"sequenceid":"<n>"…}
//
// (klog's time, UTC on this machine. The agent writes its line after its client's rate limiter
// and before the MQTT publish; the server writes its line as its handler starts, which its MQTT
// transport calls for one event at a time.) At the agents' default -v=2 the payload is not
// logged and this finds nothing. It returns the server's reads of agent status events from
// the first create to the last Available send, for serverReadGaps.
func agentSends(b *testing.B, r createRun, from time.Time) (serverReads []time.Time) {
	byUID := map[string]*clusterTimes{}
	for id, uid := range r.uids {
		if t, ok := r.times[id]; ok {
			byUID[uid] = t
		}
	}
	bySeq := map[string]*clusterTimes{}
	var last time.Time
	eachLogLine(b, "maestro-agent", func(l string, at time.Time) {
		if !strings.Contains(l, `"Sending event"`) || !strings.Contains(l, "status.update_request") || !strings.Contains(l, agentAvailable) {
			return
		}
		m, seq := agentResourceID.FindStringSubmatch(l), eventSequenceID.FindStringSubmatch(l)
		if m == nil || seq == nil {
			return
		}
		if t, ok := byUID[m[1]]; ok && t.agentSend.IsZero() {
			t.agentSend, bySeq[seq[1]] = at, t
			if at.After(last) {
				last = at
			}
		}
	})
	eachLogLine(b, "maestro-server", func(l string, at time.Time) {
		if !strings.Contains(l, `"Received event"`) || !strings.Contains(l, "status.update_request") {
			return
		}
		if !at.Before(from) && !at.After(last) {
			serverReads = append(serverReads, at)
		}
		if seq := eventSequenceID.FindStringSubmatch(l); seq != nil {
			if t, ok := bySeq[seq[1]]; ok && t.serverRead.IsZero() {
				t.serverRead = at
			}
		}
	})
	return serverReads
}

// eachLogLine calls fn with every klog line, and its time, of the region's logs whose file
// name starts with prefix.
func eachLogLine(b *testing.B, prefix string, fn func(line string, at time.Time)) {
	entries, _ := os.ReadDir(region.Info.LogDir)
	year := time.Now().UTC().Year()
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		f, err := os.Open(filepath.Join(region.Info.LogDir, e.Name()))
		if err != nil {
			b.Logf("log: %v", err)
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20) // a logged event holds a whole work status
		for sc.Scan() {
			l := sc.Text()
			if len(l) < 22 || (l[0] != 'I' && l[0] != 'W' && l[0] != 'E') {
				continue
			}
			if at, err := time.Parse("2006 0102 15:04:05.000000", fmt.Sprintf("%d %s", year, l[1:21])); err == nil {
				fn(l, at)
			}
		}
		if err := sc.Err(); err != nil {
			b.Logf("log %s: %v", e.Name(), err)
		}
		f.Close()
	}
}

// serverReadGaps says how far apart the Maestro server began to handle consecutive agent
// status events: its MQTT transport hands it one event at a time, so while events wait the
// gap is the time it takes per event.
func serverReadGaps(reads []time.Time) string {
	if len(reads) < 2 {
		return "not read (agents below -v=5)"
	}
	sort.Slice(reads, func(i, j int) bool { return reads[i].Before(reads[j]) })
	gaps := make([]time.Duration, 0, len(reads)-1)
	for i := 1; i < len(reads); i++ {
		gaps = append(gaps, reads[i].Sub(reads[i-1]))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	span := reads[len(reads)-1].Sub(reads[0])
	return fmt.Sprintf("%d agent status events read in %s (%.1f/s), gap between reads p50 %s, p90 %s",
		len(reads), span.Round(time.Second), float64(len(reads)-1)/span.Seconds(), pct(gaps, 50), pct(gaps, 90))
}

// agentStatusKinds counts, from the agents' logs at -v=5, the status events they sent for r's
// works up to now (before the deletes), and names each by what it changed against the work's
// previous one: a work-level condition that appeared or changed status (Applied, Available),
// else the status feedback of a manifest (the HostedCluster's status as Cluster Service asked
// for it), else a manifest's conditions, else nothing of those (a timestamp or message). The
// status path's queue is made of these events (docs/performance.md), so this is what a create
// costs it. At the agents' default -v=2 nothing is logged and this says so.
func agentStatusKinds(b *testing.B, r createRun) string {
	works := map[string]bool{}
	for _, uid := range r.uids {
		works[uid] = true
	}
	type event struct {
		ResourceID string     `json:"resourceid"`
		Data       sentStatus `json:"data"`
	}
	last := map[string]*sentStatus{}
	perWork := map[string]int{}
	kinds := map[string]int{}
	eachLogLine(b, "maestro-agent", func(l string, _ time.Time) {
		if !strings.Contains(l, `"Sending event"`) || !strings.Contains(l, "status.update_request") {
			return
		}
		i := strings.Index(l, `event="`)
		if i < 0 {
			return
		}
		raw, err := strconv.Unquote(strings.TrimSpace(l[i+len("event="):]))
		if err != nil {
			return
		}
		var ev event
		if json.Unmarshal([]byte(raw), &ev) != nil || !works[ev.ResourceID] {
			return
		}
		perWork[ev.ResourceID]++
		prev := last[ev.ResourceID]
		if prev == nil {
			prev = &sentStatus{}
		}
		kinds[ev.Data.changedFrom(prev)]++
		last[ev.ResourceID] = &ev.Data
	})
	if len(perWork) == 0 {
		return "no status event of these works in the agents' logs (they log them at -v=5: OPENHCP_E2E_AGENT_V=5)"
	}
	total := 0
	for _, n := range perWork {
		total += n
	}
	var parts []string
	for _, k := range sortedKinds(kinds) {
		parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	return fmt.Sprintf("%d status events sent for %d works before the deletes, %.2f per work; by what each changed first: %s",
		total, len(perWork), float64(total)/float64(len(perWork)), strings.Join(parts, ", "))
}

// sentStatus is the part of an agent's status event that agentStatusKinds compares.
type sentStatus struct {
	Conditions     []statusCondition `json:"conditions"`
	ResourceStatus []struct {
		Conditions     []statusCondition `json:"conditions"`
		StatusFeedback json.RawMessage   `json:"statusFeedback"`
	} `json:"resourceStatus"`
}

type statusCondition struct{ Type, Status string }

// changedFrom names the first thing, in agentStatusKinds' order, that s changed against prev.
func (s *sentStatus) changedFrom(prev *sentStatus) string {
	for _, c := range s.Conditions {
		if !slices.Contains(prev.Conditions, c) {
			return "work condition " + c.Type
		}
	}
	for j, rs := range s.ResourceStatus {
		if j >= len(prev.ResourceStatus) || string(prev.ResourceStatus[j].StatusFeedback) != string(rs.StatusFeedback) {
			return "status feedback"
		}
	}
	for j, rs := range s.ResourceStatus {
		if !slices.Equal(prev.ResourceStatus[j].Conditions, rs.Conditions) {
			return "a manifest's conditions"
		}
	}
	return "none of those"
}

// sortedKinds is kinds' keys, the most frequent first.
func sortedKinds(kinds map[string]int) []string {
	ks := make([]string, 0, len(kinds))
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		return kinds[ks[i]] > kinds[ks[j]] || kinds[ks[i]] == kinds[ks[j]] && ks[i] < ks[j]
	})
	return ks
}

// agentResourceID and eventSequenceID find the Maestro resource ID and the status sequence ID
// in a logged event's extensions (JSON, quoted in the agent's line: \"resourceid\":\"<uid>\").
var (
	agentResourceID = regexp.MustCompile(`resourceid\\?"\s*:\s*\\?"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)
	eventSequenceID = regexp.MustCompile(`sequenceid\\?"\s*:\s*\\?"(\d+)`)
)

func feedbackAvailable(fb controller.Feedback) bool {
	for _, c := range fb.Conditions {
		if c.Type == "Available" {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// drain takes events a grpcsource watcher may still send after its context ended.
func drain(ch <-chan watch.Event) {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-time.After(time.Second):
			return
		}
	}
}

// followSucceeded records when each create operation is first seen Succeeded on the feed, by
// its Cluster Service ID.
func followSucceeded(ctx context.Context, st docstore.Store, mu *sync.Mutex, succeeded map[string]time.Time) {
	followOperations(ctx, st, armdoc.OperationCreate, func(op *armdoc.OperationDocument) string { return op.InternalID }, mu, succeeded)
}

// followOperations records, under key(op), when each operation of kind req is first seen
// Succeeded on the document store's change feed.
func followOperations(ctx context.Context, st docstore.Store, req armdoc.OperationRequest, key func(*armdoc.OperationDocument) string,
	mu *sync.Mutex, succeeded map[string]time.Time) {
	var checkpoint docstore.Checkpoint
	for ctx.Err() == nil {
		page, err := st.Changes(ctx, checkpoint, 1000)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		now := time.Now()
		checkpoint = page.Next
		for _, ch := range page.Changes {
			if ch.Deleted || ch.Doc == nil || ch.Doc.Type != docstore.TypeOperation {
				continue
			}
			var op armdoc.OperationDocument
			if json.Unmarshal(ch.Doc.Body, &op) != nil || op.Request != req || op.Status != armdoc.StateSucceeded {
				continue
			}
			k := key(&op)
			mu.Lock()
			if _, seen := succeeded[k]; !seen {
				succeeded[k] = now
			}
			mu.Unlock()
		}
		if len(page.Changes) == 1000 {
			continue
		}
		_ = st.WaitForChanges(ctx, checkpoint)
	}
}

// The shared helpers take *testing.T; these are the few a benchmark needs.

func armB(b *testing.B, method, path string, body any) armResponse {
	b.Helper()
	var rd *strings.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			b.Fatal(err)
		}
		rd = strings.NewReader(string(raw))
	}
	u := region.Info.Frontend.URL + path
	if !strings.Contains(path, "api-version=") {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		u += sep + "api-version=" + apiVersion
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequest(method, u, rd)
		req.Header.Set("Content-Type", "application/json")
	} else {
		req, err = http.NewRequest(method, u, nil)
	}
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("x-ms-correlation-request-id", uuid.NewString())
	resp, err := httpClient.Do(req)
	if err != nil {
		b.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	out := armResponse{Status: resp.StatusCode, Header: resp.Header}
	var buf strings.Builder
	_, _ = io.Copy(&buf, resp.Body)
	out.Raw = buf.String()
	_ = json.Unmarshal([]byte(out.Raw), &out.Body)
	return out
}

func registerSubscriptionB(b *testing.B, sub string) {
	b.Helper()
	r := armB(b, http.MethodPut, "/subscriptions/"+sub+"?api-version=2.0", map[string]any{
		"state": "Registered", "registrationDate": time.Now().UTC().Format(time.RFC3339),
		"properties": map[string]any{"tenantId": uuid.NewString()},
	})
	if r.Status != http.StatusOK && r.Status != http.StatusCreated {
		b.Fatalf("register subscription: %d %s", r.Status, r.Raw)
	}
}

// waitOperationB returns the operation's status once terminal, or the last one seen when
// timeout passes.
func waitOperationB(b *testing.B, asyncURL string, timeout time.Duration) string {
	b.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		resp, err := httpClient.Get(asyncURL)
		if err == nil {
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			last, _ = body["status"].(string)
			switch last {
			case "Succeeded", "Failed", "Canceled":
				return last
			}
		}
		if time.Now().After(deadline) {
			return last
		}
		time.Sleep(time.Second)
	}
}

// csState describes bench cluster i as Cluster Service sees it, for a delete that hangs.
func csState(ctx context.Context, b *testing.B, sub, rg string, i int) string {
	path := clusterPath(sub, rg, fmt.Sprintf("c%03d", i))
	resp, err := clusterServiceB(b).ListClusters(ctx, &csv1.ListClustersRequest{ArmResourceIdPrefix: path, PageSize: 10})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, c := range resp.GetClusters() {
		out = append(out, fmt.Sprintf("%s shard=%s state=%s revision=%d message=%q", c.GetId(), c.GetShard(), c.GetStatus().GetState(), c.GetRevision(), c.GetStatus().GetMessage()))
	}
	if len(out) == 0 {
		return "not known (yet the operation did not finish)"
	}
	return strings.Join(out, "; ")
}

func clusterServiceB(b *testing.B) csv1.ClustersClient {
	b.Helper()
	conn, err := region.DialClusterServiceAs(pki.SRE)
	if err != nil {
		b.Fatalf("dial cluster service: %v", err)
	}
	b.Cleanup(func() { conn.Close() })
	return csv1.NewClustersClient(conn)
}

func csListRequest(sub string) *csv1.ListClustersRequest {
	return &csv1.ListClustersRequest{ArmResourceIdPrefix: "/subscriptions/" + sub + "/", PageSize: 500}
}

func kubeClient(b *testing.B, kubeconfig string) dynamic.Interface {
	b.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkFeedbackModes compares Cluster Service's watched status feedback (the agent watches a
// HostedCluster while a transition is in flight) with its poll-only baseline (--feedback-watch
// =false: the agent re-reads it every --status-sync-interval, 10 s in the region), in one run
// on the shared region with the backend in its default watch mode. First a throwaway batch of
// FEEDBACK_BENCH_WARM clusters (default 20, 0: none) warms the region, so that neither mode
// runs on a region that has just started. Then for each mode Cluster Service is restarted with
// the mode's flags, FEEDBACK_BENCH_CLUSTERS (default 100) clusters are created through ARM at
// 5/s, and each cluster's path from HostedCluster Available to ARM Succeeded is cut into
// stages, all on this process's clock:
//
//	Available → Maestro  the agent's feedback reaching Maestro's server and its gRPC source
//	                     stream (a subscriber of the benchmark's own, beside Cluster Service's);
//	                     with the agents at -v=5 (OPENHCP_E2E_AGENT_V=5) also cut where the
//	                     agent sends it and where the server reads it (agentSends)
//	Maestro → READY      Cluster Service's queue and reconcile, to its READY write (update_time)
//	READY → Succeeded    the backend
//
// with Cluster Service's reconcile queue depth sampled every 250 ms and, with BENCH_PPROF_DIR,
// CPU profiles of our services during each mode (profileServices). Modes: watch, then poll;
// FEEDBACK_BENCH_POLL_FIRST=1 swaps them; FEEDBACK_BENCH_MODES="name=flag flag;name=flag ..."
// replaces them (e.g. a candidate fix beside its baseline in the same run; a mode's flags are
// restartRegionWith's). The figures go to
// $BENCH_OUT/feedback-modes.json (default docs/perf-data).
// Run: go test ./test/e2e -run '^$' -bench FeedbackModes -benchtime 1x -timeout 60m
func BenchmarkFeedbackModes(b *testing.B) {
	needsOwnRegion(b, "measures the region it starts")
	n := envCount(b, "FEEDBACK_BENCH_CLUSTERS", benchClusters)
	warm := envCount(b, "FEEDBACK_BENCH_WARM", 20)
	poolN := min(envCount(b, "FEEDBACK_BENCH_POOLS", 20), n)
	db, err := region.Info.Postgres.Role("backend")
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("PGPASSFILE", db.PassFile)
	ctx := context.Background()
	type mode struct {
		name  string
		flags []string
	}
	modes := []mode{{"watch", []string{"--feedback-watch=true"}}, {"poll", []string{"--feedback-watch=false"}}}
	if os.Getenv("FEEDBACK_BENCH_POLL_FIRST") != "" { // to see what the order costs
		modes[0], modes[1] = modes[1], modes[0]
	}
	if v := os.Getenv("FEEDBACK_BENCH_MODES"); v != "" {
		modes = nil
		for _, m := range strings.Split(v, ";") {
			name, flags, ok := strings.Cut(strings.TrimSpace(m), "=")
			if !ok || name == "" {
				b.Fatalf("FEEDBACK_BENCH_MODES=%q: want name=flags;name=flags", v)
			}
			modes = append(modes, mode{name, strings.Fields(flags)})
		}
	}
	modeFlags := func(ms []mode) (all []string) {
		for _, m := range ms {
			all = append(all, m.flags...)
		}
		return all
	}
	restart := func(flags []string) {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
		defer rcancel()
		if err := restartRegionWith(rctx, flags); err != nil {
			b.Fatal(err)
		}
	}
	defer restoreRegion(b, modeFlags(modes))
	stages := []struct {
		name     string
		from, to func(*clusterTimes) time.Time
	}{
		{"Available → agent sends status", availableAt, agentSendAt},
		{"agent sends status → Maestro server reads it", agentSendAt, serverReadAt},
		{"Maestro server reads it → Maestro stream", serverReadAt, maestroAt},
		{"Available → Maestro stream", availableAt, maestroAt},
		{"Maestro stream → CS READY write", maestroAt, readyAt},
		{"CS READY write → ARM Succeeded", readyAt, succeededAt},
		{"Available → ARM Succeeded", availableAt, succeededAt},
		{"PUT → ARM Succeeded (the whole create)", putAt, succeededAt},
	}
	poolStages := []struct {
		name     string
		from, to func(poolTimes) time.Time
	}{
		{"PATCH → NodePool Ready at 3", func(p poolTimes) time.Time { return p.patched }, func(p poolTimes) time.Time { return p.ready }},
		{"NodePool Ready → ARM Succeeded", func(p poolTimes) time.Time { return p.ready }, func(p poolTimes) time.Time { return p.succeeded }},
		{"PATCH → ARM Succeeded", func(p poolTimes) time.Time { return p.patched }, func(p poolTimes) time.Time { return p.succeeded }},
	}
	modesEnv := ""
	if v := os.Getenv("FEEDBACK_BENCH_MODES"); v != "" {
		modesEnv = fmt.Sprintf("FEEDBACK_BENCH_MODES='%s' ", v)
	}
	cmd := fmt.Sprintf("FEEDBACK_BENCH_CLUSTERS=%d FEEDBACK_BENCH_WARM=%d FEEDBACK_BENCH_POOLS=%d %sgo test -count=1 -v ./e2e/ -run '^$' -bench FeedbackModes -benchtime 1x -timeout 60m", n, warm, poolN, modesEnv)
	for i := 0; i < b.N; i++ {
		rep := newReport("feedback-modes", "HostedCluster Available → ARM Succeeded by stage, per Cluster Service mode (5 creates/s)", cmd)
		rep.Chart = "stages"
		rep.XLabel = "mode: stage"
		if i == 0 {
			layoutNote(b, rep)
		}
		if warm > 0 {
			start := time.Now()
			timeCreateStages(ctx, b, db.DSN, "feedback-warm", warm, false)
			rep.Notes = append(rep.Notes, fmt.Sprintf("warm-up: %d throwaway clusters created and deleted in %s before the first mode (load average %s)", warm, time.Since(start).Round(time.Second), benchreport.LoadAvg()))
		}
		runs := map[string]createRun{}
		pools := map[string][]poolTimes{}
		for _, m := range modes {
			restart(m.flags)
			logsAt := logSizes()
			pointsAt, notesAt := len(rep.Points), len(rep.Notes)
			before, maestroBefore := csReconcileMetrics(b), maestroMetrics()
			sessionsBefore, cpuBefore, kicksBefore := dbSessions(ctx, b, db.DSN), databaseCPU(b), region.StuckDeleteKicks()
			procsBefore, schedBefore, requestsBefore := regionCPU(), regionSched(), mgmtRequests(ctx, b)
			var sessionsNote, cpuNote, requestsNote string
			load := benchreport.LoadAvg()
			start := time.Now()
			// The profile covers the creates (n/5 s) and the time most of them take to finish.
			wait := profileServices(b, "feedback-"+m.name, time.Duration(n)*200*time.Millisecond+20*time.Second, 0)
			var scaleStart time.Time
			var maestroNote, csNote string
			runs[m.name] = timeCreateStagesThen(ctx, b, db.DSN, "feedback-"+m.name, n, true, func(sub, rg string, r createRun) {
				maestroNote, csNote = maestroMetrics().meanOf(maestroBefore), csReconcileMetrics(b).since(before)+"; works republished: "+csCounter("cluster_service_maestro_republishes_total")+
					"; work statuses used, by source: "+csCounter("cluster_service_work_status_reads_total")
				sessionsNote = sessionsSince(sessionsBefore, dbSessions(ctx, b, db.DSN))
				cpuNote = databaseCPU(b).since(cpuBefore) + "; the region's other processes: " + regionCPUSince(procsBefore, regionCPU(), time.Since(start)) +
					"; run queues (waited for a CPU / ran): " + regionSchedSince(schedBefore, regionSched())
				requestsNote = reqcount.Since(requestsBefore, mgmtRequests(ctx, b), n, 12)
				wait() // the profile is of the creates
				// The creates' stages now, before the node pools and the deletes: a run that
				// times out in those still has them.
				for _, st := range stages {
					d := r.stage(st.from, st.to)
					if len(d) > 0 {
						b.Logf("%s: | %s | n %d | p50 %s | p99 %s | max %s |", m.name, st.name, len(d), pct(d, 50), pct(d, 99), d[len(d)-1].Round(time.Millisecond))
					}
				}
				if poolN > 0 {
					scaleStart = time.Now()
					pools[m.name] = timePoolScales(ctx, b, db.DSN, m.name, sub, rg, poolN)
				}
			})
			r := runs[m.name]
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: Maestro server during the creates: %s", m.name, maestroNote))
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: in the region's logs during the mode: %s; stuck-delete watchdog kicks %d", m.name, tallyLogsSince(b, logsAt, "feedback-"+m.name), region.StuckDeleteKicks()-kicksBefore))
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: PostgreSQL sessions opened during the creates, by database (pg_stat_database.sessions): %s", m.name, sessionsNote))
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: CPU during the creates: %s", m.name, cpuNote))
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: requests the management kube-apiservers served during the creates (apiserver_request_total): %s", m.name, requestsNote))
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the Maestro server's reads of agent status events, from the first create to the last Available sent: %s", m.name, r.serverReads))
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the agents' status events for the created works: %s", m.name, r.statusEvents))
			rep.Notes = append(rep.Notes,
				fmt.Sprintf("%s (Cluster Service %s): %s to %s UTC, load average %s at start, %s at end; Cluster Service's reconcile queue depth mean %.1f, max %d; its reconciles during the creates: %s",
					m.name, strings.Join(m.flags, " "), start.UTC().Format("15:04:05"), time.Now().UTC().Format("15:04:05"), load, benchreport.LoadAvg(), r.queueMean, r.queueMax, csNote))
			for _, st := range stages {
				d := r.stage(st.from, st.to)
				rep.Points = append(rep.Points, summarize(m.name+": "+st.name, 5, time.Duration(n)*200*time.Millisecond, d, n-len(d)))
			}
			if ps := pools[m.name]; len(ps) > 0 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: node pool scale of %d pools (2 → 3 replicas by PATCH) from %s UTC", m.name, len(ps), scaleStart.UTC().Format("15:04:05")))
				for _, st := range poolStages {
					d := poolStage(ps, st.from, st.to)
					rep.Points = append(rep.Points, summarize(m.name+": node pool "+st.name, 5, time.Duration(len(ps))*200*time.Millisecond, d, len(ps)-len(d)))
				}
			}
			// Each mode's figures as soon as it ends, so a run stopped early keeps them.
			for _, p := range rep.Points[pointsAt:] {
				b.Logf("| %s | n %d | missing %d | p50 %.0f ms | p99 %.0f ms | max %.0f ms |", p.Series, p.N, p.Errors, p.P50ms, p.P99ms, p.MaxMs)
			}
			for _, note := range rep.Notes[notesAt:] {
				b.Log(note)
			}
			rep.write(b)
		}
		rep.Notes = append(rep.Notes, "errors in a stage's row: clusters without both of its timestamps (e.g. no READY seen before a later status write, or no Available on Maestro's stream)")
		rep.Notes = append(rep.Notes, agentLogSummary(b))
		b.Logf("| mode | stage | n | p50 | p90 | p99 | max |")
		for _, m := range modes {
			for _, st := range stages {
				d := runs[m.name].stage(st.from, st.to)
				if len(d) == 0 {
					b.Logf("| %s | %s | 0 | | | | |", m.name, st.name)
					continue
				}
				b.Logf("| %s | %s | %d | %s | %s | %s | %s |", m.name, st.name, len(d), pct(d, 50), pct(d, 90), pct(d, 99), d[len(d)-1].Round(time.Millisecond))
			}
			for _, st := range poolStages {
				if d := poolStage(pools[m.name], st.from, st.to); len(d) > 0 {
					b.Logf("| %s | node pool %s | %d | %s | %s | %s | %s |", m.name, st.name, len(d), pct(d, 50), pct(d, 90), pct(d, 99), d[len(d)-1].Round(time.Millisecond))
				}
			}
			d := runs[m.name].stage(availableAt, succeededAt)
			b.ReportMetric(float64(pct(d, 50).Milliseconds()), m.name+"-p50-ms")
			b.ReportMetric(float64(pct(d, 99).Milliseconds()), m.name+"-p99-ms")
		}
		if len(modes) > 1 {
			last := modes[len(modes)-1].name
			p := runs[last].stage(availableAt, succeededAt)
			pp := poolStage(pools[last], poolStages[1].from, poolStages[1].to)
			for _, m := range modes[:len(modes)-1] {
				w := runs[m.name].stage(availableAt, succeededAt)
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s/%s ratio, Available → ARM Succeeded: p50 %.3f, p99 %.3f", m.name, last,
					float64(pct(w, 50))/float64(pct(p, 50)), float64(pct(w, 99))/float64(pct(p, 99))))
				if wp := poolStage(pools[m.name], poolStages[1].from, poolStages[1].to); len(wp) > 0 && len(pp) > 0 {
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s/%s ratio, NodePool Ready → ARM Succeeded: p50 %.3f, p99 %.3f", m.name, last,
						float64(pct(wp, 50))/float64(pct(pp, 50)), float64(pct(wp, 99))/float64(pct(pp, 99))))
				}
			}
		}
		rep.write(b)
		for _, note := range rep.Notes {
			b.Log(note)
		}
	}
}

// maestroMetrics reads the /metrics of the running Maestro servers that say where their status
// path spends time: status events processed and their latency, their PostgreSQL advisory locks
// (taken to held, by type), their gRPC Publish handling, their REST requests by method, and
// agents' status updates received; series per resource ID are summed over resources, and every
// series over the instances (an instance stopped or started between two reads makes their
// difference meaningless, so a mode reads both with the same instances running).
func maestroMetrics() csMetrics {
	restMethod := regexp.MustCompile(`method="([A-Z]+)"`)
	var raw []byte
	for _, url := range region.MaestroMetricsURLs() {
		resp, err := http.Get(url)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		raw = append(append(raw, b...), '\n')
	}
	out := csMetrics{}
	for _, l := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(l, " ")
		name, labels, _ := strings.Cut(k, "{")
		switch name {
		case "resource_status_event_processing_latency_seconds_sum", "resource_status_event_processing_latency_seconds_count":
			labels = ""
		case "process_cpu_seconds_total":
		case "advisory_lock_duration_sum", "advisory_lock_duration_count", "grpc_server_processed_duration_seconds_sum", "grpc_server_processed_duration_seconds_count":
		case "rest_api_inbound_request_duration_sum", "rest_api_inbound_request_duration_count":
			// Its REST API (Cluster Service's reads of works), by method only.
			m := restMethod.FindStringSubmatch(labels)
			if m == nil {
				continue
			}
			labels = `method="` + m[1] + `"}`
		case "cloudevents_received_total":
			if !strings.Contains(labels, `subresource="status"`) {
				continue
			}
			labels = ""
		default:
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); ok && err == nil {
			key := name
			if labels != "" {
				key += "{" + labels
			}
			out[key] += f
		}
	}
	return out
}

// meanOf describes, from the change in m since before, each sum/count pair as its count and mean.
func (m csMetrics) meanOf(before csMetrics) string {
	var parts []string
	for k, c := range m {
		name, labels, _ := strings.Cut(k, "{")
		base, ok := strings.CutSuffix(name, "_count")
		if !ok {
			continue
		}
		sumKey := base + "_sum"
		if labels != "" {
			sumKey += "{" + labels
		}
		if n := c - before[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s%s: %.0f, mean %.0f ms", base, strings.TrimSuffix("{"+labels, "{"), n, 1000*(m[sumKey]-before[sumKey])/n))
		}
	}
	for k, v := range m {
		if d := v - before[k]; strings.HasSuffix(k, "_total") && d > 0 {
			if d == math.Trunc(d) {
				parts = append(parts, fmt.Sprintf("%s: +%.0f", k, d))
			} else { // CPU seconds
				parts = append(parts, fmt.Sprintf("%s: +%.2f", k, d))
			}
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// csCounter is Cluster Service's counter name, per series, since it started.
func csCounter(name string) string {
	resp, err := http.Get(region.Info.ClusterService.MetricsURL)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, name+"{") {
			out = append(out, strings.TrimPrefix(l, name))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// envCount reads a non-negative count from the environment, or def.
func envCount(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q is not a count", name, v)
	}
	return n
}

// agentLogSummary counts, in each Maestro agent's log so far, the lines that speak of status
// feedback or informers, and with BENCH_PPROF_DIR copies the agents' logs there.
func agentLogSummary(b *testing.B) string {
	entries, err := os.ReadDir(region.Info.LogDir)
	if err != nil {
		return "agent logs: " + err.Error()
	}
	var parts []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "maestro-agent") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(region.Info.LogDir, e.Name()))
		if err != nil {
			continue
		}
		counts := map[string]int{}
		for _, l := range strings.Split(string(raw), "\n") {
			ll := strings.ToLower(l)
			for _, k := range []string{"feedback", "informer", "error", "throttl"} {
				if strings.Contains(ll, k) {
					counts[k]++
				}
			}
		}
		parts = append(parts, fmt.Sprintf("%s: %d lines, of which mention feedback %d, informer %d, error %d, throttl %d",
			e.Name(), strings.Count(string(raw), "\n"), counts["feedback"], counts["informer"], counts["error"], counts["throttl"]))
		if dir := os.Getenv("BENCH_PPROF_DIR"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, "feedback-"+e.Name()), raw, 0o644)
		}
	}
	return "agent logs: " + strings.Join(parts, "; ")
}

// dbSessions reads how many sessions each database of the region's PostgreSQL has had since it
// started (pg_stat_database.sessions; each service has its own database, so this counts the
// connections each one opened). Nil, logged, when it cannot be read.
func dbSessions(ctx context.Context, b *testing.B, dsn string) map[string]int64 {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Logf("database sessions: %v", err)
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "select datname, sessions from pg_stat_database where datname is not null")
	if err != nil {
		b.Logf("database sessions: %v", err)
		return nil
	}
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			b.Logf("database sessions: %v", err)
			return nil
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		b.Logf("database sessions: %v", err)
		return nil
	}
	return out
}

// dbCPU is the CPU time the region's PostgreSQL (the postmaster, its live backends and every
// backend that has exited) and its PgBouncer have used, from /proc; zero when not readable.
type dbCPU struct{ postgres, bouncer time.Duration }

// databaseCPU reads dbCPU. The region's PostgreSQL is found by its data directory's
// postmaster.pid, next to the PKI named in region.json; its bouncer by its config file.
func databaseCPU(b *testing.B) dbCPU {
	rp, err := readRegionProcs()
	if err == nil {
		err = rp.pmErr
	}
	if err != nil {
		b.Logf("database CPU: %v", err)
		return dbCPU{}
	}
	return rp.dbCPU()
}

// postmasterPID is the region's PostgreSQL postmaster, from its data directory's postmaster.pid
// next to the PKI named in region.json, and the region's state directory.
func postmasterPID() (state string, pid int, err error) {
	state = filepath.Dir(filepath.Dir(region.Info.Postgres.CAFile))
	raw, err := os.ReadFile(filepath.Join(state, "postgres", "data", "postmaster.pid"))
	if err != nil {
		return "", 0, fmt.Errorf("the region's postmaster: %w", err)
	}
	pid, err = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		return "", 0, fmt.Errorf("the region's postmaster.pid: %w", err)
	}
	return state, pid, nil
}

// since says how much CPU each used from before to c.
func (c dbCPU) since(before dbCPU) string {
	if c.postgres == 0 {
		return "not read"
	}
	return fmt.Sprintf("PostgreSQL %.1f s, PgBouncer %.1f s", (c.postgres - before.postgres).Seconds(), (c.bouncer - before.bouncer).Seconds())
}

// regionCPU reads the CPU time used so far by each live process of the region (those whose
// command line names its state directory), summed by program: a Maestro agent apart from the
// server, everything else by its program. PostgreSQL's backends are databaseCPU's.
func regionCPU() map[string]time.Duration {
	rp, _ := readRegionProcs() // an unreadable /proc reads as no CPU used
	return rp.programCPU()
}

// programName is how regionCPU and regionSched name a process of the region: its program's file
// name without the tool cache's "-<hash>" (hack/tool.sh); Maestro's with its subcommand (agent,
// server).
func programName(p procstat.Proc) string {
	name := toolHash.ReplaceAllString(filepath.Base(p.Args[0]), "")
	if name == "maestro" && len(p.Args) > 1 {
		name = "maestro " + p.Args[1]
	}
	return name
}

// regionSched reads how long the threads of each live process of the region ran and how long
// they waited on a run queue for a CPU (procstat.Sched), summed by program as regionCPU names
// them, with PostgreSQL's postmaster and backends as "postgres".
func regionSched() map[string]procstat.Sched {
	rp, _ := readRegionProcs() // an unreadable /proc reads as nothing waited; no postmaster leaves PostgreSQL out
	out := map[string]procstat.Sched{}
	for _, p := range rp.procs {
		name := ""
		switch rp.role(p) {
		case postmaster, pgBackend:
			name = "postgres"
		case program:
			name = programName(p)
		default:
			continue
		}
		if s, err := procstat.ReadSched(p.PID); err == nil {
			out[name] = out[name].Add(s)
		}
	}
	return out
}

// regionSchedSince says, largest wait first, how long each program of regionSched waited for a
// CPU from before to after, against how long it ran (a program that waits longer than it runs
// is short of CPU, not of work); PostgreSQL's backends that came and went in between are not
// counted.
func regionSchedSince(before, after map[string]procstat.Sched) string {
	uses := gains(before, after, procstat.Sched.Sub, func(d procstat.Sched) bool { return d.Ran > 0 || d.Waited > 0 },
		func(a, b procstat.Sched) bool { return a.Waited > b.Waited })
	var total procstat.Sched
	for _, u := range uses {
		total = total.Add(u.d)
	}
	parts := []string{fmt.Sprintf("waited for a CPU %.2f s against %.2f s run in all", total.Waited.Seconds(), total.Ran.Seconds())}
	for _, u := range uses {
		parts = append(parts, fmt.Sprintf("%s %.2f / %.2f s", u.name, u.d.Waited.Seconds(), u.d.Ran.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// gain is what one program gained between two readings.
type gain[T any] struct {
	name string
	d    T
}

// gains is what each program of after gained since before (sub), those for which counts says it
// gained anything, ordered by first.
func gains[T any](before, after map[string]T, sub func(T, T) T, counts func(T) bool, first func(a, b T) bool) []gain[T] {
	var out []gain[T]
	for name, v := range after {
		if d := sub(v, before[name]); counts(d) {
			out = append(out, gain[T]{name, d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return first(out[i].d, out[j].d) })
	return out
}

var toolHash = regexp.MustCompile(`-[0-9a-f]{16}$`)

// regionCPUSince says, largest first, how much CPU each program of regionCPU used from before
// to after, and over how long.
func regionCPUSince(before, after map[string]time.Duration, over time.Duration) string {
	uses := gains(before, after, func(a, b time.Duration) time.Duration { return a - b }, func(d time.Duration) bool { return d > 0 },
		func(a, b time.Duration) bool { return a > b })
	var total time.Duration
	for _, u := range uses {
		total += u.d
	}
	parts := []string{fmt.Sprintf("%.1f s in all over %s (%.2f cores)", total.Seconds(), over.Round(time.Second), total.Seconds()/over.Seconds())}
	for _, u := range uses {
		parts = append(parts, fmt.Sprintf("%s %.1f s", u.name, u.d.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// sessionsSince says how many sessions each database gained from before to after.
func sessionsSince(before, after map[string]int64) string {
	if before == nil || after == nil {
		return "not read"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if d := after[name] - before[name]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s +%d", name, d))
		}
	}
	return strings.Join(parts, ", ")
}

// logSizes is how long each of the region's logs is now, for tallyLogsSince.
func logSizes() map[string]int64 {
	sizes := map[string]int64{}
	entries, _ := os.ReadDir(region.Info.LogDir)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			sizes[e.Name()] = fi.Size()
		}
	}
	return sizes
}

// republishLine matches Cluster Service's republish warning (controller/republish.go) in its
// JSON or text log, capturing the work's generation and the generation its status was for.
var republishLine = regexp.MustCompile(`republishing it.*?[" ]generation"?[=:](\d+).*?status_generation"?[=:](\d+)`)

// tallyLogsSince counts, in what the region's logs gained since sizes, Cluster Service's
// republishes by "generation/status generation" (a work never reported on is "n/0") and the
// agent statuses the Maestro server kept and those it discarded as being for an older
// generation ("Updating status for stale resource"); with BENCH_PPROF_DIR it copies those parts of Cluster
// Service's and the Maestro server's logs there as <prefix>-<log>.
func tallyLogsSince(b *testing.B, sizes map[string]int64, prefix string) string {
	entries, err := os.ReadDir(region.Info.LogDir)
	if err != nil {
		return err.Error()
	}
	republishes, stale, accepted, disconnects := map[string]int{}, 0, 0, 0
	for _, e := range entries {
		name := e.Name()
		maestro := strings.HasPrefix(name, "maestro")
		cs, server, agent := strings.HasPrefix(name, "cluster-service"), maestro && !strings.Contains(name, "agent"), maestro && strings.Contains(name, "agent")
		if !cs && !server && !agent {
			continue
		}
		f, err := os.Open(filepath.Join(region.Info.LogDir, name))
		if err != nil {
			continue
		}
		_, _ = f.Seek(sizes[name], io.SeekStart)
		raw, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(raw), "\n") {
			if m := republishLine.FindStringSubmatch(l); cs && m != nil {
				republishes[m[1]+"/"+m[2]]++
			}
			if server && strings.Contains(l, "stale resource") {
				stale++
			}
			if server && strings.Contains(l, "Updating resource status") {
				accepted++
			}
			if agent && strings.Contains(l, "the cloudevents client is disconnected") {
				disconnects++
			}
		}
		if dir := os.Getenv("BENCH_PPROF_DIR"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, prefix+"-"+name), raw, 0o644); err != nil {
				b.Logf("copy log %s: %v", name, err)
			}
		}
	}
	keys := slices.Sorted(maps.Keys(republishes))
	var parts []string
	total := 0
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, republishes[k]))
		total += republishes[k]
	}
	return fmt.Sprintf("Cluster Service republish warnings %d (generation/status generation: %s); agent statuses the Maestro server kept %d ('Updating resource status') and discarded as stale %d ('Updating status for stale resource'); agents dropped by the broker %d times ('the cloudevents client is disconnected')",
		total, strings.Join(parts, ", "), accepted, stale, disconnects)
}

// poolTimes are the moments one node pool's scale passed each stage, on this machine's clock.
type poolTimes struct {
	patched   time.Time // the PATCH of its replicas answered
	ready     time.Time // its NodePool on the management cluster at the new count and Ready=True
	succeeded time.Time // its update operation Succeeded, seen on the document store's change feed
}

// timePoolScales gives each of the first pools clusters of the batch (c000, c001, …) a node pool
// of 2 replicas, waits until they all succeeded, then scales each to 3 by PATCH through ARM at
// 5/s and returns, per pool, when the PATCH answered, when its NodePool on the management
// cluster reached 3 replicas and Ready, and when its update operation Succeeded.
func timePoolScales(ctx context.Context, b *testing.B, dsn, mode, sub, rg string, pools int) []poolTimes {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const ver = "2025-12-23-preview"
	poolPath := func(i int) string {
		return clusterPath(sub, rg, fmt.Sprintf("c%03d", i)) + "/nodePools/scale?api-version=" + ver
	}
	body := map[string]any{"location": region.Info.Location, "properties": map[string]any{
		"version":  map[string]any{"id": "4.19", "channelGroup": "stable"},
		"replicas": 2, "platform": map[string]any{"vmSize": "Standard_D8s_v3"},
	}}
	var async []string
	for i := range pools {
		r := armB(b, http.MethodPut, poolPath(i), body)
		if r.Status != http.StatusCreated {
			b.Fatalf("%s mode: PUT node pool %d: %d %s", mode, i, r.Status, r.Raw)
		}
		async = append(async, r.Header.Get("Azure-AsyncOperation"))
	}
	wait := time.Now().Add(3 * time.Minute)
	for i, a := range async {
		if st := waitOperationB(b, a, time.Until(wait)); st != "Succeeded" {
			b.Logf("%s mode: create of node pool %d is %q after 3 min; no node pool scale measured", mode, i, st)
			return nil
		}
	}

	var mu sync.Mutex
	ready := map[string]time.Time{} // "<cluster ID>" → NodePool at 3 replicas and Ready
	for _, mc := range region.Info.ManagementClusters {
		w, err := kubeClient(b, mc.Kubeconfig).Resource(nodePoolGVR).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatalf("watch nodepools on %s: %v", mc.Name, err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				now := time.Now()
				np, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Deleted || np.GetName() != "scale" || condition(*np, "Ready") != "True" {
					continue
				}
				if n, _, _ := unstructured.NestedInt64(np.Object, "status", "replicas"); n != 3 {
					continue
				}
				ns := np.GetNamespace()
				id := ns[strings.LastIndex(ns, "-")+1:]
				mu.Lock()
				if _, seen := ready[id]; !seen {
					ready[id] = now
				}
				mu.Unlock()
			}
		}()
	}
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		b.Fatalf("open document store: %v", err)
	}
	defer st.Close()
	updated := map[string]time.Time{} // lower-cased node pool ARM ID → update Succeeded seen
	go followUpdates(ctx, st, &mu, updated)

	patched := make([]time.Time, pools)
	tick := time.NewTicker(200 * time.Millisecond)
	for i := range pools {
		<-tick.C
		r := armB(b, http.MethodPatch, poolPath(i), map[string]any{"properties": map[string]any{"replicas": 3}})
		if r.Status != http.StatusAccepted {
			b.Fatalf("%s mode: PATCH node pool %d: %d %s", mode, i, r.Status, r.Raw)
		}
		patched[i] = time.Now()
	}
	tick.Stop()
	// The cluster ID of each pool's cluster, to join the NodePool's namespace.
	resp, err := clusterServiceB(b).ListClusters(ctx, csListRequest(sub))
	if err != nil {
		b.Fatalf("list clusters: %v", err)
	}
	clusterID := map[string]string{}
	for _, c := range resp.GetClusters() {
		clusterID[strings.ToLower(c.GetArmResourceId())] = c.GetId()
	}
	out := make([]poolTimes, pools)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		done := 0
		mu.Lock()
		for i := range pools {
			cpath := strings.ToLower(clusterPath(sub, rg, fmt.Sprintf("c%03d", i)))
			out[i] = poolTimes{patched: patched[i], ready: ready[clusterID[cpath]], succeeded: updated[cpath+"/nodepools/scale"]}
			if !out[i].succeeded.IsZero() {
				done++
			}
		}
		mu.Unlock()
		if done == pools {
			return out
		}
		if time.Now().After(deadline) {
			b.Logf("%s mode: %d of %d node pool scales succeeded after 3 min", mode, done, pools)
			return out
		}
		time.Sleep(time.Second)
	}
}

// followUpdates records when each update operation is first seen Succeeded on the feed, by its
// resource's ARM ID, lower-cased.
func followUpdates(ctx context.Context, st docstore.Store, mu *sync.Mutex, succeeded map[string]time.Time) {
	followOperations(ctx, st, armdoc.OperationUpdate, func(op *armdoc.OperationDocument) string { return strings.ToLower(op.ExternalID) }, mu, succeeded)
}

// poolStage returns, sorted, to − from over the pools that have both.
func poolStage(ps []poolTimes, from, to func(poolTimes) time.Time) []time.Duration {
	var out []time.Duration
	for _, p := range ps {
		if f, e := from(p), to(p); !f.IsZero() && !e.IsZero() {
			out = append(out, e.Sub(f))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// restoreRegion undoes what restartRegionWith did with flags, so the next benchmark in this
// process finds the region as TestMain brought it up: every Maestro server instance running,
// the Maestro server on PgBouncer when the region has one, Cluster Service on its own flags.
func restoreRegion(b *testing.B, flags []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, f := range flags {
		if strings.HasPrefix(f, "maestro-servers=") {
			if err := region.SetMaestroServers(ctx, region.MaestroServersProvisioned()); err != nil {
				b.Errorf("restore the Maestro servers: %v", err)
			}
			break
		}
	}
	for _, f := range flags {
		if strings.HasPrefix(f, "maestro-db=") && (region.Info.Postgres.BouncerAddr != "" || region.Info.Postgres.BouncerSocket != "") {
			if err := region.RestartMaestroServer(ctx, true); err != nil {
				b.Errorf("restore the Maestro server's pooled connection: %v", err)
			}
			break
		}
	}
	if _, err := niceManagementClusters(0); err != nil {
		b.Errorf("restore the management clusters' priority: %v", err)
	}
	if err := region.RestartWith(ctx, "cluster-service"); err != nil {
		b.Errorf("restart cluster-service with its own flags: %v", err)
	}
}

// restartRegionWith applies a benchmark variant's flags to the region: maestro-servers=N runs N
// Maestro server instances sharing the agents' status events (the region must be up with
// OPENHCP_E2E_MAESTRO_SERVERS ≥ N), maestro-db=pooled|direct restarts the Maestro server on the
// region's PgBouncer or straight to PostgreSQL, mgmt-nice=N gives every thread of the management
// clusters that nice value (niceManagementClusters; without it, 0), and every other flag goes to
// Cluster Service, which is restarted with them (and with none, its own flags).
func restartRegionWith(ctx context.Context, flags []string) error {
	var csFlags []string
	nice := 0 // the management clusters' nice value: the mode's mgmt-nice=N, or the default
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "mgmt-nice="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 19 {
				return fmt.Errorf("variant flag %s: want mgmt-nice=<0..19>", f)
			}
			nice = n
			continue
		}
		if v, ok := strings.CutPrefix(f, "maestro-servers="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("variant flag %s: want maestro-servers=<number>", f)
			}
			if err := region.SetMaestroServers(ctx, n); err != nil {
				return err
			}
			continue
		}
		v, ok := strings.CutPrefix(f, "maestro-db=")
		if !ok {
			csFlags = append(csFlags, f)
			continue
		}
		if v != "pooled" && v != "direct" {
			return fmt.Errorf("variant flag %s: want maestro-db=pooled or maestro-db=direct", f)
		}
		if err := region.RestartMaestroServer(ctx, v == "pooled"); err != nil {
			return err
		}
	}
	if _, err := niceManagementClusters(nice); err != nil {
		return err
	}
	if err := region.RestartWith(ctx, "cluster-service", csFlags...); err != nil {
		return fmt.Errorf("restart cluster-service with %v: %w", csFlags, err)
	}
	return nil
}
