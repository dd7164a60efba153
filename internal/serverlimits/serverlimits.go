// Package serverlimits owns the limits every HTTP and gRPC server of the region runs with: how
// long a caller may take to send its headers and body, how long a response may take, how large
// headers and messages may be, and how many connections and streams a server holds at once.
// Each service builds its servers from here, so a limit is changed in one place.
package serverlimits

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// HTTP are the limits of one HTTP listener.
type HTTP struct {
	// ReadHeaderTimeout closes a connection whose request headers (and, under TLS, handshake)
	// are not in by then: a slowloris caller holds a connection this long at most.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end of its response.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int
	// MaxConns caps the connections open at once. At the cap, a connection is closed to make
	// room for a caller who is waiting: the one kept alive and idle longest between two
	// requests, as its idle timeout would, or else the one whose request has not finished
	// arriving for longest, past UnfinishedGrace (nothing sent, a header trickled in, or over
	// HTTP/1 a body announced and held back). With neither, the next caller waits until one
	// closes, and those already connected are served meanwhile: a request that is in (headers,
	// and its body read to its end) is never closed for room.
	MaxConns int
	// MaxConnAge is how long a connection is kept: the response to the first request after it
	// carries "Connection: close" (HTTP/2: a GOAWAY), so the client's next request makes a new
	// handshake against the certificate and CA files of the moment. A kept-alive connection
	// would otherwise keep the identity of its first handshake for as long as its client
	// keeps it busy, past a CA rollover. 0 keeps connections for ever.
	MaxConnAge time.Duration
}

// DefaultMaxConnAge bounds every connection of the region's servers, HTTP and gRPC: a
// connection outlives a CA rollover by this much at most (each request and call also checks
// the client certificate's expiry itself). A new connection costs one full handshake, some
// milliseconds, every quarter of an hour per client.
const DefaultMaxConnAge = 15 * time.Minute

// API are the limits of request/response APIs: the ARM frontend, the admin API and the
// portal's local proxy. None of them streams. The body limit (4 MiB) arrives well within
// ReadTimeout on any working link; WriteTimeout leaves room for a handler's slowest call
// (Cluster Service calls are bounded at 30 s).
func API() HTTP {
	return HTTP{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		MaxConns:          1024,
		MaxConnAge:        DefaultMaxConnAge,
	}
}

// Metrics are the limits of the metrics and profiling listeners: few callers (scrapers, an
// engineer with go tool pprof), and a CPU profile or trace may take up to WriteTimeout
// (net/http/pprof refuses a ?seconds= at or above it).
func Metrics() HTTP {
	return HTTP{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		MaxConns:          64,
		MaxConnAge:        DefaultMaxConnAge,
	}
}

// Server is an http.Server for handler on addr with these limits; tlsConfig may be nil.
func (h HTTP) Server(addr string, handler http.Handler, tlsConfig *tls.Config) *http.Server {
	hs := &http.Server{
		Addr:              addr,
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: h.ReadHeaderTimeout,
		ReadTimeout:       h.ReadTimeout,
		WriteTimeout:      h.WriteTimeout,
		IdleTimeout:       h.IdleTimeout,
		MaxHeaderBytes:    h.MaxHeaderBytes,
	}
	if h.MaxConnAge > 0 {
		if handler == nil {
			handler = http.DefaultServeMux
		}
		hs.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connStartKey{}, time.Now())
		}
		hs.Handler = closeAged(handler, h.MaxConnAge)
	}
	return hs
}

// connStartKey keys the time a connection was accepted in its requests' contexts.
type connStartKey struct{}

