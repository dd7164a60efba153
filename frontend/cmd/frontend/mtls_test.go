package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestBinaryARMMutualTLS runs the real frontend binary over a real database with the region's
// PKI and the flags the local region gives it, and checks who may call the ARM API: plaintext
// is not served, a certificate of an unknown CA (or of the region's own service CA) fails the
// handshake, no certificate is 401 and another subject 403 with ARM error bodies and nothing
// stored, /healthz needs no certificate, ARM's certificate works, and a renewed server
// certificate is served without a restart.
func TestBinaryARMMutualTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "frontend")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AddPerson("alice", "alice", "sre-admin"); err != nil {
		t.Fatal(err)
	}
	if err := p.Add("not-arm", pki.Spec{CommonName: "not-arm", Usage: pki.Client}, pki.ARMCA); err != nil {
		t.Fatal(err)
	}
	stranger, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pg := pgservertest.Start(t)
	dsn := pgservertest.NewDatabase(t, pg)
	fe := p.MustFiles(pki.Frontend)
	listen, metrics, cs := freeAddr(t), freeAddr(t), freeAddr(t)
	args := []string{"--db-dsn", dsn, "--location", "westus3", "--listen", listen, "--metrics-listen", metrics,
		"--cluster-service", cs, "--cluster-service-ca", p.CAFile, "--cluster-service-cert", fe.Cert, "--cluster-service-key", fe.Key,
		"--tls-cert", fe.Cert, "--tls-key", fe.Key}

	t.Run("tls_without_client_CA_and_subjects_refuses_to_start", func(t *testing.T) {
		for _, extra := range [][]string{nil, {"--tls-client-ca", p.ARMCAFile}} {
			out, err := exec.Command(bin, append(args, extra...)...).CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !bytes.Contains(out, []byte("--arm-client-subjects")) {
				t.Fatalf("%v: err %v, output %s", extra, err, out)
			}
		}
	})

	logs := &syncBuf{}
	cmd := exec.Command(bin, append(args, "--tls-client-ca", p.ARMCAFile, "--arm-client-subjects", pki.ARM)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	client := func(t *testing.T, files tlsconfig.Files) *http.Client {
		t.Helper()
		files.ServerName = pki.ServerName(pki.Frontend) // the ARM API's certificate names only it
		cfg, err := files.Client(listen)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	}
	as := func(pk *pki.Region, identity string) tlsconfig.Files {
		f := pk.MustFiles(identity)
		return tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}
	}
	anonymous := client(t, tlsconfig.Files{CA: p.CAFile})
	base := "https://" + listen
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := anonymous.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no healthy frontend after 60s: %v; logs:\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	sub := "/subscriptions/6b690bec-0c16-4ecb-8f67-781caf40bba7?api-version=2.0"
	subBody := `{"state":"Registered","registrationDate":"2024-01-01T00:00:00Z","properties":{"tenantId":"72f988bf-0000-0000-0000-000000000000"}}`
	do := func(c *http.Client, method, url, body string) (*http.Response, []byte, error) {
		req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b, nil
	}

	t.Run("plaintext_is_not_served", func(t *testing.T) {
		resp, b, err := do(&http.Client{Timeout: 10 * time.Second}, http.MethodPut, "http://"+listen+sub, subBody)
		if err == nil && (resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "HTTPS")) {
			t.Fatalf("plaintext PUT got %d %s", resp.StatusCode, b)
		}
	})
	for _, tc := range []struct {
		name  string
		files tlsconfig.Files
	}{
		{"certificate_of_an_unknown_CA", as(stranger, pki.ARM)},
		{"certificate_of_the_service_CA", as(p, pki.Backend)},
		{"sre_workload_certificate", as(p, pki.SRE)},
		{"sre_person_certificate", as(p, "alice")},
	} {
		t.Run(tc.name+"_fails_the_handshake", func(t *testing.T) {
			if resp, b, err := do(client(t, tc.files), http.MethodPut, base+sub, subBody); err == nil {
				t.Fatalf("got %d %s; want a handshake failure", resp.StatusCode, b)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		files  tlsconfig.Files
		status int
		code   string
	}{
		{"no_certificate_is_401", tlsconfig.Files{CA: p.CAFile}, http.StatusUnauthorized, "Unauthorized"},
		{"another_ARM_CA_subject_is_403", as(p, "not-arm"), http.StatusForbidden, "Forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{http.MethodPut, http.MethodGet} {
				resp, b, err := do(client(t, tc.files), method, base+sub, subBody)
				if err != nil {
					t.Fatal(err)
				}
				var ce struct {
					Error struct{ Code, Message string }
				}
				if resp.StatusCode != tc.status || json.Unmarshal(b, &ce) != nil || ce.Error.Code != tc.code || resp.Header.Get("x-ms-request-id") == "" {
					t.Fatalf("%s: %d %s; want %d with an ARM error body %s and x-ms-request-id", method, resp.StatusCode, b, tc.status, tc.code)
				}
			}
		})
	}
	t.Run("a_resumed_session_keeps_the_subject_rule", func(t *testing.T) {
		// One client per identity, so its session cache resumes: the subject check still
		// refuses a session of another ARM-CA subject (403), and lets ARM's through.
		for _, tc := range []struct {
			files   tlsconfig.Files
			refused bool
		}{
			{as(p, "not-arm"), true},
			{as(p, pki.ARM), false},
		} {
			c := client(t, tc.files)
			for i, wantResumed := range []bool{false, true, true} {
				resp, b, err := do(c, http.MethodGet, base+sub, "")
				if err != nil {
					t.Fatal(err)
				}
				refused := resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized
				if resp.TLS.DidResume != wantResumed || refused != tc.refused {
					t.Fatalf("%s, connection %d: resumed=%v %d %s; want resumed=%v refused=%v", tc.files.Cert, i, resp.TLS.DidResume, resp.StatusCode, b, wantResumed, tc.refused)
				}
			}
		}
	})
	t.Run("healthz_needs_no_certificate", func(t *testing.T) {
		resp, _, err := do(anonymous, http.MethodGet, base+"/healthz", "")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz: %v %v", resp, err)
		}
	})
	t.Run("headers_over_the_limit_are_431", func(t *testing.T) {
		// serverlimits.API().MaxHeaderBytes is 64 KiB (Go's default would take 1 MiB).
		req, err := http.NewRequest(http.MethodGet, base+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Padding", strings.Repeat("p", 128<<10))
		resp, err := anonymous.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("a 128 KiB header: %d, want 431", resp.StatusCode)
		}
	})
	arm := client(t, as(p, pki.ARM))
	t.Run("refused_writes_stored_nothing", func(t *testing.T) {
		resp, b, err := do(arm, http.MethodGet, base+sub, "")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("the subscription exists after refused PUTs: %s", b)
		}
	})
	t.Run("arm_is_served", func(t *testing.T) {
		resp, b, err := do(arm, http.MethodPut, base+sub, subBody)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT: %v %v %s", err, resp, b)
		}
		resp, b, err = do(arm, http.MethodGet, base+sub, "")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Registered") {
			t.Fatalf("GET: %v %v %s", err, resp, b)
		}
	})
	t.Run("metrics_are_plaintext_on_loopback", func(t *testing.T) {
		resp, b, err := do(&http.Client{Timeout: 10 * time.Second}, http.MethodGet, "http://"+metrics+"/metrics", "")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "frontend_http_requests_total") ||
			!strings.Contains(string(b), `frontend_tls_handshakes_total{listener="arm",resumed="true"}`) {
			t.Fatalf("metrics: %v %v", resp, err)
		}
	})
	t.Run("renewed_server_certificate_is_served_without_a_restart", func(t *testing.T) {
		served := func() *big.Int {
			resp, _, err := do(arm, http.MethodGet, base+"/healthz", "")
			if err != nil {
				t.Fatal(err)
			}
			return resp.TLS.PeerCertificates[0].SerialNumber
		}
		before := served()
		renewed, err := p.Renew(pki.Frontend)
		if err != nil {
			t.Fatal(err)
		}
		if renewed.SerialNumber.Cmp(before) == 0 {
			t.Fatal("renew kept the serial")
		}
		if got := served(); got.Cmp(renewed.SerialNumber) != 0 {
			t.Fatalf("new connection got serial %s, want the renewed %s", got, renewed.SerialNumber)
		}
	})
}
