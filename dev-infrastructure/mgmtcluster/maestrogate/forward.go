package maestrogate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openhcp/openhcp/internal/serverlimits"
)

// ForwardLimits bound one Forwarder. Each forwarded connection costs the forwarder two sockets
// (caller's and target's) and two 32 KiB buffers, nothing more: the copies read and write
// through the buffers, so no splice pipe outlives a connection.
type ForwardLimits struct {
	// MaxConns caps the connections forwarded at once. At it, the connection whose caller has
	// sent nothing for longest (past serverlimits.UnfinishedGrace) is closed for a caller who
	// waits; with none such, the next caller waits until a forwarded connection closes. Every
	// caller of these ports sends at once (a TLS ClientHello, an HTTP request), and 256 silent
	// sockets from a process holding no credential kept Cluster Service from reconnecting to
	// Maestro's gRPC for as long as they were held (a probe). 0 means no cap.
	MaxConns int
	// IdleTimeout closes a connection, both ends, when no byte has crossed it either way for
	// this long, and a write that the receiver has not taken in for this long. 0 means none.
	IdleTimeout time.Duration
	// DialTimeout bounds reaching the target; 0 means 10 s.
	DialTimeout time.Duration
	// Proof, when set, changes who may be closed for room at MaxConns: each connection gets a
	// Proof of its own, fed what crosses it either way, and may be closed for a waiting caller,
	// once serverlimits.UnfinishedGrace old, until its Proof says it is proven, whatever its
	// caller sent (serverlimits.ProvenRoomListener). The target's end of the conversation then
	// ends the connection at once, both ways: a caller cannot keep a connection the target
	// closed (as after a failed handshake) open by not closing its own side. Nil: a caller's first
	// byte keeps its connection (serverlimits.SilentRoomListener).
	Proof func() Proof
}

// InboundForwardLimits are the limits of the ports forwarded to Maestro (gRPC, health, metrics),
// which any caller that reaches the listener can open. Maestro's gRPC callers are Cluster
// Service's source clients, a handful per region, pinging every 30 s; a health or metrics call
// is one request. A gRPC connection idle for the timeout is re-dialled by its client on its next
// call.
func InboundForwardLimits() ForwardLimits {
	return ForwardLimits{MaxConns: 256, IdleTimeout: 2 * time.Minute}
}

// InboundClientCertForwardLimits are InboundForwardLimits for a port whose server requires a
// client certificate of its CA over TLS (Maestro's gRPC: TLS 1.3, RequireAndVerifyClientCert): at
// the cap, a connection the server has not yet proven (ClientCertProof) makes room for a caller
// who waits, whatever its caller sent. Under the silent rule alone, ClientHello-only or one-byte
// sockets from a process holding no certificate held every slot until Maestro's handshake
// timeout (120 s), and Cluster Service could not reach Maestro meanwhile
// (mgmtcluster TestMaestroGRPCOutlastsAFlood).
func InboundClientCertForwardLimits() ForwardLimits {
	l := InboundForwardLimits()
	l.Proof = ClientCertProof
	return l
}

// OutboundForwardLimits are the limits of the forwards from an isolated Maestro server to the
// host (broker, database, authorizer apiserver). Their one caller is that server, whose database
// pool may keep a connection idle for as long as it likes, so there is no idle timeout; the cap
// bounds the descriptors a misbehaving server can cost the launcher.
func OutboundForwardLimits() ForwardLimits {
	return ForwardLimits{MaxConns: 256}
}

// Forwarder joins connections accepted on a listener to connections from dial, byte for byte.
// It is for the ports whose server authenticates its callers itself (Maestro's gRPC) or that
// carry nothing secret (health, metrics), and for the server's own way out.
type Forwarder struct {
	limits ForwardLimits
	dial   func(ctx context.Context) (net.Conn, error)
	log    *slog.Logger
	active atomic.Int64
}

// NewForwarder returns a forwarder to the connections dial makes, within limits.
func NewForwarder(limits ForwardLimits, dial func(ctx context.Context) (net.Conn, error), log *slog.Logger) *Forwarder {
	if limits.DialTimeout <= 0 {
		limits.DialTimeout = 10 * time.Second
	}
	return &Forwarder{limits: limits, dial: dial, log: log}
}

// Active is the number of connections being forwarded now.
func (f *Forwarder) Active() int { return int(f.active.Load()) }

