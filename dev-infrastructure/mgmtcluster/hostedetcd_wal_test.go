package mgmtcluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHostedEtcdWALIsBounded: a hosted etcd's quota bounds its database, not its write-ahead
// log, and etcd frees WAL segments only up to its last snapshot (every --snapshot-count
// entries, 100,000 by default). A customer who writes big objects and lets the apiserver's
// compaction free them never meets the quota, while the WAL grows without bound on the sim
// pod's emptyDir, whose sizeLimit then evicts the pod with every hosted cluster's data (and the
// whole raft log since the snapshot is replayed into memory at each start). 450 puts of 1 MiB,
// compacted as they go, into a 64 MiB quota left 556 MiB of WAL in 9 segments and never met the
// quota. With a short snapshot interval and two segments kept, what stays is a few segments.
func TestHostedEtcdWALIsBounded(t *testing.T) {
	ctx, o := hostedEtcdTest(t, "starts a real etcd and writes 450 MiB")
	o.QuotaBytes = 64 << 20
	e, err := StartHostedEtcd(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	caPEM, err := os.ReadFile(e.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := EtcdHTTPClient(e.Endpoint, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 30 * time.Second
	post := func(path string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		res, err := c.Post("https://localhost"+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, res.StatusCode, out)
		}
		var m map[string]any
		_ = json.Unmarshal(out, &m)
		return m
	}
	walDir := filepath.Join(HostedEtcdDataDir(o.Dir), "member", "wal")
	walBytes := func() (n int64, files int) {
		ents, _ := os.ReadDir(walDir)
		for _, en := range ents {
			if fi, err := en.Info(); err == nil && filepath.Ext(en.Name()) == ".wal" {
				n += fi.Size()
				files++
			}
		}
		return n, files
	}
	key := base64.StdEncoding.EncodeToString([]byte("big"))
	val := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 1<<20))
	for i := 1; i <= 450; i++ {
		m := post("/v3/kv/put", map[string]any{"key": key, "value": val})
		if i%20 == 0 { // what the apiserver's compaction does, every 5 minutes
			hdr, _ := m["header"].(map[string]any)
			post("/v3/kv/compaction", map[string]any{"revision": hdr["revision"], "physical": true})
		}
	}
	// etcd purges WAL files every 30 s.
	const bound = 4 * 64 << 20
	deadline := time.Now().Add(90 * time.Second)
	for {
		n, files := walBytes()
		if n <= bound {
			t.Logf("WAL after 450 MiB written: %d MiB in %d segments", n>>20, files)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("WAL after 450 MiB written into a 64 MiB quota: %d MiB in %d segments, want at most %d MiB", n>>20, files, bound>>20)
		}
		time.Sleep(2 * time.Second)
	}
}
