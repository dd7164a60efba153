package refusallimit

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"
)

func TestSource(t *testing.T) {
	for _, tc := range []struct{ name, remote, want string }{
		{"ipv4_without_its_port", "192.0.2.7:4000", "192.0.2.7"},
		{"loopback_127.0.0.1_is_one_source", "127.0.0.1:4000", "loopback"},
		{"any_of_127/8_is_the_same_source", "127.45.6.7:4000", "loopback"},
		{"ipv6_loopback_is_the_same_source", "[::1]:4000", "loopback"},
		{"ipv4_mapped_loopback_is_the_same_source", "[::ffff:127.9.9.9]:4000", "loopback"},
		{"ipv4_mapped_is_the_ipv4_address", "[::ffff:192.0.2.7]:4000", "192.0.2.7"},
		{"ipv6_by_its_64", "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:4000", "2001:db8:1:2::/64"},
		{"ipv6_with_a_zone_by_its_64", "[fe80::1%eth0]:4000", "fe80::/64"},
		{"another_64_is_another_source", "[2001:db8:1:3::1]:4000", "2001:db8:1:3::/64"},
		{"no_port_is_the_address", "192.0.2.7", "192.0.2.7"},
		{"not_an_address_is_kept", "pipe", "pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			if got := Source(r); got != tc.want {
				t.Fatalf("Source(%q) = %q, want %q", tc.remote, got, tc.want)
			}
		})
	}
}

// TestLimiter: a source gets its burst, all sources together the total burst, and both
// refill at their rates.
func TestLimiter(t *testing.T) {
	rates := Rates{PerSource: TokenBucket{PerSecond: 1, Burst: 5}, Total: TokenBucket{PerSecond: 10, Burst: 50}}
	for _, tc := range []struct {
		name    string
		sources int
		each    int
		later   time.Duration // then as many again
		want    int
	}{
		{"one_source_gets_its_burst", 1, 100, 0, 5},
		{"one_source_refills_at_its_rate", 1, 100, 3 * time.Second, 5 + 3},
		{"few_sources_get_each_its_burst", 4, 100, 0, 4 * 5},
		{"many_sources_get_the_total_burst", 20_000, 1, 0, 50},
		{"many_sources_refill_at_the_total_rate", 20_000, 1, 2 * time.Second, 50 + 20},
		{"more_sources_than_the_map_holds_still_the_total", 3 * maxSources, 3, 0, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1_000_000, 0)
			l, err := New(rates, func() time.Time { return now })
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			round := func() {
				for i := range tc.sources {
					for range tc.each {
						if l.Allow(fmt.Sprint("s", i)) {
							got++
						}
					}
				}
			}
			round()
			if tc.later > 0 {
				now = now.Add(tc.later)
				round()
			}
			if got != tc.want {
				t.Fatalf("%d allowed, want %d", got, tc.want)
			}
		})
	}
}

func TestZeroRatesAreDefault(t *testing.T) {
	if l, err := New(Rates{}, nil); err != nil || l.rates != Default() || !l.rates.Valid() {
		t.Fatalf("New(Rates{}) has %+v, %v, want Default %+v", l, err, Default())
	}
}

// TestIdentifiedRefusalsAreNotTakenByAnonymousFloods: callers without an identity who exhaust
// the total bucket do not cost an identified person the records of their refused calls; each
// person has a bucket of their own (at the per-source rate), and a person's flood is bounded by it.
func TestIdentifiedRefusalsAreNotTakenByAnonymousFloods(t *testing.T) {
	rates := Rates{PerSource: TokenBucket{PerSecond: 1, Burst: 5}, Total: TokenBucket{PerSecond: 10, Burst: 50}}
	now := time.Unix(1_000_000, 0)
	l, err := New(rates, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	anonymous := func(addr string) bool {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr + ":1234"
		return l.AllowRefusal(r, "")
	}
	for i := range 1000 {
		anonymous(fmt.Sprintf("10.0.%d.%d", i/250, i%250))
	}
	if anonymous("192.0.2.1") {
		t.Fatal("a new anonymous source was recorded after the total bucket was exhausted")
	}
	for _, tc := range []struct {
		person string
		tries  int
		want   int
	}{
		{"alice", 1, 1},
		{"bob", 100, 5},
		{"carol", 3, 3},
	} {
		got := 0
		for range tc.tries {
			if l.AllowRefusal(httptest.NewRequest("GET", "/", nil), tc.person) {
				got++
			}
		}
		if got != tc.want {
			t.Fatalf("%s: %d of %d refusals recorded after an anonymous flood, want %d", tc.person, got, tc.tries, tc.want)
		}
	}
}

func TestInvalidRatesAreRefused(t *testing.T) {
	for _, r := range []Rates{
		{PerSource: TokenBucket{PerSecond: 1, Burst: 0}, Total: Default().Total},
		{PerSource: Default().PerSource, Total: TokenBucket{PerSecond: 0, Burst: 5}},
		{PerSource: TokenBucket{PerSecond: -1, Burst: 5}, Total: Default().Total},
	} {
		if _, err := New(r, nil); err == nil {
			t.Errorf("New(%+v) made a limiter; want an error", r)
		}
	}
}
