package server

import (
	"net"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"
)

// Bounds on what a caller can make the audit log store. Every call is recorded, refused ones
// included, and a caller without a certificate can call as often as it likes: without these,
// it could grow the table until inserts fail, and then every admin call answers 503.

// maxReason bounds a reason, from the body or the X-Admin-Reason header; a longer one is a
// 400, recorded with the reason cut to this length and marked.
const maxReason = 1024

// maxPath bounds the path recorded (the request line can be far longer).
const maxPath = 2048

// maxMethod bounds the method recorded: a request's method is any token the caller sends (the
// catch-all route takes every method), refused callers' included. HTTP's methods and the
// registered extension methods are all shorter, so they are recorded whole.
const maxMethod = 32

// truncatedMark ends a recorded value that was cut.
const truncatedMark = "…[truncated]"

// cut returns s cut to at most n bytes on a UTF-8 boundary, marked when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + truncatedMark
}

// TokenBucket is a rate: PerSecond tokens added, up to Burst.
type TokenBucket struct {
	PerSecond float64
	Burst     int
}

// DefaultRefusalAudit is how many refused calls a source may have recorded: a burst of 60,
// then one a second. Beyond that a refusal is answered and counted
// (admin_audit_refusals_dropped_total), not recorded.
func DefaultRefusalAudit() TokenBucket { return TokenBucket{PerSecond: 1, Burst: 60} }

// maxSources bounds the limiter's memory; when full, the sources whose buckets have refilled
// are forgotten (they are as new ones).
const maxSources = 10_000

// refusalLimiter is a token bucket per source address for the audit records of refused calls.
// An allowed call is never limited: it is recorded before it acts, or refused with 503.
type refusalLimiter struct {
	rate TokenBucket
	now  func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRefusalLimiter(rate TokenBucket, now func() time.Time) *refusalLimiter {
	return &refusalLimiter{rate: rate, now: now, buckets: map[string]*bucket{}}
}

// source is the caller's address without its port.
func source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// allow takes a token of src's bucket, if it has one.
func (l *refusalLimiter) allow(src string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[src]
	if b == nil {
		if len(l.buckets) >= maxSources {
			l.forgetFull(now)
		}
		b = &bucket{tokens: float64(l.rate.Burst), at: now}
		l.buckets[src] = b
	}
	b.tokens = min(float64(l.rate.Burst), b.tokens+now.Sub(b.at).Seconds()*l.rate.PerSecond)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// forgetFull drops the buckets that have refilled; if none has, all of them.
func (l *refusalLimiter) forgetFull(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate.PerSecond >= float64(l.rate.Burst) {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxSources {
		clear(l.buckets)
	}
}
