package hypershiftsim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openhcp/openhcp/internal/publicaddr"
	"github.com/openhcp/openhcp/internal/sockdir"
)

// The hosted kube-apiservers' egress: every connection a hosted kube-apiserver makes on behalf
// of the cluster's objects (the aggregator to an APIService's Service, admission webhooks by
// Service and by URL, the kubelet and pods/services/nodes proxy paths) goes through the
// sim's egress proxy, an HTTP CONNECT proxy on a unix socket (kube-apiserver's
// --egress-selector-config-file, selections "cluster" and "controlplane"). HyperShift sends the
// "cluster" selection through konnectivity to the hosted cluster's nodes and confines the rest
// with network policy; the sim has no nodes, and its apiservers run on the host (make run) or
// in the sim's pod (make deploy), where a customer's APIService on an ExternalName Service
// "localhost" made their apiserver dial any port of that loopback and report the outcome: a
// port scanner. The proxy resolves each target itself and reaches only public unicast addresses
// (publicaddr) that are not the machine's own, plus egressAllowed (a test knob); the rest is
// answered 403 without a connection.

// egressSelection is the kube-apiserver egress selector configuration file's content for a
// proxy on socket: "cluster" and "controlplane" through it; "etcd" (absent) stays direct.
func egressSelection(socket string) string {
	return `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: ` + socket + `
- name: controlplane
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: ` + socket + `
`
}

// Limits of the egress proxy.
const (
	// egressMaxTunnels bounds the tunnels one client (one hosted kube-apiserver process, told
	// apart by its socket's peer credentials) holds open at once: the aggregator keeps one per
	// APIService while it is used, webhooks and checks come and go. The bound is per client,
	// not shared: how many tunnels an apiserver holds is its customer's choice (a webhook whose
	// target accepts and never answers holds one for its timeout and the drain after it), and
	// a shared bound let one customer take every other cluster's egress.
	egressMaxTunnels = 128
	// egressRequestTimeout bounds the CONNECT request's arrival, the name's resolution and the
	// dial each.
	egressRequestTimeout = 10 * time.Second
	// egressDrainTimeout bounds how long a tunnel waits for the target's last bytes once the
	// client has closed its side.
	egressDrainTimeout = time.Minute
	// egressSocketName is the socket's name in its directory. A unix socket's path must fit in
	// 108 bytes; a state directory too deep for that gets a short directory of its own,
	// egressSocketDirPrefix<random> under the temporary directory.
	egressSocketName      = "proxy.sock"
	egressSocketDirPrefix = "hse-"
)

// errEgressRefused is wrapped by every refusal of a target.
var errEgressRefused = errors.New("refused")

// errEgressUnresolved is wrapped by a failure to resolve a target's name. It is answered as a
// refusal: the customer reads the code, and a name that does not resolve must not be told apart
// from one of the management side's own names (answered 403).
var errEgressUnresolved = errors.New("unresolved")

var hostedEgressConnects = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hypershift_sim_hosted_egress_connects_total",
	Help: "CONNECTs of the hosted kube-apiservers to the sim's egress proxy by result: tunnelled, refused (not the hosted cluster's network; nothing dialled), failed (resolution or dial), busy (over the tunnel cap).",
}, []string{"result"})

func init() { ctrlmetrics.Registry.MustRegister(hostedEgressConnects) }

// egressProxy is the HTTP CONNECT proxy the hosted kube-apiservers' egress goes through, on a
// unix socket in a directory only the sim's user may enter (its apiservers run as that user).
type egressProxy struct {
	Socket  string
	dir     string
	tempDir bool // dir was made outside the state directory, and is removed at Stop
	allowed []netip.Prefix
	log     logr.Logger
	l       net.Listener
	// ownAddrs returns the machine's (the network namespace's) own addresses, refused whatever
	// their kind.
	ownAddrs func() ([]netip.Addr, error)

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	// tunnels counts the connections each client (its process ID, 0 if unknown) has open.
	tunnels map[int32]int
	wg      sync.WaitGroup
}

// startEgressProxy serves the proxy on a socket under stateDir (its own 0700 directory
// "egress"), or under a new directory of the system's temporary directory if that path would
// be too long for a socket (internal/sockdir; a killed sim's is removed by the next sim's
// sweepSocketDirs). Only the sim's user (and its apiservers) may reach the socket, whatever its
// own mode.
func startEgressProxy(log logr.Logger, stateDir string, allowed []netip.Prefix) (*egressProxy, error) {
	p := &egressProxy{allowed: allowed, log: log, ownAddrs: interfaceAddrs, conns: map[net.Conn]struct{}{}, tunnels: map[int32]int{}}
	p.dir = filepath.Join(stateDir, "egress")
	if sockdir.Fits(p.dir, egressSocketName) != nil {
		d, err := sockdir.New("", egressSocketDirPrefix, egressSocketName)
		if err != nil {
			return nil, fmt.Errorf("egress proxy: %w", err)
		}
		p.dir, p.tempDir = d, true
	} else if err := sockdir.At(p.dir, egressSocketName); err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p.Socket = filepath.Join(p.dir, egressSocketName)
	_ = os.Remove(p.Socket) // left by a sim that was killed
	l, err := net.Listen("unix", p.Socket)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p.l = l
	p.wg.Add(1)
	go p.serve()
	log.Info("hosted kube-apiservers' egress proxy listening", "socket", p.Socket)
	return p, nil
}

