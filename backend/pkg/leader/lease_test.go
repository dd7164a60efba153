package leader

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// replica is one elector with its own connection pool to the shared PostgreSQL document store,
// so closing that pool cuts this replica off as a crash or a partition would.
type replica struct {
	name    string
	st      *postgres.Store
	e       *Elector
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	started []time.Time
	ended   []time.Time
}

func (r *replica) leading() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.started) > len(r.ended)
}

func startReplica(t *testing.T, dsn, name string, lease time.Duration) *replica {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	e, err := New(st, Config{Holder: name, LeaseDuration: lease})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, st: st, e: e, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_ = e.Run(ctx, func(ctx context.Context) {
			r.mu.Lock()
			r.started = append(r.started, time.Now())
			r.mu.Unlock()
			<-ctx.Done()
			r.mu.Lock()
			r.ended = append(r.ended, time.Now())
			r.mu.Unlock()
		})
	}()
	t.Cleanup(func() { r.stop(); st.Close() })
	return r
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

func waitFor(t *testing.T, timeout time.Duration, what string, f func() bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Now()
}

func TestLease(t *testing.T) {
	pg := pgservertest.Start(t)
	const lease = 2 * time.Second

	t.Run("exactly_one_of_three_replicas_leads", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		rs := []*replica{startReplica(t, dsn, "a", lease), startReplica(t, dsn, "b", lease), startReplica(t, dsn, "c", lease)}
		waitFor(t, 5*time.Second, "a leader", func() bool { return rs[0].leading() || rs[1].leading() || rs[2].leading() })
		// Over several renewals, never two at once.
		for end := time.Now().Add(2 * lease); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			n := 0
			for _, r := range rs {
				if r.leading() {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d replicas lead at once", n)
			}
		}
	})

	t.Run("cut_off_leader_stops_before_the_next_one_starts_within_one_lease_period", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		a := startReplica(t, dsn, "a", lease)
		waitFor(t, 5*time.Second, "a leads", a.leading)
		b := startReplica(t, dsn, "b", lease)
		time.Sleep(lease) // b has seen a renew
		if b.leading() {
			t.Fatal("b leads while a holds the lease")
		}
		// a can no longer reach the store: it cannot renew, nor release.
		cut := time.Now()
		a.st.Close()
		took := waitFor(t, 3*lease, "b leads", b.leading).Sub(cut)
		waitFor(t, lease, "a stops", func() bool { return !a.leading() })
		a.mu.Lock()
		aEnded := a.ended[0]
		a.mu.Unlock()
		b.mu.Lock()
		bStarted := b.started[0]
		b.mu.Unlock()
		if !aEnded.Before(bStarted) {
			t.Errorf("a stopped at %s, after b started at %s", aEnded.Format(time.StampMilli), bStarted.Format(time.StampMilli))
		}
		if _, _, err := a.e.Guard(context.Background()); !errors.Is(err, ErrNotLeader) {
			t.Errorf("a's Guard after losing the lease: %v, want ErrNotLeader", err)
		}
		// One lease period from a's last renewal, plus b's retry period.
		if max := lease + lease/5 + 200*time.Millisecond; took > max {
			t.Errorf("failover took %s, want at most %s", took, max)
		}
		t.Logf("failover after the leader was cut off: %s", took.Round(time.Millisecond))
	})

	t.Run("graceful_stop_releases_at_once", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		a := startReplica(t, dsn, "a", 10*time.Second)
		waitFor(t, 5*time.Second, "a leads", a.leading)
		b := startReplica(t, dsn, "b", 10*time.Second)
		time.Sleep(500 * time.Millisecond)
		a.stop()
		// Without the release b would wait the whole 10s lease.
		waitFor(t, 5*time.Second, "b leads", b.leading)
		if b.e.Term() != 2 {
			t.Errorf("b's term = %d, want 2", b.e.Term())
		}
	})

	t.Run("leader_whose_lease_is_taken_stops_at_its_next_renewal", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		a := startReplica(t, dsn, "a", lease)
		waitFor(t, 5*time.Second, "a leads", a.leading)
		ctx := context.Background()
		doc, err := a.st.Get(ctx, Partition, "backend")
		if err != nil {
			t.Fatal(err)
		}
		var rec record
		_ = json.Unmarshal(doc.Body, &rec)
		rec.Holder, rec.Term = "intruder", rec.Term+1
		body, _ := json.Marshal(rec)
		next := *doc
		next.Body = body
		if _, err := a.st.Replace(ctx, &next, doc.ETag); err != nil {
			t.Fatal(err)
		}
		waitFor(t, lease, "a stops", func() bool { return !a.leading() })
		if _, _, err := a.e.Guard(ctx); !errors.Is(err, ErrNotLeader) {
			t.Errorf("Guard after the lease was taken: %v, want ErrNotLeader", err)
		}
		// The intruder's lease is not released by a.
		got, err := a.st.Get(ctx, Partition, "backend")
		if err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(got.Body, &rec)
		if rec.Holder != "intruder" {
			t.Errorf("lease holder after a stopped = %q, want intruder", rec.Holder)
		}
	})
}

var _ docstore.Store = (*postgres.Store)(nil)
