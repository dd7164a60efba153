// Package upgrade tests a rolling upgrade of a local region: it starts the frontend, backend and
// Cluster Service of a previous commit, drives ARM traffic, and replaces them one at a time with
// the current build while the traffic runs (docs/architecture.md, Rolling upgrades).
package upgrade

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/test/internal/armclient"
)

const apiVersion = "2024-06-10-preview"

// TestRollingUpgrade starts a region whose frontend, backend and Cluster Service are the previous
// release's, creates clusters and a node pool through ARM, then, while a client creates, reads,
// scales and deletes through ARM, replaces Cluster Service, the backend and the frontend with the
// current build, one at a time. Every operation must end Succeeded and match what GET shows; the
// clusters ARM lists at the end must be exactly those created and not deleted; the clusters and
// node pool the old release wrote must read back through the new one; and no request may fail
// with a 5xx or a refused connection except while the frontend process itself is replaced.
func TestRollingUpgrade(t *testing.T) {
	if os.Getenv("OPENHCP_UPGRADE") != "1" {
		t.Skip("opt-in (make test-upgrade, OPENHCP_UPGRADE=1): builds a previous release and runs a region through its upgrade, minutes on this machine")
	}
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	from := previousRelease
	if v := os.Getenv("OPENHCP_UPGRADE_FROM"); v != "" {
		from = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	start := time.Now()
	old, commit, err := localregion.BuildRelease(ctx, root, from)
	if err != nil {
		t.Fatalf("build the previous release: %v", err)
	}
	t.Logf("previous release %s built (or cached) in %s", commit, time.Since(start).Round(time.Millisecond))

	dir, err := os.MkdirTemp("", "openhcp-upgrade-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755) // under root, PostgreSQL runs as postgres and must traverse it
	defer os.RemoveAll(dir)
	region, err := localregion.Up(ctx, localregion.Config{
		StateDir:           dir,
		ManagementClusters: 1,
		Sim:                localregion.SimConfig{AvailableDelay: 2 * time.Second, DeleteDelay: time.Second, HostedAPIServers: -1},
		BackendResync:      5 * time.Second,
		ServiceBinaries:    old,
		Progress:           os.Stderr,
	})
	if err != nil {
		dumpLogs(filepath.Join(dir, "logs"))
		t.Fatalf("bring up a region on release %s: %v", commit, err)
	}
	defer region.Stop()
	defer func() {
		if t.Failed() {
			dumpLogs(region.Info.LogDir)
		}
	}()
	for _, svc := range upgradedServices {
		if left := region.FlagsLeftOut(svc); len(left) > 0 {
			t.Logf("%s of %s started without the flags added since: %s", svc, commit, strings.Join(left, ", "))
		}
	}
	hc, err := region.Info.Frontend.HTTPClient(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &armClient{http: hc, base: region.Info.Frontend.URL}

	sub, rg := uuid.NewString(), "rg-upgrade"
	mustStatus(t, c.do(ctx, http.MethodPut, "/subscriptions/"+sub+"?api-version=2.0", map[string]any{
		"state": "Registered", "registrationDate": time.Now().UTC().Format(time.RFC3339),
		"properties": map[string]any{"tenantId": uuid.NewString()},
	}), http.StatusOK, http.StatusCreated)

	// Written by the previous release: two clusters and a node pool.
	w := &workload{t: t, c: c, sub: sub, rg: rg, location: region.Info.Location, live: map[string]bool{}}
	w.create(ctx, "before-0")
	if w.failed() {
		t.Fatalf("the previous release did not serve its first cluster: %v", w.errs)
	}
	w.create(ctx, "before-1")
	w.createPool(ctx, "before-0", "workers", 1)
	if w.failed() {
		t.Fatalf("the previous release did not serve the first clusters: %v", w.errs)
	}

	// Traffic: one client, as a user would, one operation after the other.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("live-%d", i)
			w.create(ctx, name)
			w.scale(ctx, "before-0", "workers", i%3+1)
			if i > 0 {
				w.delete(ctx, fmt.Sprintf("live-%d", i-1))
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()

	for _, svc := range upgradedServices {
		// Each step starts while operations of the previous one run and is followed by more.
		w.waitOps(ctx, w.opCount()+2)
		if svc == localregion.ServiceFrontend {
			c.replacing.Store(true)
		}
		t.Logf("replace %s with the current build (operations so far: %d)", svc, w.opCount())
		if err := region.RestartBinary(ctx, svc, region.OwnBinary(svc)); err != nil {
			t.Fatalf("replace %s: %v", svc, err)
		}
		c.replacing.Store(false)
		if left := region.FlagsLeftOut(svc); len(left) > 0 {
			t.Fatalf("the current %s was started without %v", svc, left)
		}
	}
	w.waitOps(ctx, w.opCount()+3)
	close(stop)
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the traffic did not end")
	}

	for _, e := range w.errs {
		t.Error(e)
	}
	for _, u := range c.unavailable() {
		t.Errorf("unavailable outside the frontend's replacement: %s", u)
	}

	// No cluster lost or duplicated: ARM lists exactly those created and not deleted.
	listed := c.listClusters(ctx, t, sub, rg)
	var want []string
	for name := range w.live {
		want = append(want, name)
	}
	sort.Strings(want)
	if strings.Join(listed, ",") != strings.Join(want, ",") {
		t.Errorf("ARM lists clusters %v, want %v", listed, want)
	}
	// What the previous release wrote reads back through the current one.
	for _, name := range []string{"before-0", "before-1"} {
		r := c.do(ctx, http.MethodGet, w.clusterPath(name), nil)
		if r.Status != http.StatusOK || provisioningState(r.Body) != "Succeeded" {
			t.Errorf("cluster %s written by the previous release: %d %s", name, r.Status, r.Raw)
		}
	}
	t.Logf("%d operations, %d unavailable answers while the frontend was replaced", w.opCount(), c.tolerated.Load())
}

// workload drives ARM and checks each operation against what GET shows afterwards.
type workload struct {
	t       *testing.T
	c       *armClient
	sub, rg string

	location string

	mu   sync.Mutex
	ops  int
	live map[string]bool
	errs []string
}

func (w *workload) clusterPath(name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/%s", w.sub, w.rg, name)
}

func (w *workload) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
}

func (w *workload) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.errs) > 0
}