func (p *egressProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		client := peerPID(c)
		if !p.take(client) {
			hostedEgressConnects.WithLabelValues("busy").Inc()
			_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
			c.Close()
			continue
		}
		p.track(c, true)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.give(client)
			defer p.track(c, false)
			p.handle(c)
		}()
	}
}

// take counts a new connection of client, unless it holds egressMaxTunnels already.
func (p *egressProxy) take(client int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tunnels[client] >= egressMaxTunnels {
		return false
	}
	p.tunnels[client]++
	return true
}

// give uncounts a connection of client.
func (p *egressProxy) give(client int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tunnels[client]--; p.tunnels[client] <= 0 {
		delete(p.tunnels, client)
	}
}

// peerPID is the process ID of the client at the other end of a unix socket connection (its
// SO_PEERCRED, set when it connected), 0 if it cannot be read.
func peerPID(c net.Conn) int32 {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	var pid int32
	_ = raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			pid = cred.Pid
		}
	})
	return pid
}

// track records an open connection, so Stop can close it.
func (p *egressProxy) track(c net.Conn, open bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if open {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
		c.Close()
	}
}

// handle reads one CONNECT request, reaches its target if the policy admits it, and then
// copies bytes both ways until either side closes.
func (p *egressProxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(egressRequestTimeout))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		answer(c, http.StatusMethodNotAllowed)
		return
	}
	target := req.RequestURI
	ctx, cancel := context.WithTimeout(context.Background(), egressRequestTimeout)
	up, err := p.dial(ctx, target)
	cancel()
	if err != nil {
		code, result := http.StatusBadGateway, "failed"
		switch {
		case errors.Is(err, errEgressRefused):
			code, result = http.StatusForbidden, "refused"
		case errors.Is(err, errEgressUnresolved):
			code = http.StatusForbidden
		}
		hostedEgressConnects.WithLabelValues(result).Inc()
		// At V(1): a customer's APIService is checked again every few seconds, and each of
		// their requests may call a webhook; the counter says how often.
		p.log.V(1).Info("hosted kube-apiserver egress not reached", "target", target, "code", code, "err", err.Error())
		answer(c, code)
		return
	}
	hostedEgressConnects.WithLabelValues("tunnelled").Inc()
	p.track(up, true)
	defer p.track(up, false)
	_ = c.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, br) // what the client sent after its request, and the rest
		closeWrite(up)
		// The client is done: a target that keeps its side open without a word does not hold
		// the tunnel's slot for longer than this.
		_ = up.SetReadDeadline(time.Now().Add(egressDrainTimeout))
	}()
	_, _ = io.Copy(c, up)
	closeWrite(c)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

func answer(c net.Conn, code int) {
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n", code, http.StatusText(code))
}

// dial resolves target (host:port) and connects to its first address, if every address it
// resolves to is admitted (check): the proxy dials the address it checked, so no later
// resolution can send the connection elsewhere.
func (p *egressProxy) dial(ctx context.Context, target string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil || host == "" || port == "" {
		return nil, fmt.Errorf("target %q is not host:port: %w", target, errEgressRefused)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", strings.TrimSuffix(host, "."))
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w: %w", host, err, errEgressUnresolved)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no address: %w", host, errEgressUnresolved)
	}
	for _, a := range addrs {
		if err := p.check(a); err != nil {
			return nil, fmt.Errorf("%s: %w", host, err)
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(addrs[0].Unmap().String(), port))
}

// check admits an address in the allow-list, or a public unicast address that is not one of
// the machine's own.
func (p *egressProxy) check(a netip.Addr) error {
	a = a.Unmap().WithZone("")
	for _, pfx := range p.allowed {
		if pfx.Contains(a) {
			return nil
		}
	}
	if rule := publicaddr.Rule(a); rule != "" {
		return fmt.Errorf("address %s is %s, not the hosted cluster's network: %w", a, rule, errEgressRefused)
	}
	own, err := p.ownAddrs()
	if err != nil {
		return fmt.Errorf("list this machine's addresses: %w", err)
	}
	for _, o := range own {
		if o == a {
			return fmt.Errorf("address %s is this machine's own: %w", a, errEgressRefused)
		}
	}
	return nil
}

// interfaceAddrs lists the addresses of the network namespace's interfaces.
func interfaceAddrs() ([]netip.Addr, error) {
	list, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(list))
	for _, a := range list {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pfx.Addr().Unmap())
		}
	}
	return out, nil
}

// Stop closes the socket and every tunnel, and waits for them.
func (p *egressProxy) Stop() {
	p.l.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	_ = os.Remove(p.Socket)
	if p.tempDir {
		sockdir.Remove(p.dir)
	}
}
