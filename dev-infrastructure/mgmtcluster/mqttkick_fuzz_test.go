package mgmtcluster

import (
	"errors"
	"io"
	"net"
	"testing"
)

// chunkConn is a net.Conn whose Reads return data in the chunk sizes the fuzzer chose, as a
// network does.
type chunkConn struct {
	net.Conn
	data   []byte
	chunks []byte
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.chunks) > 0 {
		n = int(c.chunks[0])%len(c.data) + 1
		c.chunks = c.chunks[1:]
	}
	n = copy(p, c.data[:min(n, len(c.data))])
	c.data = c.data[n:]
	return n, nil
}

// FuzzPacketSizeGuard feeds arbitrary broker bytes, in arbitrary chunks, through the kick's
// packet-size guard (paho allocates a packet's whole announced length, so the guard is what
// bounds memory). The promises: no panic; every byte it passes lies within packets whose
// remaining length, decoded from the MQTT specification (decodeLength), is at most its bound;
// and it refuses exactly when the stream announces a longer packet (or a length over 4 bytes),
// passing nothing of that packet's last length byte.
func FuzzPacketSizeGuard(f *testing.F) {
	f.Add([]byte{0x20, 0x03, 0x00, 0x00, 0x00}, []byte{})                   // a CONNACK
	f.Add([]byte{0x20, 0xff, 0xff, 0xff, 0x7f}, []byte{1, 1, 1})            // 256 MiB announced
	f.Add([]byte{0x20, 0x80, 0x80, 0x04, 0x00}, []byte{0})                  // 64 KiB: 65536 is over
	f.Add([]byte{0x20, 0xff, 0xff, 0x03, 0x00}, []byte{2})                  // 65535: within
	f.Add([]byte{0x20, 0x02, 0x00, 0x00, 0xd0, 0x00, 0x30, 0x81}, []byte{}) // three packets
	f.Add([]byte{0x20, 0xff, 0xff, 0xff, 0xff, 0x01}, []byte{3})            // a five-byte length
	const max = 64 << 10
	f.Fuzz(func(t *testing.T, data, chunks []byte) {
		g := &packetSizeGuard{Conn: &chunkConn{data: append([]byte(nil), data...), chunks: chunks}, max: max}
		var passed []byte
		buf := make([]byte, 7)
		var err error
		for {
			var n int
			n, err = g.Read(buf)
			passed = append(passed, buf[:n]...)
			if err != nil {
				break
			}
		}
		if len(passed) > len(data) || string(passed) != string(data[:len(passed)]) {
			t.Fatalf("the guard passed %x, not a prefix of %x", passed, data)
		}
		// Walk the packets the guard passed, as the specification frames them.
		for i := 0; i < len(passed); {
			n, size, ok := decodeLength(passed[i+1:])
			if !ok {
				break // the stream ends within a header (or a malformed length: paho's to refuse)
			}
			if n > max {
				t.Fatalf("the guard passed a packet of remaining length %d at %d (bound %d): %x", n, i, max, data)
			}
			i += 1 + size + n
		}
		if errors.Is(err, errPacketTooLarge) {
			// Refused: the next header in the data announces more than max, or more than 4 bytes.
			i := 0
			for {
				n, size, ok := decodeLength(data[i+1:])
				if !ok || n > max {
					if i+1 >= len(data) {
						t.Fatalf("refused %x with no header left to refuse", data)
					}
					return
				}
				i += 1 + size + n
				if i >= len(data) {
					t.Fatalf("refused %x although every packet is within %d", data, max)
				}
			}
		}
	})
}

// decodeLength is MQTT's variable byte integer, written out from the specification: 1-4
// bytes, 7 bits each, least significant first. ok is false for a longer or unfinished one.
func decodeLength(b []byte) (n, size int, ok bool) {
	for i := 0; i < 4 && i < len(b); i++ {
		n |= int(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return n, i + 1, true
		}
	}
	return 0, 0, false
}
