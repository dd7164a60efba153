package mgmtcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// connectMQTT connects a client with this ID to the broker and keeps the connection open.
func connectMQTT(t *testing.T, addr, clientID string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write(mqttConnectPacket(clientID)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	typ, err := r.ReadByte()
	if err != nil || typ != 0x20 {
		t.Fatalf("CONNACK: type %#x, err %v", typ, err)
	}
	n, _ := readVarint(r)
	io.ReadFull(r, make([]byte, n))
	return conn
}

// kickedWithin says whether the broker closes conn (or sends it DISCONNECT) within d.
func kickedWithin(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	b := make([]byte, 1)
	_, err := conn.Read(b)
	if err == nil {
		return b[0] == 0xE0 // DISCONNECT, "session taken over"
	}
	ne, ok := err.(net.Error)
	return !(ok && ne.Timeout())
}

func startTestBroker(t *testing.T) *Mosquitto {
	t.Helper()
	dir := t.TempDir()
	mq, err := StartMosquitto(context.Background(), MosquittoOptions{Dir: filepath.Join(dir, "mosquitto"), LogDir: filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	t.Cleanup(mq.Stop)
	return mq
}

func TestKickMQTTClientTakesTheSessionOver(t *testing.T) {
	mq := startTestBroker(t)
	victim := connectMQTT(t, mq.Addr, "mgmt-1-work-agent")
	bystander := connectMQTT(t, mq.Addr, "mgmt-2-work-agent")
	if err := KickMQTTClient(context.Background(), mq.Addr, "mgmt-1-work-agent", nil); err != nil {
		t.Fatal(err)
	}
	if !kickedWithin(victim, 5*time.Second) {
		t.Fatal("the client with the kicked ID is still connected")
	}
	if kickedWithin(bystander, 500*time.Millisecond) {
		t.Fatal("another client was disconnected too")
	}
	if err := KickMQTTClient(context.Background(), "127.0.0.1:1", "x", nil); err == nil {
		t.Fatal("kick through a closed port succeeded")
	}
}

// fakeMaestroREST is a stand-in for Maestro's resource-bundle list only (the real server runs in
// the integration tests and in TestQuickDeleteStress); it pages like Maestro does.
type fakeMaestroREST struct {
	mu      sync.Mutex
	bundles []map[string]any
}

// ServeHTTP pages through the bundles as Maestro does, and applies the one search the watchdog
// sends (DeletingBundlesSearch: only bundles with deleted_at); any other search is refused, as
// a search the real server cannot parse would be (TestMaestroServer checks that it parses).
func (f *fakeMaestroREST) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var page, size int
	fmt.Sscan(r.URL.Query().Get("page"), &page)
	fmt.Sscan(r.URL.Query().Get("size"), &size)
	items := f.bundles
	switch search := r.URL.Query().Get("search"); search {
	case "":
	case DeletingBundlesSearch:
		items = nil
		for _, b := range f.bundles {
			if b["deleted_at"] != nil {
				items = append(items, b)
			}
		}
	default:
		http.Error(w, "unexpected search "+search, http.StatusBadRequest)
		return
	}
	from, to := min((page-1)*size, len(items)), min(page*size, len(items))
	json.NewEncoder(w).Encode(map[string]any{"items": items[from:to], "total": len(items)})
}

func TestStuckDeleteWatchdog(t *testing.T) {
	mq := startTestBroker(t)
	now := time.Now()
	rest := &fakeMaestroREST{}
	for i := range 250 { // more than one page of healthy bundles
		rest.bundles = append(rest.bundles, map[string]any{"id": fmt.Sprintf("ok-%d", i), "consumer_name": "mgmt-2"})
	}
	for i := range 210 { // and more than one page of deleting ones, none stuck within the steps below
		rest.bundles = append(rest.bundles, map[string]any{"id": fmt.Sprintf("deleting-%d", i), "consumer_name": "mgmt-2", "deleted_at": now.Add(time.Hour)})
	}
	rest.bundles = append(rest.bundles,
		map[string]any{"id": "fresh", "consumer_name": "mgmt-2", "deleted_at": now.Add(70 * time.Second)},
		map[string]any{"id": "stuck", "consumer_name": "mgmt-1", "deleted_at": now.Add(-time.Minute), "metadata": map[string]any{"name": "cluster-x"}},
	)
	hs := httptest.NewServer(rest)
	t.Cleanup(hs.Close)
	w := &StuckDeleteWatchdog{o: StuckDeleteWatchdogOptions{Maestro: MaestroREST{URL: hs.URL}, BrokerAddr: mq.Addr, StuckAfter: 45 * time.Second,
		AgentClientIDs: map[string]string{"mgmt-1": "mgmt-1-work-agent", "mgmt-2": "mgmt-2-work-agent"}},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), next: map[string]time.Time{}, pause: map[string]time.Duration{}}

	for _, step := range []struct {
		name       string
		at         time.Duration // after now
		wantKicked []string      // consumers whose agent is kicked by this scan
	}{
		{"stuck_bundle_kicks_its_consumer_only", 0, []string{"mgmt-1"}},
		{"no_second_kick_within_the_pause", 30 * time.Second, nil},
		{"kicked_again_after_the_pause", 46 * time.Second, []string{"mgmt-1"}},
		{"pause_doubles", 100 * time.Second, nil},
		{"a_later_delete_counts_once_it_is_stuck_too", 140 * time.Second, []string{"mgmt-1", "mgmt-2"}},
	} {
		t.Run(step.name, func(t *testing.T) {
			agents := map[string]net.Conn{
				"mgmt-1": connectMQTT(t, mq.Addr, "mgmt-1-work-agent"),
				"mgmt-2": connectMQTT(t, mq.Addr, "mgmt-2-work-agent"),
			}
			before := w.Kicks()
			if err := w.Scan(context.Background(), now.Add(step.at)); err != nil {
				t.Fatal(err)
			}
			if got := w.Kicks() - before; got != len(step.wantKicked) {
				t.Fatalf("%d kicks, want %d", got, len(step.wantKicked))
			}
			for consumer, conn := range agents {
				want := false
				for _, c := range step.wantKicked {
					want = want || c == consumer
				}
				wait := 200 * time.Millisecond
				if want {
					wait = 5 * time.Second
				}
				if got := kickedWithin(conn, wait); got != want {
					t.Errorf("agent of %s kicked: %v, want %v", consumer, got, want)
				}
			}
		})
	}

	// A bundle that is gone is forgotten.
	rest.mu.Lock()
	rest.bundles = rest.bundles[:460]
	rest.mu.Unlock()
	if err := w.Scan(context.Background(), now.Add(200*time.Second)); err != nil {
		t.Fatal(err)
	}
	if len(w.next) != 0 || len(w.pause) != 0 {
		t.Fatalf("state kept for bundles that are gone: %v %v", w.next, w.pause)
	}
}
