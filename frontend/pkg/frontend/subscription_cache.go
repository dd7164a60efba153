package frontend

import (
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// subscriptionCacheTTL bounds how long a GET may be answered from a registration this process
// read earlier: a subscription that ARM moves out of Registered is refused to GETs at most this
// long after the change reached the store (at once on the replica that received the change).
// Writes never use the cache.
const subscriptionCacheTTL = 2 * time.Second

// subscriptionCacheMax bounds the cache's memory; a full cache drops what has expired, and
// everything if nothing has.
const subscriptionCacheMax = 10000

// subscriptionCache remembers registrations (nil for an unknown subscription) by partition key.
// Entries are shared and must not be modified.
type subscriptionCache struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu      sync.Mutex
	entries map[string]cachedSubscription
}

type cachedSubscription struct {
	sub     *armdoc.SubscriptionDocument
	expires time.Time
}

func newSubscriptionCache() *subscriptionCache {
	return &subscriptionCache{ttl: subscriptionCacheTTL, max: subscriptionCacheMax, now: time.Now, entries: map[string]cachedSubscription{}}
}

func (c *subscriptionCache) get(key string) (*armdoc.SubscriptionDocument, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.now().Before(e.expires) {
		return nil, false
	}
	return e.sub, true
}

func (c *subscriptionCache) put(key string, sub *armdoc.SubscriptionDocument) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			clear(c.entries)
		}
	}
	c.entries[key] = cachedSubscription{sub: sub, expires: now.Add(c.ttl)}
}

// forget drops a subscription whose registration this process has just written.
func (c *subscriptionCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}