// closeAged serves next, and asks the server to close the connection after the response once
// the connection is maxAge old: net/http closes an HTTP/1 connection whose response says
// "Connection: close", and HTTP/2 sends a GOAWAY for it.
func closeAged(next http.Handler, maxAge time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An upgrade is left alone: the upgraded connection leaves the server anyway, and a
		// reverse proxy copies our header into its 101 beside "Connection: Upgrade", which a
		// client then reads as no upgrade at all (TestAgedConnectionUpgradeKeepsItsAnswer).
		if start, ok := r.Context().Value(connStartKey{}).(time.Time); ok && time.Since(start) >= maxAge && r.Header.Get("Upgrade") == "" {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// Unlike lists what of srv's limits are not h's (or a timeout not set at all), one
// "Field = got, want want" a difference: what a test of a server built from h checks.
func (h HTTP) Unlike(srv *http.Server) []string {
	var out []string
	for _, c := range []struct {
		field     string
		got, want time.Duration
	}{
		{"ReadHeaderTimeout", srv.ReadHeaderTimeout, h.ReadHeaderTimeout},
		{"ReadTimeout", srv.ReadTimeout, h.ReadTimeout},
		{"WriteTimeout", srv.WriteTimeout, h.WriteTimeout},
		{"IdleTimeout", srv.IdleTimeout, h.IdleTimeout},
	} {
		if c.got != c.want || c.got <= 0 {
			out = append(out, fmt.Sprintf("%s = %v, want %v", c.field, c.got, c.want))
		}
	}
	if h.MaxConnAge > 0 && srv.ConnContext == nil {
		out = append(out, fmt.Sprintf("MaxConnAge = %v, but the server does not age its connections (no ConnContext)", h.MaxConnAge))
	}
	if srv.MaxHeaderBytes != h.MaxHeaderBytes {
		out = append(out, fmt.Sprintf("MaxHeaderBytes = %d, want %d", srv.MaxHeaderBytes, h.MaxHeaderBytes))
	}
	return out
}

// Listen listens on hs.Addr for hs: TCP capped at MaxConns connections, then TLS when
// hs.TLSConfig is set (the cap is below TLS, so the server still sees *tls.Conn and applies its
// handshake deadline).
func (h HTTP) Listen(hs *http.Server) (net.Listener, error) {
	l, err := net.Listen("tcp", hs.Addr)
	if err != nil {
		return nil, err
	}
	if h.MaxConns > 0 {
		room := newRoomConns()
		next := hs.ConnState
		hs.ConnState = func(c net.Conn, st http.ConnState) {
			room.track(c, st)
			if next != nil {
				next(c, st)
			}
		}
		// A request is in once the server calls the handler and, over HTTP/1, its body has been
		// read to its end: its connection (the one ConnState names, *tls.Conn under TLS) is then
		// no longer closed for room.
		connContext := hs.ConnContext
		hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			if connContext != nil {
				ctx = connContext(ctx, c)
			}
			return context.WithValue(ctx, roomConnKey{}, c)
		}
		handler := hs.Handler
		if handler == nil {
			handler = http.DefaultServeMux
		}
		hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body *bodyEnd
			if c, ok := r.Context().Value(roomConnKey{}).(net.Conn); ok {
				body = room.serving(c, r)
			}
			handler.ServeHTTP(w, r)
			if body != nil && !body.ended.Load() {
				// Answered without the whole body read (a refusal, /healthz): net/http would
				// read up to 256 KiB of the rest, for up to ReadTimeout, before it sent the
				// answer. The read ends now: the answer goes out and the connection closes.
				_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			}
		})
		l = &limitListener{Listener: l, slots: make(chan struct{}, h.MaxConns), done: make(chan struct{}), room: room}
	}
	if hs.TLSConfig != nil {
		l = tls.NewListener(l, hs.TLSConfig)
	}
	return l, nil
}

// LimitListener lets at most n connections of l be open at once: Accept waits for one to
// close. n <= 0 means no cap.
func LimitListener(l net.Listener, n int) net.Listener {
	if n <= 0 {
		return l
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	// room, when set, holds the server's connections that may be closed to make room at the
	// cap (HTTP.Listen: roomConns; GRPC.Listen: silentConns).
	room roomMaker
}

// roomMaker holds a capped listener's connections that may be closed for a caller who waits.
type roomMaker interface {
	// accepted is the connection the server is handed for c.
	accepted(c net.Conn) net.Conn
	// closeOne closes one connection that may be closed at now, if any.
	closeOne(now time.Time)
	// wake is signalled when a connection becomes one to close (nil: never; the waiting caller
	// looks again every roomRecheck).
	wake() <-chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	if l.room != nil {
		return l.acceptMakingRoom()
	}
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// acceptMakingRoom accepts a caller first, then takes a slot for it: at the cap, it closes the
// connection kept alive and idle longest (costing its client one new handshake), or else the
// one whose request has not finished arriving for longest past UnfinishedGrace, and waits
// for one to become so or close if none is. Left open, one caller's idle connections kept every
// other caller waiting (a probe: an SRE's 1,024 kept-alive connections to the admin API, 15 s
// for another), and so did half-sent requests (a probe: a metrics listener's 64, re-sent as
// ReadHeaderTimeout closed them; health probes failed for 36 s; and bodies announced and held
// back, a review found, for ReadTimeout a round). Only a caller that is there
// makes room, so below the cap, or at it with no one waiting, connections stay.
func (l *limitListener) acceptMakingRoom() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// The caller joins the room only with its slot: one still waiting is never closed for
	// another (nor for itself).
	for {
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: l.room.accepted(c), release: func() { <-l.slots }}, nil
		default:
		}
		l.room.closeOne(time.Now())
		recheck := time.NewTimer(roomRecheck)
		select {
		case l.slots <- struct{}{}:
			recheck.Stop()
			return &limitConn{Conn: l.room.accepted(c), release: func() { <-l.slots }}, nil
		case <-l.room.wake(): // a connection became idle: close it for this caller
		case <-recheck.C: // an unfinished request may have passed UnfinishedGrace
		case <-l.done:
			recheck.Stop()
			c.Close()
			return nil, net.ErrClosed
		}
		recheck.Stop()
	}
}

