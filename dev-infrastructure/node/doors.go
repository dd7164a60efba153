package node

// The door probe of the node's namespace: every TCP socket listening in it, and what a caller
// without a client certificate gets from each. Pods' own sockets are in their pods' namespaces
// and are not listed here; what the namespace holds is the node's components, the relays of
// ExposeHost and, under make deploy, nothing else.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Listener is one TCP socket listening inside the node's namespace.
type Listener struct {
	Addr    string // ip:port, as ss prints it ("*" for the unspecified address)
	Process string // the owning program's name
	PID     int
	// PodIP is set for a socket in a pod's namespace: the address the node's namespace reaches
	// it at.
	PodIP string
}

func (l Listener) String() string {
	if l.PodIP != "" {
		return fmt.Sprintf("%s in pod %s (%s, pid %d)", l.Addr, l.PodIP, l.Process, l.PID)
	}
	return fmt.Sprintf("%s (%s, pid %d)", l.Addr, l.Process, l.PID)
}

var ssUsers = regexp.MustCompile(`users:\(\("([^"]+)",pid=(\d+)`)

// Listeners lists every listening TCP socket inside the node's namespace (ss -ltnpH).
func (n *Node) Listeners(ctx context.Context) ([]Listener, error) {
	out, err := n.Netns.Command(ctx, "ss", "-ltnpH").Output()
	if err != nil {
		return nil, fmt.Errorf("ss -ltnp in namespace %s: %w", n.Netns.Name, err)
	}
	return parseSS(out)
}

// PodListeners lists the listening TCP sockets of every running pod that the node's namespace
// can reach: each pod's network namespace is entered through one of its containers' processes
// (ctr tasks), its address read from eth0, and sockets bound to the pod's loopback are left out
// (only the pod's own containers reach them).
func (n *Node) PodListeners(ctx context.Context) ([]Listener, error) {
	out, err := n.containerd.Ctr(ctx, "-n", "k8s.io", "tasks", "ls")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{} // pod addresses already listed
	var ls []Listener
	for _, line := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != "RUNNING" {
			continue
		}
		pid := f[1]
		addr, err := exec.CommandContext(ctx, "nsenter", "-t", pid, "-n", "ip", "-4", "-o", "addr", "show", "dev", "eth0").Output()
		if err != nil {
			continue // a host-network pod has no eth0 of its own: its sockets are the node's
		}
		af := strings.Fields(string(addr))
		if len(af) < 4 {
			continue
		}
		podIP, _, _ := strings.Cut(af[3], "/")
		if seen[podIP] {
			continue
		}
		seen[podIP] = true
		ss, err := exec.CommandContext(ctx, "nsenter", "-t", pid, "-n", "ss", "-ltnpH").Output()
		if err != nil {
			return nil, fmt.Errorf("ss -ltnp in the pod namespace of pid %s: %w", pid, err)
		}
		pls, err := parseSS(ss)
		if err != nil {
			return nil, err
		}
		for _, l := range pls {
			if h, _, _ := net.SplitHostPort(l.Addr); net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback() {
				continue
			}
			l.PodIP = podIP
			ls = append(ls, l)
		}
	}
	return ls, nil
}

func parseSS(out []byte) ([]Listener, error) {
	var ls []Listener
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		l := Listener{Addr: f[3]}
		if m := ssUsers.FindStringSubmatch(sc.Text()); m != nil {
			l.Process = m[1]
			l.PID, _ = strconv.Atoi(m[2])
		}
		ls = append(ls, l)
	}
	return ls, sc.Err()
}

// port is the listener's port.
func (l Listener) port() int {
	_, p, _ := net.SplitHostPort(l.Addr)
	v, _ := strconv.Atoi(p)
	return v
}

// dialAddr is where to reach the listener from inside the namespace.
func (l Listener) dialAddr() string {
	h, p, _ := net.SplitHostPort(l.Addr)
	if l.PodIP != "" {
		return net.JoinHostPort(l.PodIP, p)
	}
	if h == "*" || h == "0.0.0.0" || h == "::" || h == "[::]" {
		h = DefaultNodeIP.String()
	}
	return net.JoinHostPort(strings.Trim(h, "[]"), p)
}

// component is the name of the node's process that owns the listener ("" for none of them).
func (n *Node) component(l Listener) string {
	for _, p := range n.procs {
		if p.cmd.Process != nil && p.cmd.Process.Pid == l.PID {
			return p.name
		}
	}
	return ""
}

// healthPaths are the health endpoints; they say "ok" or give a sync time, nothing else.
var healthPaths = []string{"/healthz", "/livez", "/readyz", "/health", "/ready"}

