package mgmtcluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
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
// of the certificate's CN. The kick only connects and disconnects: it subscribes to nothing and
// publishes nothing.
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
	if tlsConf != nil {
		tc := tls.Client(conn, tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("mqtt kick %s: TLS handshake: %w", clientID, err)
		}
		conn = tc
	}
	deadline := time.Now().Add(10 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)

	if _, err := conn.Write(mqttConnectPacket(clientID)); err != nil {
		return fmt.Errorf("mqtt kick %s: send CONNECT: %w", clientID, err)
	}
	if err := readCONNACK(bufio.NewReader(conn)); err != nil {
		return fmt.Errorf("mqtt kick %s: %w", clientID, err)
	}
	// DISCONNECT, reason 0 (normal): the broker discards this new, clean session.
	if _, err := conn.Write([]byte{0xE0, 0x00}); err != nil {
		return fmt.Errorf("mqtt kick %s: send DISCONNECT: %w", clientID, err)
	}
	return nil
}

// readCONNACK reads the broker's answer to CONNECT and returns nil only for a CONNACK that
// accepts the connection. What it reads comes from the network: the length is checked against
// maxCONNACK before anything is allocated for it.
func readCONNACK(r *bufio.Reader) error {
	// CONNACK: fixed header 0x20, remaining length, then flags, reason code, properties.
	typ, err := r.ReadByte()
	if err != nil {
		return fmt.Errorf("read CONNACK: %w", err)
	}
	if typ != 0x20 {
		return fmt.Errorf("expected CONNACK, got packet type %#x", typ)
	}
	n, err := readVarint(r)
	if err != nil {
		return fmt.Errorf("read CONNACK length: %w", err)
	}
	if n > maxCONNACK {
		return fmt.Errorf("CONNACK length %d is over %d bytes", n, maxCONNACK)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("read CONNACK: %w", err)
	}
	if len(body) < 2 {
		return fmt.Errorf("CONNACK of %d bytes is too short", len(body))
	}
	if rc := body[1]; rc != 0 {
		return fmt.Errorf("broker refused the connection, reason code %#x", rc)
	}
	return nil
}

// maxCONNACK bounds the CONNACK the kick reads: its flags, reason code and properties (a reason
// string, user properties) fit many times over.
const maxCONNACK = 64 << 10

// mqttConnectPacket is an MQTT 5 CONNECT with clean start, no credentials and no properties.
func mqttConnectPacket(clientID string) []byte {
	var vh []byte
	vh = append(vh, 0x00, 0x04, 'M', 'Q', 'T', 'T') // protocol name
	vh = append(vh, 0x05)                           // protocol level: MQTT 5
	vh = append(vh, 0x02)                           // connect flags: clean start
	vh = append(vh, 0x00, 0x0a)                     // keep alive: 10 s
	vh = append(vh, 0x00)                           // properties: none
	payload := append([]byte{byte(len(clientID) >> 8), byte(len(clientID))}, clientID...)
	rest := append(vh, payload...)
	return append(append([]byte{0x10}, varint(len(rest))...), rest...)
}

func varint(n int) []byte {
	var out []byte
	for {
		b := byte(n % 128)
		n /= 128
		if n > 0 {
			b |= 0x80
		}
		out = append(out, b)
		if n == 0 {
			return out
		}
	}
}

// readVarint reads an MQTT variable byte integer: 1-4 bytes, 7 bits each, least significant
// first, in the fewest bytes that hold the value.
func readVarint(r io.ByteReader) (int, error) {
	n, mult := 0, 1
	for i := 0; i < 4; i++ {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		n += int(b&0x7f) * mult
		if b&0x80 == 0 {
			if i > 0 && b == 0 {
				// MQTT requires the fewest bytes [MQTT-1.5.5-1]; a last byte of 0 adds nothing.
				return 0, errors.New("malformed remaining length: not in the fewest bytes")
			}
			return n, nil
		}
		mult *= 128
	}
	return 0, errors.New("malformed remaining length")
}
