package mgmtcluster

import (
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestKickRefusesABrokerThatDoesNotAnswerWithACONNACK: the kick reads the broker's answer from the
// network; a packet that claims the largest MQTT length (256 MiB) is refused by its length,
// without allocating it, whatever its type, and a small packet that is not a CONNACK is refused
// too.
func TestKickRefusesABrokerThatDoesNotAnswerWithACONNACK(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer []byte
		says   string
	}{
		{"connack_of_256_MiB", []byte{0x20, 0xff, 0xff, 0xff, 0x7f}, "too large"},
		{"publish_of_256_MiB", []byte{0x30, 0xff, 0xff, 0xff, 0x7f}, "too large"},
		{"connack_of_128_KiB", []byte{0x20, 0x80, 0x80, 0x08}, "too large"},
		{"suback_instead_of_connack", []byte{0x90, 0x04, 0x00, 0x01, 0x00, 0x00}, "unexpected packet"},
		{"connack_refusing_the_client", []byte{0x20, 0x03, 0x00, 0x87, 0x00}, "reason code 0x87"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() { // a broker that answers any CONNECT with tc.answer and nothing more
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, 512)
				_, _ = c.Read(buf)
				_, _ = c.Write(tc.answer)
				_, _ = io.Copy(io.Discard, c)
			}()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err = KickMQTTClient(ctx, l.Addr().String(), "mgmt-1", nil)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want an error saying %q", err, tc.says)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Fatalf("refusing it allocated %d bytes", alloc)
			}
		})
	}
}
