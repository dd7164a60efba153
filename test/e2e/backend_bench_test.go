package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pki"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
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

// timeCreates creates n clusters through ARM at 5/s in a fresh subscription and returns, sorted,
// for each the time from its HostedCluster turning Available to its create operation turning
// Succeeded, and the backend's share of it (Cluster Service's READY write → Succeeded); then it
// deletes them. dsn reads the document store as the backend (PGPASSFILE set by the caller).
func timeCreates(ctx context.Context, b *testing.B, dsn, mode string, benchClusters int) (total, backend []time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	available := map[string]time.Time{} // CS cluster ID → Available seen
	succeeded := map[string]time.Time{} // CS cluster ID → create Succeeded seen
	watchHostedClusters(ctx, b, func(ev watch.Event, now time.Time) {
		hc, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Deleted || condition(*hc, "Available") != "True" {
			return
		}
		ns := hc.GetNamespace()
		id := ns[strings.LastIndex(ns, "-")+1:]
		mu.Lock()
		if _, seen := available[id]; !seen {
			available[id] = now
		}
		mu.Unlock()
	})
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		b.Fatalf("open document store: %v", err)
	}
	defer st.Close()
	go followSucceeded(ctx, st, &mu, succeeded)

	sub, rg := uuid.NewString(), "rg-bench-"+mode
	registerSubscriptionB(b, sub)
	// Paced at 5 creates/s, well under Maestro's ≈62/s, so queueing upstream stays small.
	tick := time.NewTicker(200 * time.Millisecond)
	for i := range benchClusters {
		<-tick.C
		r := armB(b, http.MethodPut, clusterPath(sub, rg, fmt.Sprintf("c%03d", i)), clusterBody(sub, rg))
		if r.Status != http.StatusCreated {
			b.Fatalf("PUT cluster %d: %d %s", i, r.Status, r.Raw)
		}
	}
	tick.Stop()
	ids := map[string]bool{}
	readyAt := map[string]time.Time{}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := clusterServiceB(b).ListClusters(ctx, csListRequest(sub))
		if err != nil {
			b.Fatalf("list clusters: %v", err)
		}
		for _, c := range resp.GetClusters() {
			ids[c.GetId()] = true
			if c.GetStatus().GetState() == csv1.ClusterState_CLUSTER_STATE_READY {
				if _, ok := readyAt[c.GetId()]; !ok {
					readyAt[c.GetId()] = c.GetUpdateTime().AsTime()
				}
			}
		}
		mu.Lock()
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
			b.Fatalf("%s mode: %d of %d creates succeeded after 5 min", mode, done, benchClusters)
		}
		time.Sleep(time.Second)
	}
	var out []time.Duration
	mu.Lock()
	for id := range ids {
		a, ok := available[id]
		if !ok {
			continue // Available came before the watch: never, as the watch starts first
		}
		out = append(out, succeeded[id].Sub(a))
		if r, ok := readyAt[id]; ok && !succeeded[id].Before(r) {
			backend = append(backend, succeeded[id].Sub(r))
		}
	}
	mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	sort.Slice(backend, func(i, j int) bool { return backend[i] < backend[j] })
	if len(out) < benchClusters {
		b.Fatalf("%s mode: Available seen for %d of %d clusters", mode, len(out), benchClusters)
	}

	b.Logf("%s mode: Available → Succeeded p50 %s p90 %s p99 %s max %s over %d clusters", mode, pct(out, 50), pct(out, 90), pct(out, 99), out[len(out)-1].Round(time.Millisecond), len(out))
	if len(backend) > 0 {
		b.Logf("%s mode: CS READY write → Succeeded p50 %s p90 %s p99 %s max %s over %d clusters", mode, pct(backend, 50), pct(backend, 90), pct(backend, 99), backend[len(backend)-1].Round(time.Millisecond), len(backend))
	}

	// Give the shards' capacity back before the next mode. A delete that does not finish is
	// reported, not fatal: it is not what this measures, and the shards have room for it.
	var delAsync []string
	for i := range benchClusters {
		r := armB(b, http.MethodDelete, clusterPath(sub, rg, fmt.Sprintf("c%03d", i)), nil)
		if r.Status != http.StatusAccepted {
			b.Fatalf("DELETE cluster %d: %d %s", i, r.Status, r.Raw)
		}
		delAsync = append(delAsync, r.Header.Get("Azure-AsyncOperation"))
	}
	wait := time.Now().Add(90 * time.Second)
	for i, a := range delAsync {
		if st := waitOperationB(b, a, time.Until(wait)); st != "Succeeded" {
			b.Logf("%s mode: delete of c%03d is %q after 90 s; cluster service: %s", mode, i, st, csState(ctx, b, sub, rg, i))
		}
	}
	return out, backend
}

