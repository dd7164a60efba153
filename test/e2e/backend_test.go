package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// These tests break the backend's surroundings in the shared region: the backend process
// itself, its replicas, its deadline and Cluster Service. Each one leaves the region's own
// "backend" running as it found it.

// putCluster creates a cluster as ARM would, optionally with Azure-AsyncNotificationUri, and
// returns the Azure-AsyncOperation URL and the operation ID.
func putCluster(t *testing.T, sub, rg, name, notifyURI string) (asyncURL, opID string) {
	t.Helper()
	b, _ := json.Marshal(clusterBody(sub, rg))
	u := region.Info.Frontend.URL + clusterPath(sub, rg, name) + "?api-version=" + apiVersion
	req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-ms-correlation-request-id", uuid.NewString())
	if notifyURI != "" {
		req.Header.Set("Azure-AsyncNotificationUri", notifyURI)
	}
	resp := doARM(t, req)
	if resp.Status != http.StatusCreated {
		t.Fatalf("PUT %s: got %d, want 201: %s", name, resp.Status, resp.Raw)
	}
	asyncURL = resp.Header.Get("Azure-AsyncOperation")
	return asyncURL, operationID(asyncURL)
}

func operationID(asyncURL string) string {
	p := strings.SplitN(asyncURL, "?", 2)[0]
	return p[strings.LastIndex(p, "/")+1:]
}

// deleteCluster deletes a cluster and waits for the delete to succeed, so the shards' capacity
// is given back.
func deleteCluster(t *testing.T, sub, rg, name string) {
	t.Helper()
	del := arm(t, http.MethodDelete, clusterPath(sub, rg, name), nil)
	if del.Status == http.StatusNoContent {
		return
	}
	if del.Status != http.StatusAccepted {
		t.Fatalf("DELETE %s: got %d: %s", name, del.Status, del.Raw)
	}
	if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("delete of %s ended %v: %v", name, final["status"], final["error"])
	}
}

// metric reads one unlabelled sample from a Prometheus text endpoint; -1 when it is absent.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var v float64
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			if _, err := fmt.Sscan(f[1], &v); err == nil {
				return v
			}
		}
	}
	return -1
}