// UnfinishedGrace is how long a connection may take to send its request (headers, and over
// HTTP/1 its body) before it may be closed to make room at the cap: far longer than any working
// client takes on the links these servers serve (the headers follow the handshake at once, and
// a body its headers; the largest, 4 MiB, takes milliseconds), far shorter than
// ReadHeaderTimeout and ReadTimeout, which close it anyway.
const UnfinishedGrace = time.Second

// roomRecheck is how often a caller waiting at the cap looks again for an unfinished request
// that has passed UnfinishedGrace.
const roomRecheck = 100 * time.Millisecond

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// roomConnKey keys a request's connection in its context (HTTP.Listen).
type roomConnKey struct{}

// roomConns are an HTTP server's connections that may be closed to make room at the cap, with
// the time each became so: those kept alive and idle between two requests, and those whose
// request is not in yet (http.Server.ConnState; the handler's call, or over HTTP/1 the end of
// the body, ends the latter).
type roomConns struct {
	mu         sync.Mutex
	idle       map[net.Conn]time.Time
	unfinished map[net.Conn]time.Time
	idleWake   chan struct{} // signalled when a connection becomes idle
}

func newRoomConns() *roomConns {
	return &roomConns{idle: map[net.Conn]time.Time{}, unfinished: map[net.Conn]time.Time{}, idleWake: make(chan struct{}, 1)}
}

// accepted: the server's ConnState tells which connections may be closed.
func (i *roomConns) accepted(c net.Conn) net.Conn { return c }

func (i *roomConns) wake() <-chan struct{} { return i.idleWake }

func (i *roomConns) track(c net.Conn, st http.ConnState) {
	i.mu.Lock()
	defer i.mu.Unlock()
	switch st {
	case http.StateNew:
		i.unfinished[c] = time.Now()
	case http.StateActive: // the next request's first byte is in (HTTP/2: its first stream)
		delete(i.idle, c)
		if _, ok := i.unfinished[c]; !ok {
			i.unfinished[c] = time.Now()
		}
	case http.StateIdle:
		delete(i.unfinished, c)
		i.idle[c] = time.Now()
		select {
		case i.idleWake <- struct{}{}:
		default:
		}
	default: // hijacked or closed
		delete(i.idle, c)
		delete(i.unfinished, c)
	}
}

// serving records that the server calls the handler for r on c. Without a body to come, the
// request is in: c is no longer closed for room. An HTTP/1 body keeps c as unfinished until it
// has been read to its end: until then the connection waits on its client, whether the handler
// reads the body or not (the server reads what a handler leaves, to discard it, before the
// connection serves again), and a caller who announces a body and holds it back would
// otherwise keep the slot until ReadTimeout. The APIs read a body whole before they act on it,
// so a request being acted on is never closed. HTTP/2 multiplexes requests on a connection and
// its server bounds each stream's body itself: its requests are in with their headers.
// It returns the body it watches, nil for none.
func (i *roomConns) serving(c net.Conn, r *http.Request) *bodyEnd {
	if r.ProtoMajor == 1 && r.Body != nil && r.Body != http.NoBody {
		b := &bodyEnd{ReadCloser: r.Body, end: func() { i.requestIn(c) }}
		r.Body = b
		return b
	}
	i.requestIn(c)
	return nil
}

// requestIn records that c's request is in: it is no longer closed for room.
func (i *roomConns) requestIn(c net.Conn) {
	i.mu.Lock()
	delete(i.unfinished, c)
	i.mu.Unlock()
}

// bodyEnd is a request body that calls end once it has been read to its end (ended: atomic, as
// a handler's proxy may still read it after the handler returned).
type bodyEnd struct {
	io.ReadCloser
	ended atomic.Bool
	end   func()
}

func (b *bodyEnd) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.ended.Swap(true) {
		b.end()
	}
	return n, err
}

