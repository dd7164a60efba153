package tlsconfig

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Session resumption. A resumed TLS 1.3 handshake skips both certificate chains and signatures
// (about 2 ms of CPU across both sides of a mutual-TLS handshake here), so clients keep a session
// cache and servers seal tickets under keys of their own. The rules that make it safe:
//   - a server seals tickets under random keys held in memory only, rotated every
//     TicketKeyRotation and kept TicketKeyLifetime; and a session resumes only within
//     TicketKeyLifetime of its full handshake, whose time every re-issued ticket carries on;
//   - a ticket is bound to the server's TLS files (certificate, key, client CA bundle) of the
//     moment it was issued: after a renewal or a CA rollover step it no longer resumes, and the
//     next handshake is a full one against the files of the moment;
//   - a client keys its cached sessions by its own TLS files in the same way, so a renewed (or
//     replaced) client certificate is presented in full, never caches a session that may come
//     from a handshake under other files (filesSessionCache), and it re-verifies the server's chain
//     and identity on a resumed connection too (VerifyConnection runs on every handshake);
//   - crypto/tls restores the peer's certificates and verified chains on a resumed connection,
//     so per-request identity checks (SPIFFE ID, subject allow-lists, revocation) see the
//     original handshake's verified client; it does not call VerifyPeerCertificate then, which
//     is why no check of ours lives there.

const (
	// TicketKeyRotation is how often a server makes a new session ticket key.
	TicketKeyRotation = time.Hour
	// TicketKeyLifetime is how long a ticket key still opens tickets: a session resumes at most
	// this long after the handshake that made it.
	TicketKeyLifetime = 2 * TicketKeyRotation
	// clientSessions is how many sessions one client config keeps (one per server name or
	// address it talks to).
	clientSessions = 64
	// bindingPrefix marks the SessionState.Extra entry that binds a ticket to the server's files.
	bindingPrefix = "openhcp-tls-files:"
	// originPrefix marks the SessionState.Extra entry holding the time of the session's full
	// handshake, carried through the tickets re-issued on resumed handshakes.
	originPrefix = "openhcp-tls-origin:"
)

// ticketKeys seals one server config's session tickets. Its keys exist only in this process:
// a restarted server resumes nothing, and no key is shared with another listener.
type ticketKeys struct {
	now func() time.Time

	mu     sync.Mutex
	keys   []ticketKey // newest first
	sealer *tls.Config // holds keys, for EncryptTicket and DecryptTicket
}

type ticketKey struct {
	key  [32]byte
	made time.Time
}

func newTicketKeys(now func() time.Time) *ticketKeys {
	if now == nil {
		now = time.Now
	}
	return &ticketKeys{now: now}
}

// current returns a config holding the keys of the moment: keys TicketKeyLifetime old are
// dropped on every call (not only when a new key is due), and a new key is made when the newest
// is TicketKeyRotation old.
func (t *ticketKeys) current() (*tls.Config, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	keys := make([]ticketKey, 0, len(t.keys)+1)
	for _, old := range t.keys {
		if now.Sub(old.made) < TicketKeyLifetime {
			keys = append(keys, old)
		}
	}
	if t.sealer != nil && len(keys) == len(t.keys) && now.Sub(keys[0].made) < TicketKeyRotation {
		return t.sealer, nil
	}
	if len(keys) == 0 || now.Sub(keys[0].made) >= TicketKeyRotation {
		var k ticketKey
		if _, err := rand.Read(k.key[:]); err != nil {
			return nil, fmt.Errorf("make a session ticket key: %w", err)
		}
		k.made = now
		keys = append([]ticketKey{k}, keys...)
	}
	raw := make([][32]byte, len(keys))
	for i, k := range keys {
		raw[i] = k.key
	}
	sealer := &tls.Config{}
	sealer.SetSessionTicketKeys(raw)
	t.keys, t.sealer = keys, sealer
	return sealer, nil
}

// resumeWith sets c's WrapSession and UnwrapSession so that its tickets are sealed under keys
// and resume only while the server's files are still those whose digest is files, and only
// within TicketKeyLifetime of the full handshake that made the session: crypto/tls issues a
// new ticket on every resumed TLS 1.3 handshake, and that ticket carries the full handshake's
// time (originPrefix) on. Since that time passes from the handshake's UnwrapSession to its
// WrapSession, each handshake gets hooks of its own: resumeWith also sets GetConfigForClient
// (when c has none) to serve each handshake from a copy of c with fresh hooks. A caller that
// already builds one config per handshake (Files.ServerClientAuth) calls it on that config.
func (keys *ticketKeys) resumeWith(c *tls.Config, files [32]byte) {
	keys.hooks(c, files)
	if c.GetConfigForClient == nil {
		base := c.Clone()
		c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			hc := base.Clone()
			keys.hooks(hc, files)
			return hc, nil
		}
	}
}

