package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// kubectlBinary returns the pinned kubectl (the tool cache already holds it after make tools).
func kubectlBinary(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bin, err := mgmtcluster.KubectlBinary(ctx)
	if err != nil {
		t.Fatalf("kubectl: %v", err)
	}
	return bin
}

// kubectl runs kubectl with a kubeconfig (its content) and returns stdout, stderr and whether
// it succeeded. It never reads the user's own kubeconfig or cache.
func kubectl(t *testing.T, bin string, kubeconfig []byte, args ...string) (string, string, error) {
	t.Helper()
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kc, "--cache-dir", filepath.Join(dir, "cache"), "--request-timeout", "30s"}, args...)...)
	cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// apiURL reads the cluster's api.url through ARM.
func apiURL(t *testing.T, path string) string {
	t.Helper()
	get := arm(t, http.MethodGet, path, nil)
	props, _ := get.Body["properties"].(map[string]any)
	api, _ := props["api"].(map[string]any)
	u, _ := api["url"].(string)
	if get.Status != http.StatusOK || u == "" {
		t.Fatalf("GET cluster: %d, api.url %q: %s", get.Status, u, get.Raw)
	}
	return u
}

// TestCustomerCredentialOpensTheHostedAPIServer is the customer's path through ARM against the
// hosted cluster's real kube-apiserver: a credential from requestAdminCredential works with
// kubectl at the cluster's api.url, stops working once revokeCredentials has completed, and a
// new one works again. Deleting the cluster stops its API server.
func TestCustomerCredentialOpensTheHostedAPIServer(t *testing.T) {
	bin := kubectlBinary(t)
	sub, rg := uuid.NewString(), "rg-hostedapi"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "hostedapi")
	put := arm(t, http.MethodPut, path, clusterBody(sub, rg))
	if put.Status != http.StatusCreated {
		t.Fatalf("PUT cluster: got %d, want 201: %s", put.Status, put.Raw)
	}
	if final := waitOperation(t, put.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("create operation ended %v: %v", final["status"], final["error"])
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			arm(t, http.MethodDelete, path, nil)
		}
	})
	server := apiURL(t, path)
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Port() == "" {
		t.Fatalf("api.url %q is not https://host:port", server)
	}
	caller := uuid.NewString()

	credential := func(t *testing.T) []byte { return customerKubeconfig(t, path, caller, server) }

	first := credential(t)
	out, stderr, err := kubectl(t, bin, first, "get", "namespaces", "-o", "name")
	if err != nil || !strings.Contains(out, "namespace/default") {
		t.Fatalf("kubectl get namespaces with the customer's credential: %v\n%s%s", err, out, stderr)
	}
	t.Logf("$ kubectl get namespaces -o name\n%s", out)
	// The hosted API server is a door too: nothing without a credential.
	port, _ := strconv.Atoi(u.Port())
	for _, p := range doorProbes {
		if code, body, err := probeDoor("https", port, p); err == nil && code >= 200 && code <= 299 {
			t.Errorf("%s %s%s without a credential: %d %.160q", p.method, server, p.path, code, body)
		}
	}

	// An SRE session opened before the customer's revocation outlives it: the two signers are
	// separate.
	hcpctlBin := hcpctlBinary(t)
	sreKC := filepath.Join(t.TempDir(), "sre.kubeconfig")
	if out, stderr, code := hcpctl(t, hcpctlBin, "--as", "sre-readonly", "breakglass", "open", path, "--ttl", "30m",
		"--kubeconfig", sreKC, "--reason", "e2e: SRE session across a customer revocation"); code != 0 {
		t.Fatalf("open an SRE session: exit %d:\n%s%s", code, out, stderr)
	}
	if _, err := whoAmI(t, sreKC); err != nil {
		t.Fatalf("the SRE session before the customer's revocation: %v", err)
	}

	rv := armAs(t, http.MethodPost, path+"/revokeCredentials?api-version=2026-09-01-preview", caller, nil)
	if rv.Status != http.StatusAccepted {
		t.Fatalf("revokeCredentials: %d: %s", rv.Status, rv.Raw)
	}
	if final := waitOperation(t, rv.Header.Get("Azure-AsyncOperation"), 2*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("revokeCredentials ended %v: %v", final["status"], final["error"])
	}
	// Completed means refused, at once: no waiting here.
	out, stderr, err = kubectl(t, bin, first, "get", "namespaces", "-o", "name")
	if err == nil {
		t.Fatalf("the revoked credential still lists namespaces:\n%s", out)
	}
	if !strings.Contains(stderr, "Unauthorized") && !strings.Contains(stderr, "provide credentials") && !strings.Contains(stderr, "certificate") && !strings.Contains(stderr, "tls") {
		t.Fatalf("the revoked credential failed for another reason than a refusal: %s", stderr)
	}
	t.Logf("revoked credential refused: %s", strings.TrimSpace(stderr))

	second := credential(t)
	if out, stderr, err := kubectl(t, bin, second, "get", "namespaces", "-o", "name"); err != nil {
		t.Fatalf("a credential issued after the revocation: %v\n%s%s", err, out, stderr)
	}
	if user, err := whoAmI(t, sreKC); err != nil || user.Username == "" {
		t.Fatalf("the SRE session opened before the customer's revocation no longer works: %+v %v", user, err)
	}

	del := arm(t, http.MethodDelete, path, nil)
	if del.Status != http.StatusAccepted {
		t.Fatalf("DELETE cluster: %d: %s", del.Status, del.Raw)
	}
	if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("delete operation ended %v: %v", final["status"], final["error"])
	}
	deleted = true
	eventually(t, time.Minute, "the hosted API server stops listening", func() error {
		c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
		if err == nil {
			c.Close()
			return fmt.Errorf("%s still accepts connections", u.Host)
		}
		return nil
	})
	eventually(t, time.Minute, "no kube-apiserver process serves the port", func() error {
		if pid := hostedAPIServerPID(u.Port()); pid != "" {
			return fmt.Errorf("kube-apiserver pid %s still runs with port %s", pid, u.Port())
		}
		return nil
	})
}