// Exemption says why a listener of the node may answer a caller without a client certificate
// and which doorPaths it may answer 2xx (nil: any, for a relay whose far end authenticates); an
// empty reason means it must answer none.
func (n *Node) Exemption(l Listener) (reason string, paths []string) {
	if l.PodIP != "" {
		// The kubelet's probes present no certificate, so a pod's health paths must answer
		// without one; anything else is a door.
		return "a pod's health paths: the kubelet probes them without a certificate", healthPaths
	}
	if slices.Contains(n.relayAddrs, l.Addr) {
		return "an ExposeHost relay: it copies bytes to a host service (PostgreSQL, the MQTT broker) that authenticates its callers itself", nil
	}
	switch c := n.component(l); {
	case c == "kube-controller-manager" || c == "kube-scheduler":
		return c + "'s secure port: its health paths are always allowed (--authorization-always-allow-paths' default); everything else needs a token the apiserver reviews", healthPaths
	case c == "kubelet" && l.port() == 10248:
		return "the kubelet's health port on the namespace's loopback", healthPaths
	case c == "kube-proxy" && l.port() == 10256:
		return "kube-proxy's health port on the namespace's loopback: the last rule sync time", healthPaths
	case c == "kube-proxy" && l.port() == 10249:
		// Still open, and reported: v1.32 refills an empty metricsBindAddress with this default
		// and has no TLS or authentication for it (as on a kubeadm node). It needs a front
		// (kube-rbac-proxy) or a kube-proxy that can turn it off.
		return "KNOWN OPEN: kube-proxy's metrics port on the namespace's loopback cannot be turned off or put behind TLS in v1.32; it gives its configuration (no secret: paths, CIDRs, timings) and rule-sync metrics to any process of the namespace", append([]string{"/metrics", "/configz", "/proxyMode"}, healthPaths...)
	}
	return "", nil
}

// doorPaths are what the probe asks every listener for: data a caller must never get without a
// credential (etcd keys, Secrets, pods, metrics, profiles, configuration, version) and the health
// paths, which only the listeners Exemption names may answer.
var doorPaths = []string{"/", "/healthz", "/livez", "/readyz", "/health", "/ready", "/proxyMode", "/version", "/metrics", "/api/v1/secrets", "/v3/kv/range", "/members", "/pods", "/configz", "/debug/pprof/", "/stats/summary"}

// Finding is one door that opened: a path a listener answered 2xx without a client certificate.
type Finding struct {
	Listener Listener
	Scheme   string // http or https
	Path     string
	Status   string
	Body     string // the start of the answer
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s%s: %s %q", strings.ToUpper(f.Scheme), f.Listener, f.Path, f.Status, f.Body)
}

// Knock asks the listener for doorPaths over plaintext HTTP and over TLS without a client
// certificate (not verifying the server, as an attacker would not) and returns every answer
// that was 2xx; none means every door stayed shut.
func (n *Node) Knock(ctx context.Context, l Listener) []Finding {
	var open []Finding
	for _, scheme := range []string{"http", "https"} {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			DialContext:     n.Netns.DialContext,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the probe plays an attacker that trusts anything
		}}
		for _, path := range doorPaths {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+l.dialAddr()+path, nil)
			if err != nil {
				continue
			}
			resp, err := c.Do(req)
			if err != nil {
				continue
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 80))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				open = append(open, Finding{Listener: l, Scheme: scheme, Path: path, Status: resp.Status, Body: string(body)})
			}
		}
	}
	return open
}

// PodDoor lets a pod's listener (its program and port) answer Paths over TLS without a client
// certificate, never over plaintext HTTP, for Reason. The deployer that installs the charts
// names them (OpenDoors); the node knows nothing of what runs in its pods.
type PodDoor struct {
	Process string
	Port    int
	Paths   []string
	Reason  string
}

// podDoor is the PodDoor of doors that names the pod listener l, if any.
func podDoor(l Listener, doors []PodDoor) (PodDoor, bool) {
	if l.PodIP == "" {
		return PodDoor{}, false
	}
	for _, d := range doors {
		if d.Process == l.Process && d.Port == l.port() {
			return d, true
		}
	}
	return PodDoor{}, false
}

// allowed is whether the answer f is one Exemption's reason and paths, or a PodDoor of doors,
// allows.
func allowed(f Finding, why string, paths []string, doors []PodDoor) bool {
	if why != "" && (paths == nil || slices.Contains(paths, f.Path)) {
		return true
	}
	d, ok := podDoor(f.Listener, doors)
	return ok && f.Scheme == "https" && slices.Contains(d.Paths, f.Path)
}

// OpenDoors knocks on every listener of the node's namespace and of its pods (Listeners,
// PodListeners) and returns every answer that neither Exemption nor one of doors allows, plus
// one line per listener saying what it is and why it may answer.
func (n *Node) OpenDoors(ctx context.Context, doors ...PodDoor) (open []Finding, probed []string, err error) {
	nodeLs, err := n.Listeners(ctx)
	if err != nil {
		return nil, nil, err
	}
	podLs, err := n.PodListeners(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, l := range append(nodeLs, podLs...) {
		why, paths := n.Exemption(l)
		for _, f := range n.Knock(ctx, l) {
			if !allowed(f, why, paths, doors) {
				open = append(open, f)
			}
		}
		if d, ok := podDoor(l, doors); ok {
			why = strings.TrimPrefix(why+"; over TLS also "+strings.Join(d.Paths, ", ")+": "+d.Reason, "; ")
		}
		if why == "" {
			why = "answers nothing without a client certificate"
		}
		probed = append(probed, l.String()+": "+why)
	}
	return open, probed, nil
}
