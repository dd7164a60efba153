package serverlimits

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestProvenRoomKeepsOnlyProvenConnections: at the cap of a ProvenRoomListener, a connection that
// sent bytes but was not proven is closed for a waiting caller, once UnfinishedGrace old; a
// proven one is not, and the caller waits.
func TestProvenRoomKeepsOnlyProvenConnections(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prove  bool
		served bool
	}{
		{"sent_bytes_unproven_makes_room", false, true},
		{"proven_stays", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l := ProvenRoomListener(inner, 1)
			t.Cleanup(func() { _ = l.Close() })
			accepted := make(chan net.Conn, 2)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					accepted <- c
				}
			}()
			first, err := net.Dial("tcp", inner.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			if _, err := first.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			var held net.Conn
			select {
			case held = <-accepted:
			case <-time.After(30 * time.Second):
				t.Fatal("the first caller was not accepted")
			}
			defer held.Close()
			if _, err := io.ReadFull(held, make([]byte, 5)); err != nil {
				t.Fatal(err)
			}
			if tc.prove {
				held.(Prover).Prove()
			}
			// The server reads on, and closes the connection when its read fails (closed for
			// room under it), which frees the slot.
			readEnded := make(chan struct{})
			go func() {
				defer close(readEnded)
				_, _ = io.Copy(io.Discard, held)
				_ = held.Close()
			}()
			second, err := net.Dial("tcp", inner.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer second.Close()
			wait := 30 * time.Second
			if !tc.served {
				wait = 3 * UnfinishedGrace
			}
			select {
			case c := <-accepted:
				defer c.Close()
				if !tc.served {
					t.Fatal("a proven connection was closed for room")
				}
				<-readEnded
			case <-time.After(wait):
				if tc.served {
					t.Fatal("a caller waited at a cap held by an unproven connection")
				}
			}
		})
	}
}
