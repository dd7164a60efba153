package monitor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// shareReplica is one Sharer with its own connection pool, so closing the pool cuts it off from
// the store as a crash or a partition would.
type shareReplica struct {
	st     *postgres.Store
	s      *Sharer
	cancel context.CancelFunc
	done   chan struct{}
}

func startSharer(t *testing.T, dsn, holder string, lease time.Duration) *shareReplica {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	s, err := NewSharer(st, ShareConfig{Holder: holder, Buckets: 8, LeaseDuration: lease})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &shareReplica{st: st, s: s, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done; st.Close() })
	return r
}

// owners maps each bucket to the replicas that hold it now.
func owners(rs ...*shareReplica) map[int][]string {
	out := map[int][]string{}
	for _, r := range rs {
		for _, b := range r.s.Held() {
			out[b] = append(out[b], r.s.cfg.Holder)
		}
	}
	return out
}

func waitUntil(t *testing.T, timeout time.Duration, what string, f func() error) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// neverTwice fails if a bucket is held by two replicas at once.
func neverTwice(t *testing.T, rs ...*shareReplica) {
	t.Helper()
	for b, hs := range owners(rs...) {
		if len(hs) > 1 {
			t.Fatalf("bucket %d held by %v at once", b, hs)
		}
	}
}

func TestSharer(t *testing.T) {
	pg := pgservertest.Start(t)
	const lease = 2 * time.Second

	t.Run("two_replicas_split_the_buckets_and_never_hold_one_twice", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		a := startSharer(t, dsn, "a", lease)
		waitUntil(t, 10*time.Second, "a holds all 8", func() error {
			if n := len(a.s.Held()); n != 8 {
				return fmt.Errorf("a holds %d", n)
			}
			return nil
		})
		b := startSharer(t, dsn, "b", lease)
		waitUntil(t, 20*time.Second, "a and b hold 4 each", func() error {
			neverTwice(t, a, b)
			if na, nb := len(a.s.Held()), len(b.s.Held()); na != 4 || nb != 4 {
				return fmt.Errorf("a holds %d, b %d", na, nb)
			}
			return nil
		})
		for end := time.Now().Add(2 * lease); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			neverTwice(t, a, b)
			if n := len(owners(a, b)); n != 8 {
				t.Fatalf("%d of 8 buckets held while both run", n)
			}
		}
	})

	t.Run("a_cut_off_replicas_share_moves_within_one_lease_period", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		a := startSharer(t, dsn, "a", lease)
		b := startSharer(t, dsn, "b", lease)
		waitUntil(t, 20*time.Second, "a and b hold 4 each", func() error {
			if na, nb := len(a.s.Held()), len(b.s.Held()); na != 4 || nb != 4 {
				return fmt.Errorf("a holds %d, b %d", na, nb)
			}
			return nil
		})
		aHeld := a.s.Held()
		// a can no longer reach the store: it can neither renew nor release.
		cut := time.Now()
		a.st.Close()
		waitUntil(t, lease, "a stops counting its buckets as its own", func() error {
			if h := a.s.Held(); len(h) != 0 {
				return fmt.Errorf("a still holds %v", h)
			}
			return nil
		})
		aGone := time.Now()
		took := waitUntil(t, 5*lease, "b holds all 8", func() error {
			for _, bk := range b.s.Held() {
				for _, ak := range a.s.Held() {
					if ak == bk {
						t.Fatalf("bucket %d held by a and b at once", ak)
					}
				}
			}
			if n := len(b.s.Held()); n != 8 {
				return fmt.Errorf("b holds %d", n)
			}
			return nil
		}).Sub(cut)
		if !aGone.Before(cut.Add(took)) {
			t.Fatalf("b took over before a let go")
		}
		t.Logf("a's buckets %v moved to b %s after a was cut off (lease %s)", aHeld, took.Round(time.Millisecond), lease)
	})

	t.Run("a_replica_that_stops_hands_its_buckets_over_at_once", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		a := startSharer(t, dsn, "a", lease)
		b := startSharer(t, dsn, "b", lease)
		waitUntil(t, 20*time.Second, "a and b hold 4 each", func() error {
			if na, nb := len(a.s.Held()), len(b.s.Held()); na != 4 || nb != 4 {
				return fmt.Errorf("a holds %d, b %d", na, nb)
			}
			return nil
		})
		a.cancel()
		<-a.done
		waitUntil(t, 20*time.Second, "b holds all 8", func() error {
			if n := len(b.s.Held()); n != 8 {
				return fmt.Errorf("b holds %d", n)
			}
			return nil
		})
	})
}
