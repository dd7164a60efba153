package frontend

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

func TestSubscriptionCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newSubscriptionCache()
	c.now = func() time.Time { return now }
	reg := &armdoc.SubscriptionDocument{State: armdoc.SubscriptionRegistered}

	t.Run("entry_is_served_until_the_ttl_and_not_at_it", func(t *testing.T) {
		c.put("a", reg)
		now = now.Add(subscriptionCacheTTL - time.Millisecond)
		if got, ok := c.get("a"); !ok || got != reg {
			t.Fatalf("get before the TTL = %v, %v", got, ok)
		}
		now = now.Add(time.Millisecond)
		if _, ok := c.get("a"); ok {
			t.Fatal("entry served at its TTL")
		}
	})
	t.Run("unknown_subscription_is_remembered_as_nil", func(t *testing.T) {
		c.put("b", nil)
		if got, ok := c.get("b"); !ok || got != nil {
			t.Fatalf("get = %v, %v; want a remembered nil", got, ok)
		}
	})
	t.Run("forget_drops_the_entry", func(t *testing.T) {
		c.put("c", reg)
		c.forget("c")
		if _, ok := c.get("c"); ok {
			t.Fatal("forgotten entry served")
		}
	})
	t.Run("size_stays_bounded", func(t *testing.T) {
		small := newSubscriptionCache()
		small.max = 10
		for i := range 1000 {
			small.put(fmt.Sprint(i), reg)
			if len(small.entries) > small.max {
				t.Fatalf("%d entries after %d puts, max %d", len(small.entries), i+1, small.max)
			}
		}
		if _, ok := small.get("999"); !ok {
			t.Fatal("the newest entry is not served")
		}
	})
}

// countingStore counts reads of subscription registrations.
type countingStore struct {
	docstore.Store
	subscriptionReads atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, partition, id string) (*docstore.Document, error) {
	if id == subscriptionDocID(partition) {
		c.subscriptionReads.Add(1)
	}
	return c.Store.Get(ctx, partition, id)
}

// TestSubscriptionStateAcrossReplicas: two frontends on one store. GETs reuse a registration
// read less than subscriptionCacheTTL ago, so a burst of GETs reads it about once; writes read it
// every time (and refresh what GETs use). When ARM moves the subscription out of Registered
// through one replica, that replica refuses at once, and the other refuses GETs once its entry
// expires.
func TestSubscriptionStateAcrossReplicas(t *testing.T) {
	a := newEnv(t)
	counting := &countingStore{Store: a.store}
	b, err := NewServer(Config{Store: counting, Clusters: a.srv.cfg.Clusters, Location: testLocation, Logger: a.srv.log})
	if err != nil {
		t.Fatal(err)
	}
	bs := httptest.NewServer(b.Handler())
	t.Cleanup(bs.Close)
	onB := &env{t: t, srv: b, http: bs, store: a.store, cs: a.cs}
	path := clusterPath("rg", "absent")

	t.Run("a_burst_of_gets_reads_the_registration_about_once", func(t *testing.T) {
		before := counting.subscriptionReads.Load()
		for range 50 {
			if resp := onB.do("GET", path, nil, nil); resp.code != 404 {
				t.Fatalf("GET: %d %s", resp.code, resp.body)
			}
		}
		// One read per expiry at most; 50 local GETs take far less than 25 TTLs even on a busy machine.
		if reads := counting.subscriptionReads.Load() - before; reads < 1 || reads > 25 {
			t.Fatalf("%d registration reads for 50 GETs", reads)
		}
	})
	t.Run("writes_read_the_registration_every_time", func(t *testing.T) {
		before := counting.subscriptionReads.Load()
		for range 3 {
			if resp := onB.do("DELETE", path, nil, nil); resp.code != 204 {
				t.Fatalf("DELETE: %d %s", resp.code, resp.body)
			}
		}
		if reads := counting.subscriptionReads.Load() - before; reads != 3 {
			t.Fatalf("%d registration reads for 3 DELETEs, want 3", reads)
		}
	})
	t.Run("unregistered_through_one_replica_is_refused_by_both", func(t *testing.T) {
		if resp := onB.do("GET", path, nil, nil); resp.code != 404 { // b remembers Registered
			t.Fatalf("GET on b: %d", resp.code)
		}
		a.registerSubscription(testSub, armdoc.SubscriptionUnregistered)
		if resp := a.do("GET", path, nil, nil); resp.code != 400 {
			t.Fatalf("GET on a after the change: %d, want 400 at once", resp.code)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp := onB.do("GET", path, nil, nil)
			if resp.code == 400 {
				break
			}
			if resp.code != 404 || time.Now().After(deadline) {
				t.Fatalf("GET on b: %d, want 404 until its entry expires and then 400", resp.code)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if resp := onB.do("PUT", path, mustJSON(minimalBody()), nil); resp.code != 400 {
			t.Fatalf("PUT on b after the change: %d, want 400", resp.code)
		}
	})
}
