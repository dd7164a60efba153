package node

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requireNetns skips only when the machine cannot create network namespaces (not root, no ip).
func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a network namespace needs root; this machine runs the test as an unprivileged user")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the ip command (iproute2) is not installed; run make deps")
	}
}

func hostLinks(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatalf("listing host links: %v", err)
	}
	return string(out)
}

func TestNetnsHoldsTheNodeAddressAndLeavesTheHostAsFound(t *testing.T) {
	requireNetns(t)
	ctx := context.Background()
	before := hostLinks(t)
	nodeIP := netip.MustParseAddr("10.250.0.1")

	ns, err := CreateNetns(ctx, "openhcp-test-", nodeIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Delete(context.Background()) })

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"node address on the bridge", []string{"ip", "-o", "-4", "addr", "show", "dev", nodeLink}, "inet 10.250.0.1/32"},
		{"loopback up", []string{"ip", "-o", "link", "show", "lo"}, "UP"},
		{"node address is local inside", []string{"ip", "route", "get", "10.250.0.1"}, "local 10.250.0.1 dev lo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ns.Command(ctx, tt.args...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), tt.want) {
				t.Fatalf("%v: %v: %s (want %q)", tt.args, err, out, tt.want)
			}
		})
	}
	if got := hostLinks(t); got != before {
		t.Fatalf("host links changed while the namespace was up:\nbefore:\n%s\nafter:\n%s", before, got)
	}
	if out, _ := exec.Command("ip", "-o", "-4", "addr", "show").Output(); strings.Contains(string(out), "10.250.0.1") {
		t.Fatalf("the node address leaked onto the host: %s", out)
	}

	if err := ns.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(netnsDir, ns.Name)); !os.IsNotExist(err) {
		t.Fatalf("namespace %s still exists after Delete: %v", ns.Name, err)
	}
	if err := ns.Delete(ctx); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if got := hostLinks(t); got != before {
		t.Fatalf("host links differ after Delete:\nbefore:\n%s\nafter:\n%s", before, got)
	}
}
