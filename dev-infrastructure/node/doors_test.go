package node

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/encryptionconfig"
)

// checkEveryDoorOfTheNamespaceIsShut lists every listening socket in the node's namespace and
// knocks on each without a client certificate: none may hand anything out unless the node
// documents why (Exemption). A plain HTTP listener planted in the namespace first shows the probe
// finds an open door.
func checkEveryDoorOfTheNamespaceIsShut(t *testing.T, ctx context.Context, n *Node) {
	t.Helper()
	planted := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "open") })}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = planted.Serve(hl) }()
	plantCtx, stopPlant := context.WithCancel(ctx)
	plantedAddr, err := n.Netns.Expose(plantCtx, "127.0.0.1:0", hl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ls, err := n.Listeners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range ls {
		if l.Addr != plantedAddr {
			continue
		}
		found = true
		why, _ := n.Exemption(l)
		if open := n.Knock(ctx, l); len(open) == 0 || why != "" {
			t.Errorf("the probe missed a planted open door %s: findings %v, exemption %q", l, open, why)
		}
	}
	if !found {
		t.Errorf("the planted listener %s is not among the namespace's listeners %v", plantedAddr, ls)
	}
	stopPlant()
	planted.Close()

	open, probed, err := n.OpenDoors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probed {
		t.Logf("probed %s", p)
	}
	podListeners := 0
	for _, p := range probed {
		if strings.Contains(p, " in pod ") {
			podListeners++
		}
	}
	for _, f := range open {
		if f.Listener.Addr != plantedAddr { // its relay may still be closing
			t.Errorf("open door: %s", f)
		}
	}
	// The node runs etcd (3), the apiserver, controller-manager, scheduler, kubelet (2),
	// kube-proxy (2) and CoreDNS (DNS, health, ready) at least.
	if len(probed) < 12 || podListeners < 3 {
		t.Errorf("probed %d listeners (%d in pods), fewer than the node runs: %v", len(probed), podListeners, probed)
	}
}

// checkSecretsAreSealedInEtcd creates a Secret through the apiserver and reads its key raw from
// etcd's v3 JSON API with the apiserver's etcd client certificate: the stored value must be
// sealed by the node's EncryptionConfiguration and not hold the Secret's value in clear.
func checkSecretsAreSealedInEtcd(t *testing.T, ctx context.Context, n *Node) {
	t.Helper()
	const value = "node-secret-value-in-clear"
	if _, err := n.Kubectl(ctx, "create", "secret", "generic", "sealed", "-n", "default", "--from-literal=v="+value); err != nil {
		t.Fatal(err)
	}
	pkiDir := filepath.Join(n.Dir, "pki")
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: n.Netns.DialContext, TLSClientConfig: etcdTLS(t, pkiDir, "apiserver-etcd-client")}}
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte("/registry/secrets/default/sealed"))})
	resp, err := c.Post(fmt.Sprintf("https://127.0.0.1:%d/v3/kv/range", etcdPort), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("etcd range: %v", err)
	}
	defer resp.Body.Close()
	var got struct {
		Kvs []struct{ Value []byte } `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Kvs) != 1 {
		t.Fatalf("etcd range of the Secret: %s, %d keys, %v", resp.Status, len(got.Kvs), err)
	}
	stored := got.Kvs[0].Value
	if !bytes.HasPrefix(stored, []byte(encryptionconfig.Prefix)) {
		t.Errorf("the Secret is stored as %.40q, want it sealed (%s...)", stored, encryptionconfig.Prefix)
	}
	if bytes.Contains(stored, []byte(value)) {
		t.Errorf("the Secret's value is in etcd in clear")
	}
}

// TestAPodDoorAllowsItsPathsOverTLSOnly: a PodDoor lets its program's port answer its paths over
// TLS, and nothing else: not over plaintext HTTP, not another path, port or program, and not a
// listener of the node's own namespace.
func TestAPodDoorAllowsItsPathsOverTLSOnly(t *testing.T) {
	doors := []PodDoor{{Process: "frontend", Port: 9443, Paths: []string{"/metrics"}, Reason: "metrics over TLS"}}
	pod := Listener{Addr: "*:9443", Process: "frontend", PodIP: "10.88.0.5"}
	n := &Node{}
	for _, tc := range []struct {
		name string
		f    Finding
		want bool
	}{
		{"its path over TLS", Finding{Listener: pod, Scheme: "https", Path: "/metrics"}, true},
		{"a health path over plaintext (every pod's)", Finding{Listener: pod, Scheme: "http", Path: "/healthz"}, true},
		{"its path over plaintext HTTP", Finding{Listener: pod, Scheme: "http", Path: "/metrics"}, false},
		{"another path over TLS", Finding{Listener: pod, Scheme: "https", Path: "/debug/pprof/"}, false},
		{"another port of the program", Finding{Listener: Listener{Addr: "*:8443", Process: "frontend", PodIP: "10.88.0.5"}, Scheme: "https", Path: "/metrics"}, false},
		{"another program on the port", Finding{Listener: Listener{Addr: "*:9443", Process: "backend", PodIP: "10.88.0.6"}, Scheme: "https", Path: "/metrics"}, false},
		{"the node's own namespace", Finding{Listener: Listener{Addr: "10.88.0.1:9443", Process: "frontend"}, Scheme: "https", Path: "/metrics"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, paths := n.Exemption(tc.f.Listener)
			if got := allowed(tc.f, why, paths, doors); got != tc.want {
				t.Errorf("allowed(%s) = %v, want %v", tc.f, got, tc.want)
			}
		})
	}
}