// Serve forwards the connections of l until l is closed. Connections already forwarded then
// run on until they close or idle out. Any other Accept error (the process out of descriptors,
// say) is logged and Accept is tried again after a pause of up to a second, as net/http's
// server does: the forward comes back once descriptors are free.
func (f *Forwarder) Serve(l net.Listener) {
	addr := l.Addr().String()
	// The cap; a connection's Close frees its slot.
	if f.limits.Proof != nil {
		l = serverlimits.ProvenRoomListener(l, f.limits.MaxConns)
	} else {
		l = serverlimits.SilentRoomListener(l, f.limits.MaxConns)
	}
	var pause time.Duration
	for {
		in, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			f.log.Warn("forward: accept failed; trying again", "listen", addr, "error", err, "pause", pause)
			time.Sleep(pause)
			continue
		}
		pause = 0
		f.active.Add(1)
		go f.forward(addr, in)
	}
}

// Forward forwards the connections of l to dial within limits until l is closed.
func Forward(l net.Listener, limits ForwardLimits, dial func(ctx context.Context) (net.Conn, error), log *slog.Logger) {
	NewForwarder(limits, dial, log).Serve(l)
}

// countedConn is a forwarded connection that leaves Active as it closes, before its slot frees:
// Active never counts more connections than the cap.
type countedConn struct {
	net.Conn
	once sync.Once
	f    *Forwarder
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.f.active.Add(-1) })
	return c.Conn.Close()
}

func (f *Forwarder) forward(listen string, accepted net.Conn) {
	in := &countedConn{Conn: accepted, f: f}
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), f.limits.DialTimeout)
	out, err := f.dial(ctx)
	cancel()
	if err != nil {
		f.log.Warn("forward: dial failed", "listen", listen, "error", err)
		return
	}
	defer out.Close()
	j := &joint{in: in, out: out, idle: f.limits.IdleTimeout}
	j.touch()
	var fromCaller, fromTarget func([]byte) bool
	if p, ok := accepted.(serverlimits.Prover); ok && f.limits.Proof != nil {
		proof := f.limits.Proof()
		fromCaller = func(b []byte) bool { proof.FromCaller(b); return false }
		fromTarget = func(b []byte) bool {
			if !proof.FromTarget(b) {
				return false
			}
			p.Prove()
			return true
		}
		j.targetEndCloses = true
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); j.copy(out, in, fromCaller) }()
	go func() { defer wg.Done(); j.copy(in, out, fromTarget) }()
	wg.Wait()
}

// joint is one forwarded connection: its two ends and when a byte last crossed it.
type joint struct {
	in, out   net.Conn
	idle      time.Duration
	last      atomic.Int64 // UnixNano of the last byte either way
	closeOnce sync.Once
	// targetEndCloses closes both ends when the target's side ends, instead of half-closing
	// the caller's (ForwardLimits.Proof).
	targetEndCloses bool
}

func (j *joint) touch() { j.last.Store(time.Now().UnixNano()) }

// closeBoth closes both ends, which ends both copies at once.
func (j *joint) closeBoth() {
	j.closeOnce.Do(func() {
		_ = j.in.Close()
		_ = j.out.Close()
	})
}

// copy copies src to dst until src ends (then half-closes dst, as TCP does, and lets the other
// direction finish), an error, or the joint is idle (then closes both ends). proof, when set, is
// fed what src sends until it returns true.
func (j *joint) copy(dst, src net.Conn, proof func([]byte) bool) {
	buf := make([]byte, 32<<10)
	for {
		if j.idle > 0 {
			_ = src.SetReadDeadline(time.Unix(0, j.last.Load()).Add(j.idle))
		}
		n, err := src.Read(buf)
		if n > 0 && proof != nil && proof(buf[:n]) {
			proof = nil
		}
		if n > 0 {
			j.touch()
			if j.idle > 0 {
				_ = dst.SetWriteDeadline(time.Now().Add(j.idle))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				j.closeBoth()
				return
			}
			j.touch()
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded) && time.Since(time.Unix(0, j.last.Load())) < j.idle:
			// The other direction was busy meanwhile: the joint is not idle.
		case errors.Is(err, io.EOF):
			if src == j.out && j.targetEndCloses {
				j.closeBoth()
				return
			}
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
			j.closeBoth()
			return
		default:
			j.closeBoth()
			return
		}
	}
}
