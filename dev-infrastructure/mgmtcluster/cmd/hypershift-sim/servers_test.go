package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/openhcp/openhcp/internal/serverlimits"
)

// TestProbeServersBoundSlowCallers: the health and metrics listeners cut a caller that trickles
// its request or idles, with the region's metrics limits (controller-runtime's servers, which
// the sim used before, bounded the headers only).
func TestProbeServersBoundSlowCallers(t *testing.T) {
	metrics, err := metricsServer("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	health := healthServer("127.0.0.1:0", nil, nil)
	want := serverlimits.Metrics()
	for name, srv := range map[string]*http.Server{"health": health, "metrics": metrics} {
		for _, d := range want.Unlike(srv) {
			t.Errorf("%s server %s", name, d)
		}
	}
}

// TestHealthServerAnswersEachCheck: /healthz and /readyz answer as controller-runtime's probe
// server did, each check also at its own path, and a failing check is a 500.
func TestHealthServerAnswersEachCheck(t *testing.T) {
	failing := func(*http.Request) error { return io.ErrUnexpectedEOF }
	srv := healthServer("", map[string]healthz.Checker{"ping": healthz.Ping}, map[string]healthz.Checker{"informers": failing})
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/healthz", http.StatusOK},
		{"/healthz/ping", http.StatusOK},
		{"/readyz", http.StatusInternalServerError},
		{"/readyz/informers", http.StatusInternalServerError},
		{"/metrics", http.StatusNotFound},
	} {
		w := httptest.NewRecorder()
		srv.Handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if w.Code != tc.want {
			t.Errorf("GET %s: %d %s, want %d", tc.path, w.Code, strings.TrimSpace(w.Body.String()), tc.want)
		}
	}
}
