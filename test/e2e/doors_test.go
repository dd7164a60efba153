package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/test/internal/procstat"
)

// TestNoDoorOpensWithoutACredential probes every TCP port that a process of the region listens
// on, as an attacker on the same machine would, servers we did not write included (Maestro,
// etcd, the kube-apiservers, mosquitto, PostgreSQL): over plaintext HTTP and over TLS without a
// client certificate, it asks for what such servers hand out (resource bundles, Secrets, etcd
// keys, admin data, profiles). Only health, version and metrics may answer 2xx; anything else
// is a door open to a caller who holds nothing.
func TestNoDoorOpensWithoutACredential(t *testing.T) {
	needsOwnRegion(t, "probes the ports its processes listen on")
	listeners := regionListeners(t)
	if len(listeners) < 10 {
		t.Fatalf("found only %d listening ports of the region's processes: %v", len(listeners), listeners)
	}
	// The launcher's own listeners (the rotation API among them) are in this process, not a
	// child: every port region.json names is probed too.
	for port, where := range namedListeners(t) {
		if _, ok := listeners[port]; !ok {
			listeners[port] = "launcher " + where
		}
	}
	if pkiAPI := region.Info.RegionPKI; pkiAPI != nil {
		_, p, _ := net.SplitHostPort(pkiAPI.Addr)
		if port, _ := strconv.Atoi(p); listeners[port] == "" {
			t.Fatalf("the rotation API's port %s is not among the probed ports %v", pkiAPI.Addr, listeners)
		}
	}
	ports := make([]int, 0, len(listeners))
	for p := range listeners {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	for _, port := range ports {
		who := listeners[port]
		t.Run(fmt.Sprintf("%s:%d", who, port), func(t *testing.T) {
			for _, scheme := range []string{"http", "https"} {
				for _, p := range doorProbes {
					code, body, err := probeDoor(scheme, port, p)
					if err != nil || code < 200 || code > 299 {
						continue
					}
					t.Errorf("%s %s://127.0.0.1:%d%s without a credential: %d %.160q", p.method, scheme, port, p.path, code, body)
				}
			}
		})
	}
}

type doorProbe struct{ method, path, body string }

// doorProbes ask for what the region's servers would hand out. None of them may be 2xx without
// a credential. (Health, version and metrics paths are not probed: they carry no secret.)
var doorProbes = []doorProbe{
	{"GET", "/", ""},
	{"GET", "/api/maestro/v1/resource-bundles", ""},
	{"GET", "/api/maestro/v1/consumers", ""},
	{"DELETE", "/api/maestro/v1/resource-bundles/00000000-0000-0000-0000-000000000000", ""},
	{"GET", "/api/v1/secrets", ""},
	{"GET", "/api/v1/namespaces", ""},
	{"GET", "/apis/hypershift.openshift.io/v1beta1/hostedclusters", ""},
	// etcd's gRPC gateway: every key under /registry.
	{"POST", "/v3/kv/range", `{"key":"L3JlZ2lzdHJ5","range_end":"L3JlZ2lzdHJ6"}`},
	{"GET", "/v2/keys/", ""},
	{"GET", "/admin/v1/shards", ""},
	{"GET", "/admin/v1/audit", ""},
	{"GET", "/portal/", ""},
	{"GET", "/subscriptions", ""},
	// The break-glass gateway: a hosted cluster's Secrets through a session.
	{"GET", "/sessions/00000000-0000-0000-0000-000000000000/api/v1/secrets", ""},
	{"GET", "/debug/pprof/cmdline", ""},
	{"GET", "/debug/pprof/goroutine?debug=1", ""},
	// Prometheus: every target of the region, and any series.
	{"GET", "/api/v1/targets", ""},
	{"GET", "/api/v1/query?query=up", ""},
}

func probeDoor(scheme string, port int, p doorProbe) (int, string, error) {
	tr := &http.Transport{
		// The attacker does not care who the server is; it has no client certificate.
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, p.method, fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, p.path), strings.NewReader(p.body))
	if err != nil {
		return 0, "", err
	}
	if p.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b), nil
}

// regionListeners maps each TCP port in LISTEN state that belongs to a process started by this
// test binary (the region's processes are its descendants) to that process's name.
func regionListeners(t *testing.T) map[int]string {
	t.Helper()
	descendants := descendantsOf(os.Getpid())
	inodes := map[string]string{} // socket inode -> process name
	for pid, name := range descendants {
		fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
			if err == nil && strings.HasPrefix(link, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = name
			}
		}
	}
	// Each process's own view of its network namespace (/proc/<pid>/net): /proc/net is the
	// view of this process's main thread, which may be inside a namespace of its own (the
	// launcher runs each Maestro server in one, from a locked thread that can be the main one).
	out := map[int]string{}
	for pid := range descendants {
		for _, f := range []string{"tcp", "tcp6"} {
			fh, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "net", f))
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(fh)
			sc.Scan() // header
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
					continue
				}
				name, ok := inodes[fields[9]]
				if !ok {
					continue
				}
				_, portHex, _ := strings.Cut(fields[1], ":")
				pb, err := hex.DecodeString(portHex)
				if err != nil || len(pb) != 2 {
					continue
				}
				out[int(pb[0])<<8|int(pb[1])] = name
			}
			fh.Close()
		}
	}
	return out
}

// loopbackPort finds a loopback address's port in a string of region.json (an address or a URL).
var loopbackPort = regexp.MustCompile(`(?:127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})\b`)

// namedListeners maps each loopback port that region.json names anywhere to where it names it
// (its JSON path).
func namedListeners(t *testing.T) map[int]string {
	t.Helper()
	b, err := json.Marshal(region.Info)
	if err != nil {
		t.Fatalf("region.json: %v", err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("region.json: %v", err)
	}
	out := map[int]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			for _, m := range loopbackPort.FindAllStringSubmatch(x, -1) {
				if port, err := strconv.Atoi(m[1]); err == nil && port > 0 {
					out[port] = path
				}
			}
		}
	}
	walk("", doc)
	return out
}

// descendantsOf lists the processes below root, by name (their comm).
func descendantsOf(root int) map[int]string {
	procs, _ := procstat.List() // unreadable: no process found, which the caller reports
	out := map[int]string{}
	for _, p := range procstat.Descendants(procs, root) {
		out[p.PID] = p.Comm
	}
	return out
}

// TestDoorProbeFindsAnOpenDoor shows the probe can fail: a plaintext server on loopback that
// answers every path is reported by probeDoor as 2xx.
func TestDoorProbeFindsAnOpenDoor(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "secret") })}
	go srv.Serve(l)
	defer srv.Close()
	code, body, err := probeDoor("http", l.Addr().(*net.TCPAddr).Port, doorProbes[1])
	if err != nil || code != http.StatusOK || body != "secret" {
		t.Fatalf("probe of an open door: %d %q %v", code, body, err)
	}
	if _, ok := regionListeners(t)[l.Addr().(*net.TCPAddr).Port]; ok {
		t.Fatal("the test's own listener was counted as the region's")
	}
}
