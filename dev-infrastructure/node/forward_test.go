package node

import (
	"context"
	"io"
	"net"
	"net/netip"
	"testing"
)

func TestForwardReachesAListenerOnlyInsideTheNamespace(t *testing.T) {
	requireNetns(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns, err := CreateNetns(ctx, "openhcp-test-", netip.MustParseAddr("10.250.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Delete(context.Background()) })
	var l net.Listener
	if err := ns.inNetns(func() (err error) { l, err = net.Listen("tcp", "10.250.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, _ = c.Write([]byte("inside"))
			c.Close()
		}
	}()
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Fatalf("%s answered from the host's namespace", l.Addr())
	}
	hostAddr, err := ns.Forward(ctx, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", hostAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "inside" {
		t.Fatalf("read %q (%v) through %s, want %q", got, err, hostAddr, "inside")
	}
}
