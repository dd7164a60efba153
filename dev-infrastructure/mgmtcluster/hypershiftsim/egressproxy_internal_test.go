package hypershiftsim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openhcp/openhcp/internal/sockdir"
)

func TestEgressProxyAdmitsOnlyPublicAddressesNotTheMachinesOwn(t *testing.T) {
	p := &egressProxy{
		allowed:  []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		ownAddrs: func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("8.8.4.4")}, nil },
	}
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"10.0.0.1", false},            // the hosted cluster's service range, a pod network
		{"192.168.1.1", false},         // private
		{"169.254.169.254", false},     // instance metadata
		{"fe80::1", false},             // link-local
		{"100.64.0.1", false},          // CGNAT
		{"0.0.0.0", false},             // unspecified: the host
		{"8.8.4.4", false},             // public, but the machine's own
		{"::ffff:8.8.4.4", false},      // the same, mapped
		{"127.0.0.2", true},            // the allow-list
		{"1.1.1.1", true},              // public
		{"2606:4700:4700::1111", true}, // public IPv6
	} {
		t.Run(tc.addr, func(t *testing.T) {
			err := p.check(netip.MustParseAddr(tc.addr))
			if tc.ok != (err == nil) {
				t.Fatalf("check(%s) = %v, want admitted %v", tc.addr, err, tc.ok)
			}
			if err != nil && !errors.Is(err, errEgressRefused) {
				t.Fatalf("check(%s) = %v, not a refusal", tc.addr, err)
			}
		})
	}
}

// connectVia sends a CONNECT for target to the proxy's socket and returns the answer's status
// and the connection (a tunnel when 200).
func connectVia(t *testing.T, socket, target string) (int, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", target)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return res.StatusCode, c
}

func TestEgressProxyTunnelsAdmittedTargetsAndRefusesTheRestWithoutAConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }() // echo
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)

	// A state directory too long for a socket path gets a short directory of its own.
	deep := t.TempDir() + "/" + strings.Repeat("d", 90)
	for _, dir := range []string{t.TempDir(), deep} {
		t.Run(fmt.Sprintf("state_dir_of_%d_bytes", len(dir)), func(t *testing.T) {
			before := accepted.Load()
			refusedBefore := testutil.ToFloat64(hostedEgressConnects.WithLabelValues("refused"))
			tunnelledBefore := testutil.ToFloat64(hostedEgressConnects.WithLabelValues("tunnelled"))
			p, err := startEgressProxy(logr.Discard(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Socket) > sockdir.MaxPath {
				t.Fatalf("socket path %q is %d bytes", p.Socket, len(p.Socket))
			}
			fi, err := os.Stat(p.dir)
			if err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("socket directory %s: %v %v, want mode 0700", p.dir, fi.Mode(), err)
			}
			for _, target := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::ffff:127.0.0.1]:" + port, "no-port"} {
				if code, _ := connectVia(t, p.Socket, target); code != http.StatusForbidden {
					t.Errorf("CONNECT %s: %d, want 403", target, code)
				}
			}
			if n := accepted.Load() - before; n != 0 {
				t.Errorf("refused CONNECTs reached the target %d times", n)
			}
			// The handler counts before it answers: no wait needed.
			if n := testutil.ToFloat64(hostedEgressConnects.WithLabelValues("refused")) - refusedBefore; n != 4 {
				t.Errorf("hypershift_sim_hosted_egress_connects_total{result=refused} grew by %v, want 4", n)
			}

			// The same target admitted by the allow-list is tunnelled both ways.
			p.Stop()
			p, err = startEgressProxy(logr.Discard(), dir, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			code, c := connectVia(t, p.Socket, "127.0.0.1:"+port)
			if code != http.StatusOK {
				t.Fatalf("admitted CONNECT: %d, want 200", code)
			}
			if _, err := io.WriteString(c, "ping"); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
				t.Fatalf("through the tunnel: %q, %v", buf, err)
			}
			if n := testutil.ToFloat64(hostedEgressConnects.WithLabelValues("tunnelled")) - tunnelledBefore; n != 1 {
				t.Errorf("hypershift_sim_hosted_egress_connects_total{result=tunnelled} grew by %v, want 1", n)
			}
		})
	}
}

// TestEgressProxyAnswersAnUnresolvableNameAsARefusal: the proxy resolves with the sim's
// resolver (under make deploy the cluster's DNS and its search path), and the customer reads
// the answer's code in their APIService's status or their webhook's error. A name that does not
// resolve must look like one that resolves to a refused address, or the customer learns which
// names exist in the management side's DNS (a Service "maestro" of the sim's search path: 403;
// a name that is not there: 502).
func TestEgressProxyAnswersAnUnresolvableNameAsARefusal(t *testing.T) {
	p, err := startEgressProxy(logr.Discard(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	refused, _ := connectVia(t, p.Socket, "localhost:443")
	unresolved, _ := connectVia(t, p.Socket, "no-such-name.invalid:443")
	if refused != http.StatusForbidden || unresolved != refused {
		t.Fatalf("CONNECT to a refused name: %d, to a name that does not resolve: %d; want both 403", refused, unresolved)
	}
}
