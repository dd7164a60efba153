package mgmtcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// mqttAgent is a real MQTT 5 client (paho) standing in for a Maestro agent: kicked is closed
// when the broker ends its connection (a DISCONNECT, "session taken over", or a closed socket).
type mqttAgent struct {
	kicked chan struct{}
}

// connectMQTT connects a client with this ID to the broker and keeps the connection open.
func connectMQTT(t *testing.T, addr, clientID string) *mqttAgent {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a := &mqttAgent{kicked: make(chan struct{})}
	var once sync.Once
	gone := func() { once.Do(func() { close(a.kicked) }) }
	c := paho.NewClient(paho.ClientConfig{
		Conn:               conn,
		OnServerDisconnect: func(*paho.Disconnect) { gone() },
		OnClientError:      func(error) { gone() },
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: clientID, CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatalf("connect %s: %v", clientID, err)
	}
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	return a
}

// kickedWithin says whether the broker ends a's connection within d.
func kickedWithin(a *mqttAgent, d time.Duration) bool {
	select {
	case <-a.kicked:
		return true
	case <-time.After(d):
		return false
	}
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
	// afterPage, when set, runs (under mu) after a page is served, as the agent's work goes on
	// between one page and the next; it is cleared once it has run.
	afterPage func(page int)
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
	if f.afterPage != nil {
		f.afterPage(page)
	}
}

// watchdogStep is one scan: when (after the test's now), what changes first, which agents it
// must kick.
type watchdogStep struct {
	name       string
	at         time.Duration
	before     func()
	wantKicked []string // consumers whose agent is kicked by this scan
}

// runWatchdogSteps runs each step's scan with both agents connected, and checks exactly the
// wanted agents were kicked (their broker connection closed by the session takeover).
func runWatchdogSteps(t *testing.T, w *StuckDeleteWatchdog, brokerAddr string, now time.Time, steps []watchdogStep) {
	t.Helper()
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.before != nil {
				step.before()
			}
			agents := map[string]*mqttAgent{
				"mgmt-1": connectMQTT(t, brokerAddr, "mgmt-1-work-agent"),
				"mgmt-2": connectMQTT(t, brokerAddr, "mgmt-2-work-agent"),
			}
			before := w.Kicks()
			if err := w.Scan(context.Background(), now.Add(step.at)); err != nil {
				t.Fatal(err)
			}
			if got := w.Kicks() - before; got != len(step.wantKicked) {
				t.Fatalf("%d kicks, want %d", got, len(step.wantKicked))
			}
			for consumer, conn := range agents {
				want := slices.Contains(step.wantKicked, consumer)
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
}

// testWatchdog watches the bundles rest serves, for agents mgmt-1 and mgmt-2 on the broker.
func testWatchdog(t *testing.T, rest *fakeMaestroREST, brokerAddr string) *StuckDeleteWatchdog {
	hs := httptest.NewServer(rest)
	t.Cleanup(hs.Close)
	return newStuckDeleteWatchdog(StuckDeleteWatchdogOptions{Maestro: MaestroREST{URL: hs.URL}, BrokerAddr: brokerAddr,
		StuckAfter: 45 * time.Second, ReconnectWait: 30 * time.Second,
		AgentClientIDs: map[string]string{"mgmt-1": "mgmt-1-work-agent", "mgmt-2": "mgmt-2-work-agent"},
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// TestStuckDeleteWatchdogSparesAnAgentThatIsDeleting: while a consumer's deletes keep finishing
// its agent is not kicked however long the others take (a mass delete on a loaded machine); once
// it has been quiet for StuckAfter, the bundle still deleting (a lost delete) gets its kick, and
// the consumer is not kicked again within ReconnectWait + StuckAfter of that.
func TestStuckDeleteWatchdogSparesAnAgentThatIsDeleting(t *testing.T) {
	mq := startTestBroker(t)
	now := time.Now()
	rest := &fakeMaestroREST{}
	deletingSince := func(id string, ago time.Duration) map[string]any {
		return map[string]any{"id": id, "consumer_name": "mgmt-1", "deleted_at": now.Add(-ago)}
	}
	remove := func(id string) func() {
		return func() {
			rest.mu.Lock()
			defer rest.mu.Unlock()
			rest.bundles = slices.DeleteFunc(rest.bundles, func(b map[string]any) bool { return b["id"] == id })
		}
	}
	rest.bundles = []map[string]any{deletingSince("a", 10*time.Second), deletingSince("b", 10*time.Second),
		deletingSince("c", 10*time.Second), deletingSince("lost", 10*time.Second)}
	w := testWatchdog(t, rest, mq.Addr)
	runWatchdogSteps(t, w, mq.Addr, now, []watchdogStep{
		{name: "none_stuck_yet", at: 0},
		// Every bundle has been deleting for 50 s, but one finished since the last scan.
		{name: "stuck_but_progressing", at: 40 * time.Second, before: remove("a")},
		{name: "still_progressing", at: 80 * time.Second, before: remove("b")},
		{name: "last_progress", at: 120 * time.Second, before: remove("c")},
		{name: "quiet_for_less_than_stuck_after", at: 150 * time.Second},
		{name: "quiet_for_stuck_after_kicks", at: 166 * time.Second, wantKicked: []string{"mgmt-1"}},
		// The bundle's own pause (45 s) is over at 211 s, but the agent may still be reconnecting:
		// no kick before 166 + 30 + 45 s.
		{name: "no_second_kick_while_the_agent_may_be_reconnecting", at: 212 * time.Second},
		{name: "no_second_kick_within_stuck_after_of_its_reconnect", at: 235 * time.Second},
		{name: "kicked_again_when_still_quiet", at: 242 * time.Second, wantKicked: []string{"mgmt-1"}},
	})
}

// TestStuckDeleteWatchdogKicksALostDeleteOvertakenByLaterOnes: under a steady stream of
// deletes (the chaos run's 16 units at a time) the consumer is never quiet for StuckAfter, yet a
// delete requested StuckAfter after the lost one has finished while the lost one has not: the
// agent is working and has lost that one, so it is kicked without waiting for a quiet consumer,
// but still no sooner than ReconnectWait + StuckAfter after the consumer's last kick.
func TestStuckDeleteWatchdogKicksALostDeleteOvertakenByLaterOnes(t *testing.T) {
	mq := startTestBroker(t)
	now := time.Now()
	rest := &fakeMaestroREST{}
	add := func(id string, deletedAt time.Duration) func() {
		return func() {
			rest.mu.Lock()
			defer rest.mu.Unlock()
			rest.bundles = append(rest.bundles, map[string]any{"id": id, "consumer_name": "mgmt-1", "deleted_at": now.Add(deletedAt)})
		}
	}
	remove := func(id string) {
		rest.mu.Lock()
		defer rest.mu.Unlock()
		rest.bundles = slices.DeleteFunc(rest.bundles, func(b map[string]any) bool { return b["id"] == id })
	}
	// Each step finishes the delete the step before it requested and requests the next one.
	finishAndAdd := func(done, id string, deletedAt time.Duration) func() {
		return func() { remove(done); add(id, deletedAt)() }
	}
	add("lost", -10*time.Second)()
	add("d0", -10*time.Second)()
	w := testWatchdog(t, rest, mq.Addr)
	runWatchdogSteps(t, w, mq.Addr, now, []watchdogStep{
		{name: "none_stuck_yet", at: 0},
		// d0 was requested with the lost one: its finishing says nothing about the lost one.
		{name: "a_delete_of_the_same_time_finishes", at: 40 * time.Second, before: finishAndAdd("d0", "d1", 38*time.Second)},
		// d1 was requested 48 s after the lost one and is done: the lost one is overtaken.
		{name: "a_later_delete_finishes_kicks", at: 80 * time.Second, before: finishAndAdd("d1", "d2", 78*time.Second), wantKicked: []string{"mgmt-1"}},
		{name: "no_second_kick_while_the_agent_may_be_reconnecting", at: 120 * time.Second, before: finishAndAdd("d2", "d3", 118*time.Second)},
		{name: "no_second_kick_within_stuck_after_of_its_reconnect", at: 150 * time.Second, before: finishAndAdd("d3", "d4", 148*time.Second)},
		{name: "kicked_again_when_still_overtaken", at: 160 * time.Second, before: finishAndAdd("d4", "d5", 158*time.Second), wantKicked: []string{"mgmt-1"}},
	})
}

// TestStuckDeleteWatchdogSparesAnAgentWhoseStatusArrives: a deleting bundle whose status changes
// between scans (the server is still handling its agent's status events, which under a mass
// delete reach it long after the agent sent them) spares its consumer, though nothing finishes;
// another consumer's stuck bundle is kicked meanwhile; once the status stops changing, the
// consumer is kicked after StuckAfter.
func TestStuckDeleteWatchdogSparesAnAgentWhoseStatusArrives(t *testing.T) {
	mq := startTestBroker(t)
	now := time.Now()
	rest := &fakeMaestroREST{}
	rest.bundles = []map[string]any{
		{"id": "slow", "consumer_name": "mgmt-1", "deleted_at": now.Add(-50 * time.Second), "status": map[string]any{"SequenceID": "1"}},
		{"id": "lost", "consumer_name": "mgmt-2", "deleted_at": now.Add(-50 * time.Second), "status": map[string]any{"SequenceID": "7"}},
	}
	sequenceOf := func(bundle int, id string) func() {
		return func() {
			rest.mu.Lock()
			defer rest.mu.Unlock()
			st := rest.bundles[bundle]["status"].(map[string]any)
			st["SequenceID"] = id
		}
	}
	sequence := func(id string) func() { return sequenceOf(0, id) }
	w := testWatchdog(t, rest, mq.Addr)
	runWatchdogSteps(t, w, mq.Addr, now, []watchdogStep{
		// The first scan has nothing to compare with: both are stuck and quiet as far as it knows.
		{name: "first_scan_kicks_both", at: 0, wantKicked: []string{"mgmt-1", "mgmt-2"}},
		// A status of mgmt-2's bundle still in the server's queue arrives while its agent may be
		// reconnecting: the wait still counts from the kick's ReconnectWait, not from this.
		{name: "late_status_of_the_other", at: 10 * time.Second, before: sequenceOf(1, "8")},
		{name: "status_arrives", at: 30 * time.Second, before: sequence("2")},
		// Both bundles' pauses (45 s) are over, but both agents may still be reconnecting (30 s)
		// and then resyncing (45 s).
		{name: "both_spared_after_their_kicks", at: 50 * time.Second, before: sequence("3")},
		{name: "a_status_during_the_reconnect_wait_does_not_shorten_it", at: 58 * time.Second},
		// mgmt-2's bundle is unchanged since its kick, 30 + 45 s ago; mgmt-1's status still arrives.
		{name: "spared_while_status_arrives_other_consumer_kicked", at: 80 * time.Second, before: sequence("4"),
			wantKicked: []string{"mgmt-2"}},
		{name: "quiet_for_less_than_stuck_after", at: 120 * time.Second},
		{name: "quiet_for_stuck_after_kicks", at: 126 * time.Second, wantKicked: []string{"mgmt-1"}},
	})
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
		map[string]any{"id": "fresh", "consumer_name": "mgmt-2", "deleted_at": now.Add(120 * time.Second)},
		map[string]any{"id": "stuck", "consumer_name": "mgmt-1", "deleted_at": now.Add(-time.Minute), "metadata": map[string]any{"name": "cluster-x"}},
	)
	w := testWatchdog(t, rest, mq.Addr)

	runWatchdogSteps(t, w, mq.Addr, now, []watchdogStep{
		{name: "stuck_bundle_kicks_its_consumer_only", at: 0, wantKicked: []string{"mgmt-1"}},
		{name: "no_second_kick_within_the_pause", at: 30 * time.Second},
		{name: "no_second_kick_before_reconnect_wait_and_stuck_after", at: 46 * time.Second},
		{name: "kicked_again_after_both", at: 76 * time.Second, wantKicked: []string{"mgmt-1"}},
		// The bundle's pause is now 90 s: due at 166 s, though its consumer is due at 151 s.
		{name: "pause_doubles", at: 160 * time.Second},
		{name: "a_later_delete_counts_once_it_is_stuck_too", at: 170 * time.Second, wantKicked: []string{"mgmt-1", "mgmt-2"}},
	})

	// A bundle that is gone is forgotten.
	rest.mu.Lock()
	rest.bundles = rest.bundles[:460]
	rest.mu.Unlock()
	if err := w.Scan(context.Background(), now.Add(230*time.Second)); err != nil {
		t.Fatal(err)
	}
	if len(w.next) != 0 || len(w.pause) != 0 {
		t.Fatalf("state kept for bundles that are gone: %v %v", w.next, w.pause)
	}
}

// A region without a watchdog (the mutual-TLS test regions) answers Kicks with 0, so a helper
// that logs kicks fails a lost delete by its timeout, not by a nil dereference.
func TestStuckDeleteWatchdogKicksOfNone(t *testing.T) {
	var w *StuckDeleteWatchdog
	if got := w.Kicks(); got != 0 {
		t.Fatalf("Kicks of no watchdog = %d, want 0", got)
	}
}

// TestStuckDeleteWatchdogIsNotFooledByAListThatShiftedBetweenPages: Maestro pages by offset, so
// when a delete finishes between two pages of the list every later bundle moves up one place
// and one is never seen by that walk. A bundle missing that way has not finished: it must not
// count as a later delete that overtook the older ones, which are deleting as they should (others
// keep finishing) and must not be kicked.
func TestStuckDeleteWatchdogIsNotFooledByAListThatShiftedBetweenPages(t *testing.T) {
	mq := startTestBroker(t)
	now := time.Now()
	rest := &fakeMaestroREST{}
	bundle := func(id string, deletedAt time.Duration) map[string]any {
		return map[string]any{"id": id, "consumer_name": "mgmt-1", "deleted_at": now.Add(deletedAt)}
	}
	// 200 deletes requested at once fill the first page (200 a page); the second holds one more.
	for i := range 200 {
		rest.bundles = append(rest.bundles, bundle(fmt.Sprintf("early%03d", i), -10*time.Second))
	}
	rest.bundles = append(rest.bundles, bundle("x", -10*time.Second))
	w := testWatchdog(t, rest, mq.Addr)
	runWatchdogSteps(t, w, mq.Addr, now, []watchdogStep{
		{name: "none_stuck_yet", at: 0},
		// x finishes; a delete requested 55 s after the others takes its place on page two.
		{name: "a_delete_finishes_and_a_later_one_starts", at: 50 * time.Second, before: func() {
			rest.mu.Lock()
			defer rest.mu.Unlock()
			rest.bundles = append(rest.bundles[:200], bundle("late", 45*time.Second))
		}},
		{name: "a_delete_finishing_between_pages_kicks_nobody", at: 60 * time.Second, before: func() {
			rest.mu.Lock()
			defer rest.mu.Unlock()
			rest.afterPage = func(page int) {
				if page == 1 {
					rest.bundles = rest.bundles[1:] // early000 finishes
					rest.afterPage = nil
				}
			}
		}},
	})
}
