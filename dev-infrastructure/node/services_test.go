package node

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
)

// hostNetfilter is the host's whole nftables ruleset (iptables-nft writes there too): kube-proxy
// runs in the node's namespace, so none of its rules may appear here.
func hostNetfilter(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Skipf("nft list ruleset: %v: %s (run make deps)", err, out)
	}
	return string(out)
}

// checkServicesAndOutside proves kube-proxy and CoreDNS: a pod reaches a ClusterIP Service of two
// replicas by its DNS name, and a host loopback service through ExposeHost; the host resolves
// the Service's name through the cluster DNS from inside the namespace.
// It returns the probe image (loaded into the node) for the checks that follow.
func checkServicesAndOutside(t *testing.T, ctx context.Context, n *Node) images.Image {
	img, dir := buildTestImage(t, ctx, images.Spec{Name: "node-probe",
		Package: "github.com/openhcp/openhcp/dev-infrastructure/node/internal/probe", Binary: "probe"})
	if _, err := n.LoadManifest(ctx, dir); err != nil {
		t.Fatal(err)
	}
	// A service only on the host's loopback, as PostgreSQL and the broker are.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "from the host's loopback")
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	// Without ExposeHost, nothing inside the namespace reaches it.
	if c, err := n.Netns.DialContext(ctx, "tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Fatalf("%s on the host answered from inside the namespace", l.Addr())
	}
	outside, err := n.ExposeHost(ctx, "outside", "hostsvc", 80, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := n.Apply(ctx, "probe", manifests(probeServer(img, "default", "echo", 2, "echo in a pod"),
		// The short name resolves through the pod's search path (default.svc.cluster.local).
		probeClient(img, "default", "client-echo", "http://echo/", "60s"),
		probeClient(img, "default", "client-outside", "http://"+outside.Host+"/", "60s"))); err != nil {
		t.Fatal(err)
	}
	for pod, want := range map[string]string{"client-echo": "echo in a pod", "client-outside": "from the host's loopback"} {
		if _, err := n.Kubectl(ctx, "wait", "pod/"+pod, "--for=jsonpath={.status.phase}=Succeeded", "--timeout=120s"); err != nil {
			logs, _ := n.Kubectl(ctx, "logs", pod)
			st, _ := n.Kubectl(ctx, "get", "pod", pod, "-o", "jsonpath={.status}")
			t.Fatalf("%s: %v\nlogs: %s\nstatus: %s", pod, err, logs, st)
		}
		logs, err := n.Kubectl(ctx, "logs", pod)
		if err != nil || string(logs) != want {
			t.Errorf("%s got %q (%v), want %q", pod, logs, err, want)
		}
	}
	t.Logf("pods reached a ClusterIP Service by name and the host's service through the relay %s after apply", time.Since(start).Round(time.Millisecond))
	// The cluster DNS answers the host too, from inside the namespace.
	clusterIP, err := n.Kubectl(ctx, "get", "service", "echo", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := n.Resolver().LookupHost(ctx, "echo.default.svc."+ClusterDomain)
	if err != nil || len(addrs) != 1 || addrs[0] != string(clusterIP) {
		t.Errorf("echo.default.svc resolves to %v (%v), want [%s]", addrs, err, clusterIP)
	}
	// Names outside the cluster are refused: no pod reaches the host's resolver.
	if addrs, err := n.Resolver().LookupHost(ctx, "example.com"); err == nil {
		t.Errorf("example.com resolved to %v through the cluster DNS", addrs)
	}
	if _, err := n.Kubectl(ctx, "delete", "-f", n.appliedFile("probe"), "--wait=false"); err != nil {
		t.Error(err)
	}
	// Bad input: an exposed host service that is down refuses the pod's connection.
	srv.Close()
	resp, err := n.HTTPClient().Get("http://" + outside.Relay + "/")
	if err == nil {
		resp.Body.Close()
		t.Errorf("relay answered %s with the host service stopped", resp.Status)
	}
	if !strings.Contains(outside.Addr(), ".svc."+ClusterDomain+":80") {
		t.Errorf("OutsideService.Addr %q", outside.Addr())
	}
	return img
}
