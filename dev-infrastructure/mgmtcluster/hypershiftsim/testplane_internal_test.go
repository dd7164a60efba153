package hypershiftsim

import (
	"context"
	"testing"
	"time"
)

// testPlane is one hosted control plane a test drives through ensure, as the reconcile does:
// its namespace, a port of its own and a root CA that is also its client CA bundle.
type testPlane struct {
	ns   string
	port int
	pki  hostedPKI
}

// newTestPlane makes a plane's CA and picks a free port not in used, which it adds there.
func newTestPlane(t *testing.T, ns string, used map[int]bool) testPlane {
	t.Helper()
	rootCert, rootKey, err := newCA("root-ca."+ns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePortNotIn("127.0.0.1", used)
	if err != nil {
		t.Fatal(err)
	}
	used[port] = true
	return testPlane{ns: ns, port: port, pki: hostedPKI{rootCert: rootCert, rootKey: rootKey, clientCABundle: rootCert}}
}

// ensureReady calls ensure until the plane answers and done holds (nil: at once), for up to
// 3 minutes, and returns the last state.
func (p testPlane) ensureReady(ctx context.Context, t *testing.T, h *hostedAPIServers, what string, done func() bool) apiServerState {
	t.Helper()
	var st apiServerState
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var err error
		if st, err = h.ensure(ctx, p.ns, p.port, p.pki); err != nil {
			t.Fatal(err)
		}
		if st.ready && (done == nil || done()) {
			return st
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("%s (%s): not ready in 3 minutes: %+v", what, p.ns, st)
	return st
}
