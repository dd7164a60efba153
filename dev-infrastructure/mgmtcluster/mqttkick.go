package mgmtcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
)

// KickMQTTClient makes the broker drop the connection of the client with this ID, by connecting
// with the same ID: MQTT (v5 §3.1.4) requires the server to close an existing connection of a
// client ID that connects again ("session takeover"). It then disconnects at once, so the kicked
// client's own reconnect takes the ID back. A Maestro agent resubscribes after a reconnect and
// sends a spec resync request, which is what StuckDeleteWatchdog relies on.
//
// tlsConf is nil for a plaintext listener. A broker that binds client IDs to identities (ours
// with client certificates, use_username_as_clientid; Event Grid namespaces refuse a takeover of
// another client's session) lets only the same identity take a session over, so tlsConf must
// then carry the kicked client's own certificate; the client ID sent is then ignored in favour
// of the certificate's CN. The kick only connects (MQTT 5, clean start, no credentials) and
// disconnects with reason 0: it subscribes to nothing and publishes nothing. The MQTT packets
// are paho's (github.com/eclipse/paho.golang).
func KickMQTTClient(ctx context.Context, brokerAddr, clientID string, tlsConf *tls.Config) error {
	if clientID == "" || len(clientID) > 65535 {
		return errors.New("mqtt kick: client ID must be 1-65535 bytes")
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", brokerAddr)
	if err != nil {
		return fmt.Errorf("mqtt kick %s: dial %s: %w", clientID, brokerAddr, err)
	}
	defer conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	if tlsConf != nil {
		tc := tls.Client(conn, tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("mqtt kick %s: TLS handshake: %w", clientID, err)
		}
		conn = tc
	}
	guarded := &packetSizeGuard{Conn: conn, max: maxBrokerPacket}
	c := paho.NewClient(paho.ClientConfig{
		// A tls.Conn is not safe for concurrent writes; paho's pinger and the kick both write.
		Conn:          packets.NewThreadSafeConn(guarded),
		PacketTimeout: time.Until(deadline),
	})
	connCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ca, err := c.Connect(connCtx, &paho.Connect{ClientID: clientID, CleanStart: true, KeepAlive: 10})
	if err != nil {
		if ca != nil {
			return fmt.Errorf("mqtt kick %s: broker refused the connection, reason code %#x: %w", clientID, ca.ReasonCode, err)
		}
		return fmt.Errorf("mqtt kick %s: connect: %w", clientID, err)
	}
	// DISCONNECT, reason 0 (normal): the broker discards this new, clean session.
	if err := c.Disconnect(&paho.Disconnect{ReasonCode: 0}); err != nil {
		return fmt.Errorf("mqtt kick %s: send DISCONNECT: %w", clientID, err)
	}
	return nil
}

// maxBrokerPacket bounds every packet the kick reads from the broker: its CONNACK (flags, reason
// code and properties such as a reason string or user properties) fits many times over. paho
// allocates a packet's whole remaining length before reading it, so the bound is applied to
// the packet's fixed header before paho sees it.
const maxBrokerPacket = 64 << 10

// errPacketTooLarge is what packetSizeGuard returns for a packet over its bound.
var errPacketTooLarge = errors.New("packet from the broker is too large")

// packetSizeGuard is a net.Conn that follows the MQTT packets read through it and refuses one
// whose remaining length (from its fixed header) is over max, before the reader gets the last
// byte of that length. It only reads the framing; paho decodes the packets.
type packetSizeGuard struct {
	net.Conn
	max int

	mu        sync.Mutex
	err       error
	inHeader  bool // reading a fixed header: its type byte is read, the length is not complete
	length    int  // remaining length decoded so far
	mult      int  // weight of the next length byte
	remaining int  // payload bytes of the current packet still to pass
}

func (g *packetSizeGuard) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.Conn.Read(p)
	for i := 0; i < n; {
		switch {
		case g.remaining > 0:
			step := min(g.remaining, n-i)
			g.remaining -= step
			i += step
		case !g.inHeader: // the type byte of the next packet
			g.inHeader, g.length, g.mult = true, 0, 1
			i++
		default: // one byte of the remaining length
			b := p[i]
			g.length += int(b&0x7f) * g.mult
			g.mult *= 128
			if g.length > g.max || (b&0x80 != 0 && g.mult > 128*128*128) {
				g.err = fmt.Errorf("%w: remaining length over %d bytes", errPacketTooLarge, g.max)
				if i == 0 {
					return 0, g.err
				}
				return i, nil // the next Read returns g.err
			}
			i++
			if b&0x80 == 0 {
				g.inHeader, g.remaining = false, g.length
			}
		}
	}
	return n, err
}