// closeOne closes the connection idle longest, or else the one unfinished longest if that is
// UnfinishedGrace old at now, if any: the server then drops it, and its slot frees.
func (i *roomConns) closeOne(now time.Time) {
	i.mu.Lock()
	victim, from := oldest(i.idle), i.idle
	if victim == nil {
		if c := oldest(i.unfinished); c != nil && now.Sub(i.unfinished[c]) >= UnfinishedGrace {
			victim, from = c, i.unfinished
		}
	}
	delete(from, victim)
	i.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}
}

// oldest is the connection of since with the earliest time, nil for none.
func oldest(since map[net.Conn]time.Time) net.Conn {
	var o net.Conn
	var at time.Time
	for c, t := range since {
		if o == nil || t.Before(at) {
			o, at = c, t
		}
	}
	return o
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Prove proves the connection below (Prover), if it is one of a room's.
func (c *limitConn) Prove() {
	if p, ok := c.Conn.(Prover); ok {
		p.Prove()
	}
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// GRPC are the limits of a gRPC server.
type GRPC struct {
	// MaxRecvMsgSize bounds one request message. No call of ours carries more than an ARM body,
	// whose limit is 4 MiB.
	MaxRecvMsgSize int
	// MaxConcurrentStreams bounds the calls open at once on one connection (watches included);
	// more wait at the client.
	MaxConcurrentStreams uint32
	// ConnectionTimeout bounds a new connection's handshake (TLS included).
	ConnectionTimeout time.Duration
	// MinPingInterval is the closest keepalive pings a client may send; a client pinging more
	// often is disconnected (GOAWAY too_many_pings).
	MinPingInterval time.Duration
	// PingAfter and PingTimeout detect a dead peer: the server pings after PingAfter without
	// activity and closes the connection if no answer comes within PingTimeout.
	PingAfter, PingTimeout time.Duration
	// MaxConns caps the connections open at once, as HTTP.MaxConns.
	MaxConns int
	// MaxConnectionAge and MaxConnectionAgeGrace bound a connection's life: after
	// MaxConnectionAge (gRPC adds +/-10% jitter) the server sends a GOAWAY, the client opens
	// its next calls on a new connection (a new handshake against the certificate and CA files
	// of the moment), and calls still open on the old one get MaxConnectionAgeGrace to end
	// before the connection is closed under them. Without it a connection, and a Watch stream
	// on it, lives as long as its process, past its certificate's expiry and a CA rollover.
	MaxConnectionAge, MaxConnectionAgeGrace time.Duration
}

// GRPCDefaults are the limits of Cluster Service's gRPC API.
func GRPCDefaults() GRPC {
	return GRPC{
		MaxRecvMsgSize:       4 << 20,
		MaxConcurrentStreams: 1024,
		ConnectionTimeout:    10 * time.Second,
		MinPingInterval:      10 * time.Second,
		PingAfter:            time.Minute,
		PingTimeout:          20 * time.Second,
		MaxConns:             1024,
		// A quarter of an hour, as HTTP (DefaultMaxConnAge). A unary call is bounded at 30 s
		// by its callers, so a minute of grace lets every one end. A Watch stream is longer
		// and is cut when the grace ends: its client sees Unavailable and reopens it after the
		// last revision it received (clusterstatus.Cache.Follow, reconcile.Follow), so no event
		// is lost, and it re-reads a snapshot only if that revision was compacted away within its
		// reconnection delay (500 ms after a stream that carried messages). A stream therefore outlives its certificate or a CA
		// rollover by 17.5 minutes at most.
		MaxConnectionAge:      DefaultMaxConnAge,
		MaxConnectionAgeGrace: time.Minute,
	}
}

// ServerOptions are the grpc.NewServer options that apply these limits.
func (g GRPC) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(g.MaxRecvMsgSize),
		grpc.MaxConcurrentStreams(g.MaxConcurrentStreams),
		grpc.ConnectionTimeout(g.ConnectionTimeout),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: g.MinPingInterval, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: g.PingAfter, Timeout: g.PingTimeout,
			MaxConnectionAge: g.MaxConnectionAge, MaxConnectionAgeGrace: g.MaxConnectionAgeGrace}),
	}
}

// Listen listens on addr for a gRPC server, capped at MaxConns connections. At the cap, the
// connection that has sent nothing for longest, once UnfinishedGrace old, is closed for a caller
// who waits: gRPC's server has no ConnState to tell a finished handshake from an unfinished one,
// and a silent connection waits out ConnectionTimeout, so a flood of silent sockets kept every
// new caller waiting about that long (a probe: 1,200 silent sockets from a process holding no
// credential, a new mutual-TLS connection 8 s). A connection that has sent a byte is left to
// ConnectionTimeout (a handshake trickled in) or served.
func (g GRPC) Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return SilentRoomListener(l, g.MaxConns), nil
}

