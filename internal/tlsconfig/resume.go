package tlsconfig

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Session resumption. A resumed TLS 1.3 handshake skips both certificate chains and signatures
// (about 2 ms of CPU across both sides of a mutual-TLS handshake here), so clients keep a session
// cache and servers seal tickets under keys of their own. The rules that make it safe:
//   - a server seals tickets under random keys held in memory only, rotated every
//     TicketKeyRotation and kept TicketKeyLifetime: a ticket older than that does not resume;
//   - a ticket is bound to the server's TLS files (certificate, key, client CA bundle) of the
//     moment it was issued: after a renewal or a CA rollover step it no longer resumes, and the
//     next handshake is a full one against the files of the moment;
//   - a client keys its cached sessions by its own TLS files in the same way, so a renewed (or
//     replaced) client certificate is presented in full, and it re-verifies the server's chain
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

// current returns a config holding the keys of the moment, making a new key when the newest is
// TicketKeyRotation old and dropping keys TicketKeyLifetime old.
func (t *ticketKeys) current() (*tls.Config, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if t.sealer != nil && now.Sub(t.keys[0].made) < TicketKeyRotation {
		return t.sealer, nil
	}
	var k ticketKey
	if _, err := rand.Read(k.key[:]); err != nil {
		return nil, fmt.Errorf("make a session ticket key: %w", err)
	}
	k.made = now
	keys := []ticketKey{k}
	for _, old := range t.keys {
		if now.Sub(old.made) < TicketKeyLifetime {
			keys = append(keys, old)
		}
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
// and resume only while the server's files are still those whose digest is files.
func (keys *ticketKeys) resumeWith(c *tls.Config, files [32]byte) {
	binding := append([]byte(bindingPrefix), files[:]...)
	c.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		sealer, err := keys.current()
		if err != nil {
			return nil, err
		}
		ss.Extra = append(ss.Extra, binding)
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
		return ss, nil
	}
}

// filesSessionCache is a client's session cache whose entries are keyed by the client's own TLS
// files as well as the server: a session made under a certificate or CA bundle the client no
// longer has is never offered again.
type filesSessionCache struct {
	src   *source
	cache tls.ClientSessionCache
}

func newFilesSessionCache(src *source) *filesSessionCache {
	return &filesSessionCache{src: src, cache: tls.NewLRUClientSessionCache(clientSessions)}
}

func (c *filesSessionCache) key(server string) string {
	sum := c.src.state().sum
	return fmt.Sprintf("%x|%s", sum, server)
}

func (c *filesSessionCache) Get(server string) (*tls.ClientSessionState, bool) {
	return c.cache.Get(c.key(server))
}

func (c *filesSessionCache) Put(server string, cs *tls.ClientSessionState) {
	c.cache.Put(c.key(server), cs)
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