func (w *workload) opCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ops
}

// waitOps waits until n operations have ended, or the context ends.
func (w *workload) waitOps(ctx context.Context, n int) {
	for w.opCount() < n && ctx.Err() == nil && !w.failed() {
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// operation follows an accepted request's Azure-AsyncOperation to its end, which must be
// Succeeded.
func (w *workload) operation(ctx context.Context, what string, r armResponse, accepted ...int) bool {
	ok := false
	for _, s := range accepted {
		ok = ok || r.Status == s
	}
	async := r.Header.Get("Azure-AsyncOperation")
	if !ok || async == "" {
		w.fail("%s: answered %d (Azure-AsyncOperation %q): %s", what, r.Status, async, r.Raw)
		return false
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		s := w.c.doURL(ctx, http.MethodGet, async, nil)
		if s.Status != http.StatusOK {
			w.fail("%s: operation status %d: %s", what, s.Status, s.Raw)
			return false
		}
		switch s.Body["status"] {
		case "Succeeded":
			w.mu.Lock()
			w.ops++
			w.mu.Unlock()
			return true
		case "Failed", "Canceled":
			w.fail("%s: operation ended %v: %v", what, s.Body["status"], s.Body["error"])
			return false
		}
		time.Sleep(time.Second)
	}
	w.fail("%s: operation %s not terminal in 3m", what, async)
	return false
}

func (w *workload) create(ctx context.Context, name string) {
	path := w.clusterPath(name)
	if !w.operation(ctx, "create "+name, w.c.do(ctx, http.MethodPut, path, clusterBody(w.location, w.sub, w.rg)), http.StatusCreated) {
		return
	}
	r := w.c.do(ctx, http.MethodGet, path, nil)
	if r.Status != http.StatusOK || provisioningState(r.Body) != "Succeeded" {
		w.fail("GET %s after its create Succeeded: %d %s", name, r.Status, r.Raw)
		return
	}
	w.mu.Lock()
	w.live[name] = true
	w.mu.Unlock()
}

func (w *workload) delete(ctx context.Context, name string) {
	path := w.clusterPath(name)
	if !w.operation(ctx, "delete "+name, w.c.do(ctx, http.MethodDelete, path, nil), http.StatusAccepted) {
		return
	}
	if r := w.c.do(ctx, http.MethodGet, path, nil); r.Status != http.StatusNotFound {
		w.fail("GET %s after its delete Succeeded: %d, want 404: %s", name, r.Status, r.Raw)
		return
	}
	w.mu.Lock()
	delete(w.live, name)
	w.mu.Unlock()
}

func (w *workload) createPool(ctx context.Context, cluster, pool string, replicas int) {
	path := w.clusterPath(cluster) + "/nodePools/" + pool
	body := map[string]any{"location": w.location, "properties": map[string]any{
		"version": map[string]any{"id": "4.19", "channelGroup": "stable"}, "replicas": replicas,
		"platform": map[string]any{"vmSize": "Standard_D8s_v3"}}}
	if w.operation(ctx, "create node pool "+pool, w.c.do(ctx, http.MethodPut, path, body), http.StatusCreated) {
		w.checkReplicas(ctx, path, replicas)
	}
}

func (w *workload) scale(ctx context.Context, cluster, pool string, replicas int) {
	path := w.clusterPath(cluster) + "/nodePools/" + pool
	r := w.c.do(ctx, http.MethodPatch, path, map[string]any{"properties": map[string]any{"replicas": replicas}})
	if w.operation(ctx, fmt.Sprintf("scale %s to %d", pool, replicas), r, http.StatusAccepted, http.StatusOK) {
		w.checkReplicas(ctx, path, replicas)
	}
}

func (w *workload) checkReplicas(ctx context.Context, path string, want int) {
	r := w.c.do(ctx, http.MethodGet, path, nil)
	props, _ := r.Body["properties"].(map[string]any)
	if r.Status != http.StatusOK || props["replicas"] != float64(want) || props["provisioningState"] != "Succeeded" {
		w.fail("GET %s: %d %s, want replicas %d Succeeded", path, r.Status, r.Raw, want)
	}
}

// armClient calls the frontend as ARM and an SDK would: a 429, a 5xx or a refused connection is
// retried with backoff. Each such answer is recorded; only those while replacing is set (the
// frontend process itself is being replaced) are tolerated.
type armClient struct {
	http      *http.Client
	base      string
	replacing atomic.Bool
	tolerated atomic.Int64

	mu      sync.Mutex
	outages []string
}

type armResponse = armclient.Response

func (c *armClient) unavailable() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.outages...)
}