// SilentRoomListener lets at most n connections of l be open at once (n <= 0: no cap); at the
// cap it closes, for a caller who waits, the connection that has sent nothing for longest, once
// UnfinishedGrace old (GRPC.Listen). For servers that cannot tell a finished handshake from an
// unfinished one: gRPC's, and a byte-for-byte forward.
func SilentRoomListener(l net.Listener, n int) net.Listener {
	if n <= 0 {
		return l
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{}),
		room: &silentConns{since: map[net.Conn]time.Time{}}}
}

// ProvenRoomListener is SilentRoomListener with a stronger rule for who stays: a connection may
// be closed for a caller who waits, once UnfinishedGrace old, until its server calls Prove on it
// (the net.Conn Accept returns has a Prove method). A byte sent proves nothing: for servers whose
// forward can tell a caller that proved itself (Prover), such as a TLS pass-through to a server
// that requires a client certificate, where a caller without one can still send a ClientHello,
// or a whole handshake, and hold its slot until the server drops it.
func ProvenRoomListener(l net.Listener, n int) net.Listener {
	if n <= 0 {
		return l
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{}),
		room: &silentConns{since: map[net.Conn]time.Time{}, untilProven: true}}
}

// Prover is a connection accepted from SilentRoomListener or ProvenRoomListener: Prove takes it
// out of those that may be closed for room, for good.
type Prover interface {
	Prove()
}

// silentConns are a listener's connections that have not sent a byte yet (untilProven: not been
// proven yet), with the time each was accepted.
type silentConns struct {
	mu          sync.Mutex
	since       map[net.Conn]time.Time // of *silentConn
	untilProven bool                   // a byte read does not take a connection out: only Prove
}

func (s *silentConns) accepted(c net.Conn) net.Conn {
	sc := &silentConn{Conn: c, room: s}
	s.mu.Lock()
	s.since[sc] = time.Now()
	s.mu.Unlock()
	return sc
}

func (s *silentConns) wake() <-chan struct{} { return nil }

func (s *silentConns) forget(c *silentConn) {
	s.mu.Lock()
	delete(s.since, c)
	s.mu.Unlock()
}

// closeOne closes the connection silent longest, if it has been so for UnfinishedGrace at now.
func (s *silentConns) closeOne(now time.Time) {
	s.mu.Lock()
	victim := oldest(s.since)
	if victim != nil && now.Sub(s.since[victim]) < UnfinishedGrace {
		victim = nil
	}
	delete(s.since, victim)
	s.mu.Unlock()
	if victim != nil {
		_ = victim.(*silentConn).Conn.Close() // the server's read fails, and it closes the connection, freeing its slot
	}
}

// silentConn is a connection that leaves silentConns with its first byte (untilProven: its
// Prove) or its close.
type silentConn struct {
	net.Conn
	room  *silentConns
	heard atomic.Bool
}

func (c *silentConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.room.untilProven {
		c.Prove()
	}
	return n, err
}

// Prove takes c out of the connections that may be closed for room.
func (c *silentConn) Prove() {
	if !c.heard.Swap(true) {
		c.room.forget(c)
	}
}

func (c *silentConn) Close() error {
	c.room.forget(c)
	return c.Conn.Close()
}

// Served is one HTTP server with the limits it was built with (Limits.Server).
type Served struct {
	Limits HTTP
	Server *http.Server
}

// ServeHTTP listens on every server (Limits.Listen), serves until ctx ends or one of them
// stops, then shuts them all down, giving open requests up to grace. It returns the error that
// stopped a server, or nil after ctx ended.
func ServeHTTP(ctx context.Context, log *slog.Logger, grace time.Duration, servers ...Served) error {
	errc := make(chan error, len(servers))
	var started []*http.Server
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		for _, hs := range started {
			_ = hs.Shutdown(shutdownCtx)
		}
	}()
	for _, s := range servers {
		l, err := s.Limits.Listen(s.Server)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", s.Server.Addr, err)
		}
		started = append(started, s.Server)
		log.Info("listening", "address", l.Addr().String(), "tls", s.Server.TLSConfig != nil)
		go func() { errc <- s.Server.Serve(l) }()
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		return nil
	case err := <-errc:
		return fmt.Errorf("server stopped: %w", err)
	}
}
