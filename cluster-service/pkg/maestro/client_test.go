package maestro

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestNewRejectsUnsafeOrBrokenConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing_endpoints", Config{}, "required"},
		{"plaintext_to_a_remote_grpc_server", Config{GRPCAddr: "10.0.0.5:8090", RESTURL: "http://127.0.0.1:8000"}, "plaintext"},
		{"plaintext_to_a_remote_rest_api", Config{GRPCAddr: "127.0.0.1:8090", RESTURL: "http://maestro.example:8000"}, "plaintext"},
		{"tls_with_an_http_rest_url", Config{GRPCAddr: "maestro:8090", RESTURL: "http://maestro:8000", TLS: &tls.Config{}}, "not https"},
		{"rest_url_without_scheme", Config{GRPCAddr: "127.0.0.1:8090", RESTURL: "127.0.0.1:8000"}, "not an http"},
		{"grpc_addr_without_port", Config{GRPCAddr: "127.0.0.1", RESTURL: "http://127.0.0.1:8000"}, "GRPCAddr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(context.Background(), tc.cfg, quiet)
			if err == nil {
				c.Close()
				t.Fatalf("New(%+v) succeeded, want an error containing %q", tc.cfg, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
	for _, ok := range []Config{
		{GRPCAddr: "127.0.0.1:8090", RESTURL: "http://localhost:8000"},
		{GRPCAddr: "[::1]:8090", RESTURL: "http://[::1]:8000"},
		{GRPCAddr: "maestro:8090", RESTURL: "https://maestro:8000", TLS: &tls.Config{MinVersion: tls.VersionTLS12}},
	} {
		c, err := New(context.Background(), ok, quiet)
		if err != nil {
			t.Errorf("New(%+v): %v", ok, err)
			continue
		}
		if c.cfg.SourceID != DefaultSourceID {
			t.Errorf("source ID = %q, want the default %q", c.cfg.SourceID, DefaultSourceID)
		}
		c.Close()
	}
}

// With Maestro down, calls fail within their context instead of hanging, and the client stays
// usable.
func TestCallsFailPromptlyWhenMaestroIsDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	c, err := New(context.Background(), Config{GRPCAddr: dead, RESTURL: "http://" + dead}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w"}}
	for name, call := range map[string]func(context.Context) error{
		"apply":  func(ctx context.Context) error { return c.Apply(ctx, "mgmt-1", w) },
		"get":    func(ctx context.Context) error { _, err := c.Get(ctx, "mgmt-1", "w"); return err },
		"delete": func(ctx context.Context) error { return c.Delete(ctx, "mgmt-1", "w") },
		"watch":  func(ctx context.Context) error { _, err := c.Watch(ctx, "mgmt-1"); return err },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		err := call(ctx)
		cancel()
		if err == nil {
			t.Errorf("%s against a dead Maestro succeeded", name)
		}
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("%s took %s, beyond its context", name, d)
		}
	}
	if err := c.Apply(context.Background(), "", w); err == nil {
		t.Error("Apply with an empty consumer succeeded")
	}
}