// hooks sets c's WrapSession and UnwrapSession for one handshake.
func (keys *ticketKeys) hooks(c *tls.Config, files [32]byte) {
	binding := append([]byte(bindingPrefix), files[:]...)
	var mu sync.Mutex
	var origin time.Time // the full handshake of the session this handshake resumed
	c.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		sealer, err := keys.current()
		if err != nil {
			return nil, err
		}
		made := keys.now()
		if cs.DidResume {
			mu.Lock()
			made = origin
			mu.Unlock()
			if made.IsZero() {
				return nil, errors.New("seal a session ticket: the resumed session's full-handshake time is unknown")
			}
		}
		ss.Extra = append(ss.Extra, binding, originEntry(made))
		return sealer.EncryptTicket(cs, ss)
	}
	c.UnwrapSession = func(ticket []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
		sealer, err := keys.current()
		if err != nil {
			return nil, nil // a full handshake instead
		}
		ss, err := sealer.DecryptTicket(ticket, cs)
		if err != nil || ss == nil {
			return nil, nil
		}
		if !slices.ContainsFunc(ss.Extra, func(e []byte) bool { return bytes.Equal(e, binding) }) {
			return nil, nil // issued under other files: a full handshake verifies the peer again
		}
		made, ok := sessionOrigin(ss.Extra)
		if !ok || keys.now().Sub(made) >= TicketKeyLifetime {
			return nil, nil // too long since the full handshake: verify the peer again
		}
		mu.Lock()
		if origin.IsZero() || made.Before(origin) {
			origin = made // of several offered sessions, the oldest counts
		}
		mu.Unlock()
		return ss, nil
	}
}

// originEntry is the SessionState.Extra entry holding the time of a session's full handshake.
func originEntry(made time.Time) []byte {
	return binary.BigEndian.AppendUint64([]byte(originPrefix), uint64(made.UnixNano()))
}

// sessionOrigin reads the time of the session's full handshake from its Extra entries.
func sessionOrigin(extra [][]byte) (time.Time, bool) {
	for _, e := range extra {
		if rest, ok := bytes.CutPrefix(e, []byte(originPrefix)); ok && len(rest) == 8 {
			return time.Unix(0, int64(binary.BigEndian.Uint64(rest))), true
		}
	}
	return time.Time{}, false
}

// filesSessionCache is a client's session cache whose entries are keyed by the client's own TLS
// files as well as the server: a session made under a certificate or CA bundle the client no
// longer has is never offered again.
//
// A ticket arrives after its handshake (crypto/tls calls Put when the client next reads), and
// Put is not told which handshake it comes from. So Get, called at the start of every
// handshake, notes the files each handshake to a server began with, and Put stores a session
// only if no handshake to that server began under other files within sessionPutWindow: a
// session of an identity the client no longer has is dropped, never stored under the new
// files' key. The window is TicketKeyLifetime and a minute, past which a server of this package
// no longer resumes the session anyway. Its price: for that long after the client's files change,
// new sessions to a server it talked to under the old files are not cached, and those
// connections make full handshakes.
type filesSessionCache struct {
	src   *source
	now   func() time.Time
	cache tls.ClientSessionCache

	mu    sync.Mutex
	begun map[string]map[[32]byte]time.Time // server -> files digest -> last handshake begun
}

// sessionPutWindow is how long after a handshake began under some files a session may still
// arrive from it (see filesSessionCache).
const sessionPutWindow = TicketKeyLifetime + time.Minute

func newFilesSessionCache(src *source, now func() time.Time) *filesSessionCache {
	if now == nil {
		now = time.Now
	}
	return &filesSessionCache{src: src, now: now, cache: tls.NewLRUClientSessionCache(clientSessions),
		begun: map[string]map[[32]byte]time.Time{}}
}

func cacheKey(sum [32]byte, server string) string {
	return fmt.Sprintf("%x|%s", sum, server)
}

func (c *filesSessionCache) Get(server string) (*tls.ClientSessionState, bool) {
	sum := c.src.state().sum
	now := c.now()
	c.mu.Lock()
	c.prune(now)
	if c.begun[server] == nil {
		c.begun[server] = map[[32]byte]time.Time{}
	}
	c.begun[server][sum] = now
	c.mu.Unlock()
	return c.cache.Get(cacheKey(sum, server))
}

func (c *filesSessionCache) Put(server string, cs *tls.ClientSessionState) {
	sum := c.src.state().sum
	if cs == nil { // crypto/tls dropping a session that did not resume
		c.cache.Put(cacheKey(sum, server), nil)
		return
	}
	now := c.now()
	c.mu.Lock()
	c.prune(now)
	for other := range c.begun[server] {
		if other != sum {
			c.mu.Unlock()
			return // it may come from a handshake under the other files: not cached
		}
	}
	c.mu.Unlock()
	c.cache.Put(cacheKey(sum, server), cs)
}

// prune forgets handshakes begun more than sessionPutWindow ago. c.mu is held.
func (c *filesSessionCache) prune(now time.Time) {
	for server, sums := range c.begun {
		for sum, at := range sums {
			if now.Sub(at) >= sessionPutWindow {
				delete(sums, sum)
			}
		}
		if len(sums) == 0 {
			delete(c.begun, server)
		}
	}
}

// CountHandshakes makes cfg, a server config from Files.Server or Files.ServerClientAuth, call
// count once per handshake whose certificates verified (or that resumed a session), with
// whether it resumed. It is what a handshake metric hangs on.
func CountHandshakes(cfg *tls.Config, count func(resumed bool)) {
	next := cfg.GetConfigForClient
	if next == nil {
		return
	}
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := next(hello)
		if err != nil || c == nil {
			return c, err
		}
		verify := c.VerifyConnection
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if verify != nil {
				if err := verify(cs); err != nil {
					return err
				}
			}
			count(cs.DidResume)
			return nil
		}
		return c, nil
	}
}
