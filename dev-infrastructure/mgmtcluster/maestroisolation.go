package mgmtcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/maestrogate"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/netns"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// The pinned Maestro's REST API has no client authentication (no client-certificate option, no
// token check; docs/security.md), and it binds REST, gRPC, health and metrics to one address
// (--server-hostname). So the launcher runs the server in a network namespace of its own, where
// that address is a loopback no other process of the host shares, and puts its own listeners on
// the host's loopback at the same ports:
//
//   - REST: maestrogate, which requires a client certificate of the region CA and admits only
//     the identities of MaestroServerTLS.RESTClients, then proxies into the namespace;
//   - gRPC, health, metrics: forwarded byte for byte (Maestro's mutual TLS and authorizer guard
//     gRPC, and its forward keeps only proven connections at its cap,
//     maestrogate.InboundClientCertForwardLimits; health and metrics carry nothing secret);
//   - and the other way, from the namespace to the host, the broker, the database and the
//     authorizer apiserver, at the very addresses the server's configuration names.

// maestroIsolation is one server's namespace and the listeners that join it to the host.
type maestroIsolation struct {
	ns  *netns.NS
	log *slog.Logger

	mu        sync.Mutex
	listeners []net.Listener
	outbound  map[string]bool
	rest      *http.Server
	grpc      *maestrogate.Forwarder // the gRPC port's forward
}

// inboundPorts are the server's ports forwarded byte for byte from the host's loopback.
type inboundPorts struct {
	// gRPC is the gRPC source API's port; gRPCMaxConns its forward's cap (0: that of
	// maestrogate.InboundForwardLimits).
	gRPC, gRPCMaxConns int
	// plain are the plaintext ports (health, metrics).
	plain []int
}

// isolateMaestro makes the namespace, the inbound listeners (REST through the gate; gRPC,
// health and metrics forwarded) and the outbound forwards to each of outbound (host:port on
// loopback).
func isolateMaestro(t *MaestroServerTLS, restPort int, inbound inboundPorts, outbound []string, logPath string) (_ *maestroIsolation, err error) {
	ns, err := netns.New()
	if err != nil {
		return nil, fmt.Errorf("maestro server isolation: %w", err)
	}
	lf, _, err := OpenLog(filepath.Dir(logPath), filepath.Base(logPath))
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("maestro gate log: %w", err)
	}
	m := &maestroIsolation{ns: ns, outbound: map[string]bool{},
		log: slog.New(slog.NewTextHandler(lf, nil)).With("component", "maestro-gate")}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	// Maestro's gRPC requires a client certificate of ClientCAFile: at the cap, connections not
	// yet proven make room (docs/security.md, "Server limits"); health and metrics are plaintext
	// and keep the silent rule.
	grpcLimits := maestrogate.InboundClientCertForwardLimits()
	if inbound.gRPCMaxConns > 0 {
		grpcLimits.MaxConns = inbound.gRPCMaxConns
	}
	if m.grpc, err = m.forwardIn(inbound.gRPC, grpcLimits); err != nil {
		return nil, err
	}
	for _, port := range inbound.plain {
		if _, err := m.forwardIn(port, maestrogate.InboundForwardLimits()); err != nil {
			return nil, err
		}
	}
	for _, addr := range outbound {
		if addr == "" {
			continue // a Unix socket (dsnAddr)
		}
		if err := m.addOutbound(addr); err != nil {
			return nil, err
		}
	}

	restAddr := "127.0.0.1:" + strconv.Itoa(restPort)
	serverTLS, err := tlsconfig.Files{CA: t.ClientCAFile, Cert: t.CertFile, Key: t.KeyFile}.Server(restAddr)
	if err != nil {
		return nil, fmt.Errorf("maestro gate TLS: %w", err)
	}
	upstreamTLS, err := tlsconfig.Files{CA: t.CAFile, ServerName: identity.ServerName(identity.MaestroServer)}.Client(restAddr)
	if err != nil {
		return nil, fmt.Errorf("maestro gate upstream TLS: %w", err)
	}
	upstream := &url.URL{Scheme: "https", Host: restAddr}
	gate := maestrogate.New(t.RESTClients, upstream, maestrogate.UpstreamTransport(ns.DialContext, upstreamTLS), m.log)
	m.rest = gate.Server(restAddr, serverTLS, m.log)
	l, err := maestrogate.ServerLimits().Listen(m.rest)
	if err != nil {
		return nil, fmt.Errorf("maestro gate: listen on %s: %w", restAddr, err)
	}
	go func() {
		if err := m.rest.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("maestro gate stopped", "error", err)
		}
	}()
	return m, nil
}

// forwardIn forwards the host's 127.0.0.1:port to the same address in the namespace.
func (m *maestroIsolation) forwardIn(port int, limits maestrogate.ForwardLimits) (*maestrogate.Forwarder, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("maestro server isolation: listen on %s: %w", addr, err)
	}
	m.add(l)
	f := maestrogate.NewForwarder(limits, func(ctx context.Context) (net.Conn, error) { return m.ns.DialContext(ctx, "tcp", addr) }, m.log)
	go f.Serve(l)
	return f, nil
}

func (m *maestroIsolation) add(l net.Listener) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listeners = append(m.listeners, l)
}

// addOutbound lets the server reach addr, a loopback host:port of the host, at the same
// address inside its namespace. Adding one twice is a no-op.
func (m *maestroIsolation) addOutbound(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("maestro server isolation: outbound %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("maestro server isolation: outbound %s is not a loopback IP address; an isolated server reaches only the host's loopback", addr)
	}
	m.mu.Lock()
	seen := m.outbound[addr]
	m.outbound[addr] = true
	m.mu.Unlock()
	if seen {
		return nil
	}
	l, err := m.ns.Listen(addr)
	if err != nil {
		return fmt.Errorf("maestro server isolation: %w", err)
	}
	m.add(l)
	go maestrogate.Forward(l, maestrogate.OutboundForwardLimits(), func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}, m.log)
	return nil
}

// Close ends the listeners, the gate and the namespace's thread.
func (m *maestroIsolation) Close() {
	if m.rest != nil {
		_ = m.rest.Close()
	}
	m.mu.Lock()
	for _, l := range m.listeners {
		_ = l.Close()
	}
	m.listeners = nil
	m.mu.Unlock()
	m.ns.Close()
}

// dsnAddr is the host:port of a postgres:// DSN, or "" when it leads to a Unix socket: a
// network namespace does not separate sockets in the file system, so the server reaches it
// without a forward.
func dsnAddr(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("maestro DSN %q: %w", redactDSN(dsn), err)
	}
	host, port := dsnHostPort(u)
	if strings.HasPrefix(host, "/") {
		return "", nil
	}
	return net.JoinHostPort(host, port), nil
}

// kubeconfigAddr is the host:port of the current cluster of a kubeconfig.
func kubeconfigAddr(path string) (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return "", fmt.Errorf("read kubeconfig %s: %w", path, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", fmt.Errorf("kubeconfig %s: server %q: %w", path, cfg.Host, err)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
