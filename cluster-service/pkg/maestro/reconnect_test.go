package maestro

import (
	"testing"
	"time"
)

// TestReconnectDelaysStayUnderTheirCap: after a Maestro server outage of any length, Cluster
// Service's CloudEvents client tries again within 6 s, so it can publish again within seconds of
// the server's return (docs/reliability.md, "Maestro server outage: where the time went"). The
// earlier 15 s cap with 50 % jitter let a wait reach 22.5 s.
func TestReconnectDelaysStayUnderTheirCap(t *testing.T) {
	const want = 6 * time.Second
	delay := reconnectDelays()
	var longest time.Duration
	for range 200 {
		longest = max(longest, delay())
	}
	if longest > want {
		t.Fatalf("a reconnect wait of %s, want at most %s", longest, want)
	}
}
