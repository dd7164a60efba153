package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/test/internal/procstat"
)

// TestNoSecretInLogsOrCommandLines creates a cluster (so the pull secret and the etcd key travel
// through Cluster Service, Maestro, the broker and the agent to the management cluster), then
// collects every secret the region generated (database passwords, Cluster Service's
// key-encryption key, the pull secret's credentials, every private key of the PKI) and fails if
// one appears in any log file of the region or in the command line of any process the test
// started (/proc/<pid>/cmdline of its descendants). Secrets reach services through 0600 files
// or the environment only.
func TestNoSecretInLogsOrCommandLines(t *testing.T) {
	needsOwnRegion(t, "knows the secrets it generated and reads its logs")
	sub, rg := uuid.NewString(), "rg-secrets"
	registerSubscription(t, sub)
	cl, mc := createCluster(t, clusterPath(sub, rg, "secrets"), clusterBody(sub, rg))

	secrets := map[string]string{} // value → what it is
	for i, s := range region.Secrets() {
		secrets[s] = fmt.Sprintf("region secret #%d", i)
	}
	keys, err := filepath.Glob(filepath.Join(region.PKI().Dir, "*.key"))
	if err != nil || len(keys) < 5 {
		t.Fatalf("private keys of the PKI: %v, %v", keys, err)
	}
	for _, k := range keys {
		for _, s := range privateKeyNeedles(t, k) {
			secrets[s] = "private key " + filepath.Base(k)
		}
	}
	if len(region.Secrets()) < 6 {
		t.Fatalf("the region reports %d generated secrets; want the database passwords, the KEK and the pull secret", len(region.Secrets()))
	}

	// The pull secret made it to the management cluster: the scan below covers a secret that
	// really travelled.
	hcs := hostedClusters(t, mc, cl.GetId())
	if len(hcs) != 1 {
		t.Fatalf("%d HostedClusters for %s", len(hcs), cl.GetId())
	}
	raw := shardSecret(t, mc, hcs[0].GetNamespace(), manifests.PullSecretName(hcs[0].GetName()), ".dockerconfigjson")
	found := false
	for s := range secrets {
		if strings.Contains(string(raw), s) {
			found = true
		}
	}
	if !found {
		t.Fatalf("the hosted cluster's pull secret carries none of the region's pull secret credentials: %s", raw)
	}

	t.Run("the_scan_finds_a_planted_leak", func(t *testing.T) {
		// Prove both scans can fail: a log file and a child's command line with a secret.
		var planted string
		for s := range secrets {
			planted = s
			break
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "leaky.log"), []byte("level=info msg=connecting password="+planted+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if hits := scanLogs(t, dir, secrets); len(hits) != 1 {
			t.Fatalf("planted log leak: %d hits", len(hits))
		}
		// sh keeps its arguments ($0, $1) in its command line while it waits on sleep.
		cmd := exec.Command("sh", "-c", "sleep 60; true", "leak", planted)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		// Until the child has exec'd sh its command line is this test binary's: look again until
		// a generous deadline before calling the leak missed.
		for deadline := time.Now().Add(time.Minute); len(scanCommandLines(t, secrets)) == 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("planted command-line leak not found")
			}
		}
	})

	t.Run("logs", func(t *testing.T) {
		for _, h := range scanLogs(t, region.Info.LogDir, secrets) {
			t.Error(h)
		}
	})
	t.Run("command_lines", func(t *testing.T) {
		for _, h := range scanCommandLines(t, secrets) {
			t.Error(h)
		}
	})
}

// privateKeyNeedles are the base64 lines of a PEM key's body: any one of them in a log is a
// leaked key (a key printed whole, or in part).
func privateKeyNeedles(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	body := base64.StdEncoding.EncodeToString(blk.Bytes)
	var out []string
	for len(body) >= 48 {
		out = append(out, body[:48])
		body = body[48:]
	}
	return out
}

// scanLogs reports every secret found in a file under dir.
func scanLogs(t *testing.T, dir string, secrets map[string]string) []string {
	t.Helper()
	var hits []string
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for s, what := range secrets {
			if bytes.Contains(b, []byte(s)) {
				hits = append(hits, fmt.Sprintf("%s appears in %s", what, p))
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("scan %s: %d files, %v", dir, n, err)
	}
	return hits
}

// scanCommandLines reports every secret found in the command line of a descendant of this
// process: every service, tool and database the region started.
func scanCommandLines(t *testing.T, secrets map[string]string) []string {
	t.Helper()
	procs, err := procstat.List()
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	seen := 0
	for _, p := range procstat.Descendants(procs, os.Getpid()) {
		if len(p.Args) == 0 {
			continue // exited, or its command line could not be read
		}
		cmdline := []byte(strings.Join(p.Args, "\x00"))
		pid := p.PID
		seen++
		for s, what := range secrets {
			if bytes.Contains(cmdline, []byte(s)) {
				prog, _, _ := bytes.Cut(cmdline, []byte{0})
				hits = append(hits, fmt.Sprintf("%s appears in the command line of pid %d (%s)", what, pid, prog))
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found %d processes started by this test; the region runs more", seen)
	}
	return hits
}
