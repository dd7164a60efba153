package mgmtclusters

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubeconfig writes a kubeconfig that points at server (plain HTTP: the apiserver's TLS is
// not what these tests are about).
func kubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHealth: a shard's health is what its apiserver's /readyz says — 200 healthy, another
// status unhealthy with the first line of its answer, no answer unreachable — and unknown for
// a shard the reader has no kubeconfig for.
func TestHealth(t *testing.T) {
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer ready.Close()
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "[-]etcd failed: reason withheld\nreadyz check failed")
	}))
	defer sick.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := l.Addr().String()
	l.Close() // nothing listens there any more

	r, err := New(map[string]string{"up": kubeconfig(t, ready.URL), "sick": kubeconfig(t, sick.URL), "dead": kubeconfig(t, "http://"+deadAddr)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ shard, status, message string }{
		{"up", Healthy, "/readyz: ok"},
		{"sick", Unhealthy, "answered 500: [-]etcd failed"},
		{"dead", Unreachable, deadAddr},
		{"other", Unknown, "no kubeconfig"},
	} {
		t.Run(tc.shard, func(t *testing.T) {
			status, msg := r.Health(context.Background(), tc.shard)
			if status != tc.status || !strings.Contains(msg, tc.message) {
				t.Fatalf("Health(%s) = %s %q, want %s containing %q", tc.shard, status, msg, tc.status, tc.message)
			}
		})
	}
	var none *Reader
	if status, _ := none.Health(context.Background(), "up"); status != Unknown {
		t.Fatalf("a nil reader's health: %s", status)
	}
	if _, err := r.ClusterObjects(context.Background(), "other", "c1"); err == nil || !strings.Contains(err.Error(), "other") {
		t.Fatalf("objects on an unknown shard: %v", err)
	}
	// A dead shard's objects are an error naming the shard, at once (connection refused), not
	// a hang; a hanging one is bounded by readTimeout.
	start := time.Now()
	if _, err := r.ClusterObjects(context.Background(), "dead", "c1"); err == nil || !strings.Contains(err.Error(), "on dead") || time.Since(start) > readTimeout+time.Second {
		t.Fatalf("objects on a dead shard: %v after %s", err, time.Since(start))
	}
}

func TestParseKubeconfigs(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{"", map[string]string{}, ""},
		{"mgmt-1=/a, mgmt-2=/b,", map[string]string{"mgmt-1": "/a", "mgmt-2": "/b"}, ""},
		{"/a", nil, `entry "/a" is not shard=kubeconfig-path`},
		{"mgmt-1=", nil, `entry "mgmt-1=" is not`},
		{"mgmt-1=/a,mgmt-1=/b", nil, "shard mgmt-1 is named twice"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseKubeconfigs(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseKubeconfigs(%q) = %v, want error %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("ParseKubeconfigs(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}