// finishedCount counts the "operation finished" log lines for opID across every backend
// replica's log: a second one would mean the operation was processed twice.
func finishedCount(t *testing.T, opID string) int {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(region.Info.LogDir, "backend*.log"))
	n := 0
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct {
				Msg       string `json:"msg"`
				Operation string `json:"operationID"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "operation finished" && line.Operation == opID {
				n++
			}
		}
		f.Close()
	}
	return n
}

// stopBackend stops the region's backend gracefully (it releases the lease) and starts it
// again when the test ends.
func stopBackend(t *testing.T) {
	t.Helper()
	p, err := region.Process("backend")
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(10 * time.Second)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := region.Restart(ctx, "backend"); err != nil {
			t.Errorf("restart the region's backend: %v", err)
		}
	})
}

// startReplica starts another backend process and stops it gracefully when the test ends.
func startReplica(t *testing.T, name string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := region.StartBackend(ctx, name, extra...)
	if err != nil {
		t.Fatalf("start backend %s: %v", name, err)
	}
	t.Cleanup(func() {
		if p, err := region.Process(name); err == nil {
			p.Stop(10 * time.Second)
		}
	})
	return info.MetricsURL
}

func TestBackendKilledMidOperationFinishesItAfterRestart(t *testing.T) {
	needsOwnRegion(t, "kills and restarts its backend")
	sub, rg := uuid.NewString(), "rg-backend-kill"
	registerSubscription(t, sub)
	async, opID := putCluster(t, sub, rg, "c1", "")
	if err := region.Kill("backend"); err != nil {
		t.Fatalf("kill backend: %v", err)
	}
	// The cluster becomes Available (3 s in this region) while no backend runs.
	time.Sleep(8 * time.Second)
	if st := armURL(t, http.MethodGet, async, nil).Body["status"]; st == "Succeeded" || st == "Failed" || st == "Canceled" {
		t.Fatalf("operation ended %v with no backend running", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := region.Restart(ctx, "backend"); err != nil {
		t.Fatalf("restart backend: %v", err)
	}
	// The killed process still holds the lease: the new one waits it out (15 s) first.
	if final := waitOperation(t, async, 2*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("operation after a backend crash ended %v: %v", final["status"], final["error"])
	}
	if n := finishedCount(t, opID); n != 1 {
		t.Errorf("operation finished %d times in the backend logs, want 1", n)
	}
	deleteCluster(t, sub, rg, "c1")
}

func TestBackendLeaderKilledHandsOverWithinTheLease(t *testing.T) {
	needsOwnRegion(t, "kills its backend leader and starts replicas")
	var mu sync.Mutex
	got := map[string]int{}
	// An HTTPS receiver on 127.0.0.1: the region's backends allow that address
	// (--notification-allowed-cidrs), and backend-2 trusts the receiver's certificate.
	rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got[r.URL.Path+" "+body.Name+" "+body.Status]++
		mu.Unlock()
	}))
	defer rcv.Close()

	rcvCA := filepath.Join(t.TempDir(), "receiver-ca.crt")
	if err := os.WriteFile(rcvCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	// The region's backend leads; a second replica, which will post the notifications, waits.
	second := startReplica(t, "backend-2", "--notification-ca", rcvCA)
	time.Sleep(3 * time.Second)
	if l1, l2 := metric(t, region.Info.Backend.MetricsURL, "backend_leader"), metric(t, second, "backend_leader"); l1 != 1 || l2 != 0 {
		t.Fatalf("backend_leader: backend %v, backend-2 %v; want 1 and 0", l1, l2)
	}

	sub, rg := uuid.NewString(), "rg-backend-failover"
	registerSubscription(t, sub)
	const n = 3
	var asyncs, ops []string
	for i := range n {
		a, op := putCluster(t, sub, rg, fmt.Sprintf("c%d", i), fmt.Sprintf("%s/notify/%d", rcv.URL, i))
		asyncs, ops = append(asyncs, a), append(ops, op)
	}
	killed := time.Now()
	if err := region.Kill("backend"); err != nil {
		t.Fatalf("kill backend: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := region.Restart(ctx, "backend"); err != nil {
			t.Errorf("restart backend: %v", err)
		}
	})
	eventually(t, 30*time.Second, "backend-2 leads", func() error {
		if v := metric(t, second, "backend_leader"); v != 1 {
			return fmt.Errorf("backend_leader of backend-2 is %v", v)
		}
		return nil
	})
	took := time.Since(killed)
	t.Logf("backend-2 took over %s after the leader was killed (lease 15s)", took.Round(100*time.Millisecond))
	// One lease period (15 s) plus the candidate's retry period (1.5 s) and this poll.
	if took > 18*time.Second {
		t.Errorf("hand-over took %s, longer than the lease period and one retry", took)
	}
	for i, a := range asyncs {
		if final := waitOperation(t, a, 2*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("operation %d ended %v: %v", i, final["status"], final["error"])
		}
	}
	eventually(t, 30*time.Second, "one notification per operation", func() error {
		mu.Lock()
		defer mu.Unlock()
		for i, op := range ops {
			if c := got[fmt.Sprintf("/notify/%d %s Succeeded", i, op)]; c != 1 {
				return fmt.Errorf("operation %d notified %d times: %v", i, c, got)
			}
		}
		return nil
	})
	time.Sleep(6 * time.Second) // a resync later, still nothing repeated
	mu.Lock()
	if len(got) != n {
		t.Errorf("notifications received: %v, want exactly one per operation", got)
	}
	for k, c := range got {
		if c != 1 {
			t.Errorf("notification %q received %d times", k, c)
		}
	}
	mu.Unlock()
	for _, op := range ops {
		if c := finishedCount(t, op); c != 1 {
			t.Errorf("operation %s finished %d times across the replicas' logs, want 1", op, c)
		}
	}
	for i := range n {
		deleteCluster(t, sub, rg, fmt.Sprintf("c%d", i))
	}
}

func TestStuckClusterFailsAtItsDeadline(t *testing.T) {
	needsOwnRegion(t, "restarts its backend with another --create-deadline")
	const deadline = 30 * time.Second
	stopBackend(t)
	startReplica(t, "backend-deadline", "--create-deadline", deadline.String())

	sub, rg := uuid.NewString(), "rg-stuck"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "stuck")
	start := time.Now()
	async, _ := putCluster(t, sub, rg, "stuck", "")
	// Tell hypershift-sim this cluster never becomes Available, before its 3 s rollout ends.
	var annotated bool
	for !annotated && time.Since(start) < 10*time.Second {
		for _, c := range csClusters(t, path) {
			if c.GetShard() == "" {
				continue
			}
			mc := managementCluster(t, c.GetShard())
			for _, hc := range hostedClusters(t, mc, c.GetId()) {
				if condition(hc, "Available") == "True" {
					t.Fatalf("HostedCluster became Available before it could be marked stuck")
				}
				patch := []byte(`{"metadata":{"annotations":{"hypershift-sim.openhcp.io/stuck":"true"}}}`)
				if _, err := kube(t, mc).Resource(hostedClusterGVR).Namespace(hc.GetNamespace()).Patch(context.Background(), hc.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					t.Fatalf("annotate HostedCluster: %v", err)
				}
				annotated = true
			}
		}
		if !annotated {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !annotated {
		t.Fatal("no HostedCluster appeared within 10s")
	}
	final := waitOperation(t, async, deadline+time.Minute)
	took := time.Since(start)
	errBody, _ := final["error"].(map[string]any)
	if final["status"] != "Failed" || errBody["code"] != "OperationTimedOut" {
		t.Fatalf("stuck create ended %v with %v, want Failed OperationTimedOut", final["status"], final["error"])
	}
	if took < deadline {
		t.Errorf("stuck create failed after %s, before its %s deadline", took, deadline)
	}
	get := arm(t, http.MethodGet, path, nil)
	if ps := get.Body["properties"].(map[string]any)["provisioningState"]; ps != "Failed" {
		t.Errorf("resource provisioningState after the deadline = %v, want Failed", ps)
	}
	t.Logf("stuck create failed %s after it started (deadline %s)", took.Round(100*time.Millisecond), deadline)
	deleteCluster(t, sub, rg, "stuck")
}

func TestClusterServiceOutageDelaysButDoesNotFailOperations(t *testing.T) {
	needsOwnRegion(t, "kills and restarts its Cluster Service")
	sub, rg := uuid.NewString(), "rg-cs-outage"
	registerSubscription(t, sub)
	async, opID := putCluster(t, sub, rg, "c1", "")
	if err := region.Kill("cluster-service"); err != nil {
		t.Fatalf("kill cluster-service: %v", err)
	}
	down := time.Now()
	restarted := false
	restart := func() {
		if restarted {
			return
		}
		restarted = true
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := region.Restart(ctx, "cluster-service"); err != nil {
			t.Fatalf("restart cluster-service: %v", err)
		}
	}
	defer restart()
	for time.Since(down) < 30*time.Second {
		if st := armURL(t, http.MethodGet, async, nil).Body["status"]; st == "Succeeded" || st == "Failed" || st == "Canceled" {
			t.Fatalf("operation ended %v while Cluster Service was down", st)
		}
		time.Sleep(2 * time.Second)
	}
	restart()
	if final := waitOperation(t, async, 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("operation after a 30 s Cluster Service outage ended %v: %v", final["status"], final["error"])
	}
	if n := finishedCount(t, opID); n != 1 {
		t.Errorf("operation finished %d times in the backend logs, want 1", n)
	}
	deleteCluster(t, sub, rg, "c1")
}
