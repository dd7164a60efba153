package monitor

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestNewReadyzProbe: the probe --shard-probe builds verifies the server against the given CA
// and the URL's host, and wants 200.
func TestNewReadyzProbe(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := NewReadyzProbe(srv.URL+"/readyz", tlsconfig.Files{CA: ca})
	if err != nil {
		t.Fatal(err)
	}
	if err := p(context.Background()); err != nil {
		t.Fatalf("probe of a ready server: %v", err)
	}
	ready.Store(false)
	if err := p(context.Background()); err == nil {
		t.Fatal("probe of a server answering 503 passed")
	}
	for _, bad := range []string{"http://127.0.0.1:1/readyz", "127.0.0.1:1", "https:///readyz"} {
		if _, err := NewReadyzProbe(bad, tlsconfig.Files{CA: ca}); err == nil {
			t.Errorf("NewReadyzProbe(%q) accepted it", bad)
		}
	}
}
