package hypershiftsim

import (
	"fmt"
	"os"
	"testing"
)

// TestPinnedPortsAreOutsideTheEphemeralRange: a hosted kube-apiserver's port is pinned for its
// cluster's life and bound again at every start, so it must not be one the kernel hands out for
// a bind to port 0 or an outgoing connection. It was (a bind to port 0): another cluster's etcd,
// started while this apiserver was down, took it, and this apiserver could not start while that
// etcd ran (a review reproduced it in a network namespace with a narrow range).
func TestPinnedPortsAreOutsideTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for range 50 {
		p, err := freePortNotIn("127.0.0.1", used)
		if err != nil {
			t.Fatal(err)
		}
		if p >= first && p <= last {
			t.Fatalf("pinned port %d is in the ephemeral range %d-%d", p, first, last)
		}
		if used[p] {
			t.Fatalf("pinned port %d was already used", p)
		}
		used[p] = true
	}
}
