package hypershiftsim

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// egressHelperEnv makes the test binary a second client of the proxy (another process, as
// another cluster's kube-apiserver is): "<socket> <target>".
const egressHelperEnv = "HYPERSHIFT_SIM_EGRESS_HELPER"

// TestEgressProxyHelperProcess is the other client of TestOneClusterCannotTakeAnotherClustersEgress:
// it CONNECTs once and prints the answer's status.
func TestEgressProxyHelperProcess(t *testing.T) {
	args := strings.Fields(os.Getenv(egressHelperEnv))
	if len(args) != 2 {
		t.Skip("helper process of TestOneClusterCannotTakeAnotherClustersEgress")
	}
	c, err := net.DialTimeout("unix", args[0], 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", args[1], args[1])
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("EGRESS_STATUS %d\n", res.StatusCode)
}

// TestOneClusterCannotTakeAnotherClustersEgress: the proxy is shared by every hosted
// kube-apiserver of the sim, and a customer decides how many tunnels theirs holds (a webhook
// whose target accepts and never answers holds one for its timeout and the drain after it; an
// APIService holds one while it is used). One apiserver holding as many tunnels as it can must
// leave another (another process) its CONNECTs. It did not: the first took all 512 slots and
// every other cluster's webhooks and APIServices got 503.
func TestOneClusterCannotTakeAnotherClustersEgress(t *testing.T) {
	if os.Getenv(egressHelperEnv) != "" {
		t.Skip("in the helper process")
	}
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	held := make(chan net.Conn, 4*egressMaxTunnels)
	go func() { // accepts and never answers
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	defer func() {
		for {
			select {
			case c := <-held:
				c.Close()
			default:
				return
			}
		}
	}()
	p, err := startEgressProxy(logr.Discard(), t.TempDir(), []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	// This process takes every tunnel it is given.
	opened := 0
	for range egressMaxTunnels + 1 {
		code, _ := connectVia(t, p.Socket, target.Addr().String())
		if code != http.StatusOK {
			break
		}
		opened++
	}
	if opened != egressMaxTunnels {
		t.Errorf("one client holds %d tunnels, want the bound, %d, and a 503 past it", opened, egressMaxTunnels)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestEgressProxyHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), egressHelperEnv+"="+p.Socket+" "+target.Addr().String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "EGRESS_STATUS 200") {
		t.Fatalf("another client's CONNECT while one holds %d tunnels: %s, want 200", opened, out)
	}
}
