package localregion

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/serverlimits/floodtest"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestRegionBrokerOutlastsAFlood runs the region's broker as Up does (the real mosquitto, behind
// its capped forward, the cap lowered) and floods it up to its cap with connections from a
// process holding no certificate of the region CA: silent sockets, sockets that sent one byte,
// sockets that sent a ClientHello and nothing more, whole handshakes without a certificate and
// with one from another CA. A client with its certificate still connects within a bounded
// time, and a client connected before (proven) is never closed for room, even with the cap full
// of proven ones and a caller waiting. mosquitto itself has no TCP listener.
func TestRegionBrokerOutlastsAFlood(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// One identity a client: the broker takes a client's ID from its certificate, and a second
	// connection of one identity takes the first one's session over (closes it).
	var agents []string
	for i := range 8 {
		agents = append(agents, fmt.Sprintf("mgmt-%d", i+1))
	}
	p, err := pki.Create(filepath.Join(dir, "pki"), pki.Options{MaestroConsumers: agents})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := pki.Create(filepath.Join(dir, "stranger-pki"), pki.Options{MaestroConsumers: []string{"mgmt-1"}})
	if err != nil {
		t.Fatal(err)
	}
	plugin, err := mgmtcluster.MosquittoShareGuardPlugin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := mgmtcluster.SecureBrokerOptions(p, filepath.Join(dir, "mosquitto"), filepath.Join(dir, "logs"), plugin)
	if err != nil {
		t.Fatal(err)
	}
	const maxConns = 200
	opts.MaxConns = maxConns
	mq, err := mgmtcluster.StartMosquitto(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mq.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mosquitto.log:\n%s", mq.Proc.LogTail(4000))
		}
	})
	// agent is the TLS config of the ith agent, mgmt-<i+1>.
	agent := func(i int) *tls.Config {
		t.Helper()
		f := p.MustFiles(pki.MaestroAgent(agents[i]))
		cfg, err := tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}.Client(mq.Addr)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	// alive: a QoS 1 PUBLISH of the ith agent is answered (PUBACK) on c.
	alive := func(c *mqttTestClient, i int) error {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := c.c.Publish(pctx, statusEvent("sources/maestro/consumers/"+agents[i]+"/agentevents", agents[i], "ping"))
		return err
	}

	t.Run("mosquitto_has_no_tcp_listener", func(t *testing.T) {
		if l := tcpListeners(t, mq.Proc.PID()); len(l) > 0 {
			t.Fatalf("mosquitto listens on TCP: %v", l)
		}
		if _, err := os.Stat(mq.Socket); err != nil {
			t.Fatalf("mosquitto's unix socket: %v", err)
		}
	})

	t.Run("a_client_connects_through_a_flood", func(t *testing.T) {
		var early []*mqttTestClient
		for i := range 3 {
			c, err := dialMQTT(ctx, mq.Addr, agent(i), "early")
			if err != nil {
				t.Fatalf("a client before the flood: %v", err)
			}
			defer c.Close()
			// Answered twice with application data (CONNACK, PUBACK): proven, as every
			// Maestro client is once it has subscribed.
			if err := alive(c, i); err != nil {
				t.Fatal(err)
			}
			early = append(early, c)
		}
		hello := floodtest.CaptureClientHello(t, &tls.Config{ServerName: "broker", MinVersion: tls.VersionTLS12})
		serverOnly, err := tlsconfig.Files{CA: p.CAFile}.Client(mq.Addr)
		if err != nil {
			t.Fatal(err)
		}
		f := stranger.MustFiles(pki.MaestroAgent("mgmt-1"))
		strangerCert, err := tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}.Client(mq.Addr)
		if err != nil {
			t.Fatal(err)
		}
		// The flood: more than the cap, one kind after another, each held open.
		// Those that send a byte fill the cap by themselves: a byte sent proved nothing.
		flood := floodtest.Start(ctx, t, mq.Addr, maxConns+40, hello, func(i int) floodtest.Conn {
			switch {
			case i < 20:
				return floodtest.Conn{Kind: floodtest.Silent}
			case i < 40 && i%2 == 0:
				return floodtest.Conn{Kind: floodtest.Handshake, TLS: serverOnly}
			case i < 40:
				return floodtest.Conn{Kind: floodtest.Handshake, TLS: strangerCert}
			case i%2 == 0:
				return floodtest.Conn{Kind: floodtest.OneByte}
			default:
				return floodtest.Conn{Kind: floodtest.ClientHello}
			}
		})
		// Wait for the forward to be at its cap with the flood.
		deadline := time.Now().Add(60 * time.Second)
		for mq.Forward.Active() < maxConns-len(early) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("forwarded connections after the flood: %d (cap %d)", mq.Forward.Active(), maxConns)
		start := time.Now()
		c, err := dialMQTT(ctx, mq.Addr, agent(len(early)), "late")
		if err != nil {
			t.Fatalf("a client with its certificate, through the flood: %v", err)
		}
		defer c.Close()
		if took := time.Since(start); took > 15*time.Second {
			t.Fatalf("a client with its certificate took %v to connect through the flood", took)
		} else {
			t.Logf("a client with its certificate connected through the flood in %v", took)
		}
		flood.Wait()
		for i, e := range append(early, c) {
			if err := alive(e, i); err != nil {
				t.Errorf("client %d, proven, was closed: %v", i, err)
			}
		}
	})

	t.Run("proven_connections_are_never_closed_for_room", func(t *testing.T) {
		mq2opts := opts
		mq2opts.Dir, mq2opts.Port, mq2opts.MaxConns = filepath.Join(dir, "mosquitto-2"), 0, 4
		mq2, err := mgmtcluster.StartMosquitto(ctx, mq2opts)
		if err != nil {
			t.Fatal(err)
		}
		defer mq2.Stop()
		var proven []*mqttTestClient
		for i := range 4 {
			c, err := dialMQTT(ctx, mq2.Addr, agent(i), "proven")
			if err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
			defer c.Close()
			if err := alive(c, i); err != nil {
				t.Fatal(err)
			}
			proven = append(proven, c)
		}
		// A caller at a cap full of proven connections waits; none of them is closed for it.
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second) // three times UnfinishedGrace
		defer cancel()
		if c, err := dialMQTT(wctx, mq2.Addr, agent(4), "waiting"); err == nil {
			c.Close()
			t.Fatal("a caller was served at a cap full of proven connections")
		}
		for i, c := range proven {
			if err := alive(c, i); err != nil {
				t.Errorf("proven client %d was closed for room: %v", i, err)
			}
		}
	})
}

// tcpListeners are the TCP sockets process pid listens on ("local address" of /proc/net/tcp*).
func tcpListeners(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) > 9 && fields[3] == "0A" && inodes[fields[9]] { // 0A: LISTEN
				out = append(out, table+" "+fields[1])
			}
		}
		f.Close()
	}
	return out
}
