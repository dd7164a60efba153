package mgmtcluster

import (
	"bufio"
	"bytes"
	"testing"
)

// FuzzReadCONNACK feeds arbitrary broker answers to the kick's CONNACK reader. The promises: no
// panic; success only for a packet that is a CONNACK with reason code 0 (first byte 0x20, a
// well-formed remaining length, at least two bytes of body, the second 0); and it never reads
// past the packet's own length, so a broker's next packet is left unread.
func FuzzReadCONNACK(f *testing.F) {
	f.Add([]byte{0x20, 0x03, 0x00, 0x00, 0x00})       // MQTT 5 CONNACK, success, no properties
	f.Add([]byte{0x20, 0x03, 0x00, 0x87, 0x00})       // not authorized
	f.Add([]byte{0x20, 0xff, 0xff, 0xff, 0x7f})       // 256 MiB claimed
	f.Add([]byte{0x20, 0xff, 0xff, 0xff, 0xff, 0x01}) // length of five bytes
	f.Add([]byte{0x30, 0x02, 0x00, 0x00})             // PUBLISH
	f.Add([]byte{0x20, 0x01, 0x00})                   // too short
	f.Add([]byte{0x20, 0x80, 0x01, 0x00, 0x00})       // length 128 in two bytes, short body
	f.Fuzz(func(t *testing.T, in []byte) {
		const trailer = "\xe0\x00next"
		r := bufio.NewReader(bytes.NewReader(append(append([]byte(nil), in...), trailer...)))
		err := readCONNACK(r)
		rest, _ := r.Peek(r.Buffered())
		consumed := len(in) + len(trailer) - len(rest)
		if err != nil {
			return
		}
		// Accepted: the stream starts with a whole CONNACK of reason 0 (its body may run into the
		// trailer when in is only a prefix of it), and nothing after that packet was read.
		stream := append(append([]byte(nil), in...), trailer...)
		if stream[0] != 0x20 {
			t.Fatalf("accepted %x, which is not a CONNACK", in)
		}
		n, size, ok := decodeLength(stream[1:])
		if !ok || n < 2 || consumed != 1+size+n || stream[1+size+1] != 0 {
			t.Fatalf("accepted %x: length %d in %d bytes (well-formed: %v), consumed %d bytes", in, n, size, ok, consumed)
		}
	})
}

// decodeLength is MQTT's variable byte integer, written out again from the specification to
// check readVarint against: 1-4 bytes, 7 bits each, least significant first, in the fewest bytes
// that hold the value ([MQTT-1.5.5-1]: a longer encoding is malformed).
func decodeLength(b []byte) (n, size int, ok bool) {
	for i := 0; i < 4 && i < len(b); i++ {
		n |= int(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if i > 0 && b[i] == 0 {
				return 0, 0, false // a last byte of 0 adds nothing: not the fewest bytes
			}
			return n, i + 1, true
		}
	}
	return 0, 0, false
}

// FuzzVarintRoundTrip checks the kick's encoding of MQTT lengths against its decoding: every
// length MQTT allows (0 to 268,435,455) reads back as written, in the fewest bytes.
func FuzzVarintRoundTrip(f *testing.F) {
	for _, n := range []uint32{0, 127, 128, 16383, 16384, 2097151, 2097152, 268435455} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, u uint32) {
		n := int(u % 268435456)
		enc := varint(n)
		got, err := readVarint(bufio.NewReader(bytes.NewReader(enc)))
		if err != nil || got != n {
			t.Fatalf("varint(%d) = %x reads back as %d (%v)", n, enc, got, err)
		}
		want := 1
		for m := n; m > 127; m >>= 7 {
			want++
		}
		if len(enc) != want {
			t.Fatalf("varint(%d) is %d bytes, want %d", n, len(enc), want)
		}
	})
}

// FuzzConnectPacket checks the CONNECT the kick sends for any client ID it accepts: its
// remaining length is the rest of the packet, and the client ID is at its end, length-prefixed.
func FuzzConnectPacket(f *testing.F) {
	f.Add("mgmt-1")
	f.Add("")
	f.Add(string(bytes.Repeat([]byte{'x'}, 300)))
	f.Fuzz(func(t *testing.T, id string) {
		if len(id) > 65535 {
			return
		}
		p := mqttConnectPacket(id)
		n, size, ok := decodeLength(p[1:])
		if p[0] != 0x10 || !ok || 1+size+n != len(p) {
			t.Fatalf("CONNECT for %q: header %x, length %d in %d bytes, packet %d bytes", id, p[0], n, size, len(p))
		}
		tail := p[len(p)-len(id)-2:]
		if int(tail[0])<<8|int(tail[1]) != len(id) || string(tail[2:]) != id {
			t.Fatalf("CONNECT for %q ends in %x", id, tail)
		}
	})
}
