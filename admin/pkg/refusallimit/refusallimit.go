// Package refusallimit bounds the audit records of refused calls, for the admin API and the
// break-glass gateway (they write the same audit table): a token bucket per identified person,
// and for callers without an identity one per source and one for all sources together, so no
// caller, whatever its number of addresses, can record refusals faster than these rates.
package refusallimit

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// TokenBucket is a rate: PerSecond tokens added, up to Burst.
type TokenBucket struct {
	PerSecond float64
	Burst     int
}

// Rates are the two buckets a refusal's record takes a token of: its source's and the one of
// all sources.
type Rates struct {
	// PerSource is each source's bucket.
	PerSource TokenBucket
	// Total is the bucket of all sources together: the bound on the records of refusals per
	// unit of time however many sources a caller has (a local user has all of 127.0.0.0/8, a
	// host an IPv6 /64 or more).
	Total TokenBucket
}

// Default is how many refused calls are recorded by one process: a source a burst of 60, then
// one a second; all sources together a burst of 600, then two a second. Beyond either, a
// refusal is answered and counted, not recorded.
func Default() Rates {
	return Rates{PerSource: TokenBucket{PerSecond: 1, Burst: 60}, Total: TokenBucket{PerSecond: 2, Burst: 600}}
}

// maxSources bounds the limiter's memory; when full, the sources whose buckets have refilled
// are forgotten (they are as new ones). The Total bucket bounds the records all the same.
const maxSources = 10_000

// Limiter takes a token of a source's bucket and of the total bucket for each recorded
// refusal. An allowed call is never limited: it is recorded before it acts, or refused.
type Limiter struct {
	rates Rates
	now   func() time.Time

	mu      sync.Mutex
	total   bucket
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// refill adds the tokens of the time since b was last seen, up to rate's burst.
func (b *bucket) refill(rate TokenBucket, now time.Time) {
	b.tokens = min(float64(rate.Burst), b.tokens+now.Sub(b.at).Seconds()*rate.PerSecond)
	b.at = now
}

// New makes a limiter of rates on the clock now (time.Now when nil); a zero Rates is Default,
// and rates without a positive rate and burst in each bucket are an error.
func New(rates Rates, now func() time.Time) (*Limiter, error) {
	if rates == (Rates{}) {
		rates = Default()
	}
	if !rates.Valid() {
		return nil, fmt.Errorf("refusal audit rates need a positive rate and burst in each bucket, got %+v", rates)
	}
	if now == nil {
		now = time.Now
	}
	t := now()
	return &Limiter{rates: rates, now: now, total: bucket{tokens: float64(rates.Total.Burst), at: t}, buckets: map[string]*bucket{}}, nil
}

// Valid says whether both buckets have a positive rate and burst.
func (r Rates) Valid() bool {
	return r.PerSource.PerSecond > 0 && r.PerSource.Burst >= 1 && r.Total.PerSecond > 0 && r.Total.Burst >= 1
}

// AllowRefusal is the limiter's answer for one refused request: a caller the door identified
// (person, even a revoked one) takes a token of that person's own bucket, at the PerSource rate,
// and none of the total one; any other takes its source's and the total's (Allow). So callers
// without an identity, however many their addresses, cannot exhaust the records of an
// identified SRE's refused calls (an insider could otherwise hide their own forbidden attempts
// behind a flood), and persons are as many as the person CA has issued.
func (l *Limiter) AllowRefusal(r *http.Request, person string) bool {
	if person != "" {
		return l.take("person:"+person, false)
	}
	return l.Allow(Source(r))
}

// Allow takes a token of src's bucket and of the total one, if both have one.
func (l *Limiter) Allow(src string) bool {
	return l.take("source:"+src, true)
}

// take takes a token of key's bucket and, when total, of the total one, if each has one.
func (l *Limiter) take(key string, total bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxSources {
			l.forgetFull(now)
		}
		b = &bucket{tokens: float64(l.rates.PerSource.Burst), at: now}
		l.buckets[key] = b
	}
	b.refill(l.rates.PerSource, now)
	if !total {
		if b.tokens < 1 {
			return false
		}
		b.tokens--
		return true
	}
	l.total.refill(l.rates.Total, now)
	if b.tokens < 1 || l.total.tokens < 1 {
		return false
	}
	b.tokens--
	l.total.tokens--
	return true
}

// forgetFull drops the buckets that have refilled; if none has, all of them.
func (l *Limiter) forgetFull(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rates.PerSource.PerSecond >= float64(l.rates.PerSource.Burst) {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxSources {
		clear(l.buckets)
	}
}

// Source is the request's source as the limiter counts it: the caller's address without its
// port, with every loopback address one source (any local user can send from any of
// 127.0.0.0/8) and an IPv6 address by its /64 (a host commonly has a whole /64).
func Source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	switch {
	case addr.IsLoopback():
		return "loopback"
	case addr.Is6():
		p, _ := addr.WithZone("").Prefix(64)
		return p.String()
	}
	return addr.String()
}