func (c *armClient) do(ctx context.Context, method, path string, body any) armResponse {
	u := c.base + path
	if !strings.Contains(path, "api-version=") {
		u += "?api-version=" + apiVersion
	}
	return c.doURL(ctx, method, u, body)
}

func (c *armClient) doURL(ctx context.Context, method, u string, body any) armResponse {
	p := armclient.Retry{For: 3 * time.Minute, First: 250 * time.Millisecond, Max: 4 * time.Second, Seen: func(r armResponse) {
		if r.Status != 0 && r.Status < 500 && r.Err == nil {
			return
		}
		what := fmt.Sprintf("%s %s at %s: ", method, u, r.At.Format("15:04:05.000"))
		if r.Status == 0 || r.Err != nil {
			what += r.Err.Error()
		} else {
			what += fmt.Sprintf("%d %.300s", r.Status, r.Raw)
		}
		if c.replacing.Load() {
			c.tolerated.Add(1)
		} else {
			c.mu.Lock()
			c.outages = append(c.outages, what)
			c.mu.Unlock()
		}
	}}
	r, _ := p.Do(ctx, c.http, method, u, body)
	return r
}

// listClusters returns the names ARM lists in the resource group, following nextLink; a name
// listed twice is listed twice.
func (c *armClient) listClusters(ctx context.Context, t *testing.T, sub, rg string) []string {
	var names []string
	u := c.base + fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version=%s", sub, rg, apiVersion)
	for u != "" {
		r := c.doURL(ctx, http.MethodGet, u, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("list clusters: %d %s", r.Status, r.Raw)
		}
		values, _ := r.Body["value"].([]any)
		for _, v := range values {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			names = append(names, name)
		}
		u, _ = r.Body["nextLink"].(string)
	}
	sort.Strings(names)
	return names
}

func mustStatus(t *testing.T, r armResponse, want ...int) {
	t.Helper()
	for _, s := range want {
		if r.Status == s {
			return
		}
	}
	t.Fatalf("answered %d, want %v: %s", r.Status, want, r.Raw)
}

func provisioningState(body map[string]any) any {
	props, _ := body["properties"].(map[string]any)
	return props["provisioningState"]
}

// clusterBody is a valid create body for apiVersion.
func clusterBody(location, sub, rg string) map[string]any {
	return armclient.ClusterBody(location, sub, rg, nil)
}

// dumpLogs prints the tail of our services' logs, so a failure can be diagnosed from its output.
func dumpLogs(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		for _, s := range []string{"cluster-service", "backend", "frontend"} {
			if strings.HasPrefix(e.Name(), s) {
				fmt.Fprintf(os.Stderr, "\n===== %s (tail) =====\n%s\n", e.Name(), mgmtcluster.FileTail(filepath.Join(dir, e.Name()), 3000))
			}
		}
	}
}