// followSucceeded records when each create operation is first seen Succeeded on the feed.
func followSucceeded(ctx context.Context, st docstore.Store, mu *sync.Mutex, succeeded map[string]time.Time) {
	var checkpoint int64
	for ctx.Err() == nil {
		changes, err := st.Changes(ctx, checkpoint, 1000)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		now := time.Now()
		for _, ch := range changes {
			checkpoint = ch.Seq
			if ch.Deleted || ch.Doc == nil || ch.Doc.Type != docstore.TypeOperation {
				continue
			}
			var op armdoc.OperationDocument
			if json.Unmarshal(ch.Doc.Body, &op) != nil || op.Request != armdoc.OperationCreate || op.Status != armdoc.StateSucceeded {
				continue
			}
			mu.Lock()
			if _, seen := succeeded[op.InternalID]; !seen {
				succeeded[op.InternalID] = now
			}
			mu.Unlock()
		}
		if len(changes) == 1000 {
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
// on the shared region with the backend in its default watch mode: Cluster Service is restarted
// with the mode's flag, FEEDBACK_BENCH_CLUSTERS (default 100) clusters are created through ARM
// at 5/s, and HostedCluster Available → ARM Succeeded is timed as in BenchmarkStatusModes.
// Watch runs first; FEEDBACK_BENCH_POLL_FIRST=1 runs the baseline first.
// Run: go test ./test/e2e -run '^$' -bench FeedbackModes -benchtime 1x -timeout 30m
func BenchmarkFeedbackModes(b *testing.B) {
	n := benchClusters
	if v := os.Getenv("FEEDBACK_BENCH_CLUSTERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("FEEDBACK_BENCH_CLUSTERS=%q is not a positive number", v)
		}
	}
	db, err := region.Info.Postgres.Role("backend")
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("PGPASSFILE", db.PassFile)
	ctx := context.Background()
	defer func() {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		if err := region.RestartWith(rctx, "cluster-service"); err != nil {
			b.Errorf("restart cluster-service: %v", err)
		}
	}()
	modes := []struct{ name, flag string }{{"watch", "--feedback-watch=true"}, {"poll", "--feedback-watch=false"}}
	if os.Getenv("FEEDBACK_BENCH_POLL_FIRST") != "" { // to see what the order costs
		modes[0], modes[1] = modes[1], modes[0]
	}
	for i := 0; i < b.N; i++ {
		results := map[string][]time.Duration{}
		for _, m := range modes {
			rctx, rcancel := context.WithTimeout(ctx, time.Minute)
			err := region.RestartWith(rctx, "cluster-service", m.flag)
			rcancel()
			if err != nil {
				b.Fatalf("restart cluster-service with %s: %v", m.flag, err)
			}
			results[m.name], _ = timeCreates(ctx, b, db.DSN, "feedback-"+m.name, n)
		}
		b.Logf("time from HostedCluster Available to ARM Succeeded, %d clusters per feedback mode:", n)
		b.Logf("| feedback | n | p50 | p90 | p99 | max |")
		for _, m := range modes {
			d := results[m.name]
			b.Logf("| %s | %d | %s | %s | %s | %s |", m.name, len(d), pct(d, 50), pct(d, 90), pct(d, 99), d[len(d)-1].Round(time.Millisecond))
			b.ReportMetric(float64(pct(d, 50).Milliseconds()), m.name+"-p50-ms")
			b.ReportMetric(float64(pct(d, 99).Milliseconds()), m.name+"-p99-ms")
		}
		w, p := results["watch"], results["poll"]
		b.Logf("watch/poll ratio: p50 %.3f, p99 %.3f", float64(pct(w, 50))/float64(pct(p, 50)), float64(pct(w, 99))/float64(pct(p, 99)))
	}
}