// hostedAPIServerPID finds a kube-apiserver process whose command line names port, or "".
func hostedAPIServerPID(port string) string {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "kube-apiserver" && !strings.HasPrefix(filepath.Base(args[0]), "kube-apiserver") {
			continue
		}
		for i, a := range args {
			if a == "--secure-port="+port || a == "--secure-port" && i+1 < len(args) && args[i+1] == port {
				return filepath.Base(filepath.Dir(f))
			}
		}
	}
	return ""
}

// customerKubeconfig asks ARM for an admin credential of the cluster at path as caller and
// returns its kubeconfig, which must name server (the cluster's api.url).
func customerKubeconfig(t *testing.T, path, caller, server string) []byte {
	t.Helper()
	r := armAs(t, http.MethodPost, path+"/requestAdminCredential?api-version=2024-06-10-preview", caller, nil)
	if r.Status != http.StatusAccepted {
		t.Fatalf("requestAdminCredential: %d: %s", r.Status, r.Raw)
	}
	if final := waitOperation(t, r.Header.Get("Azure-AsyncOperation"), 2*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("requestAdminCredential ended %v: %v", final["status"], final["error"])
	}
	res := armAs(t, http.MethodGet, r.Header.Get("Location"), caller, nil)
	kc, _ := res.Body["kubeconfig"].(string)
	if res.Status != http.StatusOK || kc == "" {
		t.Fatalf("credential result: %d: %s", res.Status, res.Raw)
	}
	if !strings.Contains(kc, server) {
		t.Fatalf("the kubeconfig does not name api.url %s:\n%s", server, kc)
	}
	return []byte(kc)
}
