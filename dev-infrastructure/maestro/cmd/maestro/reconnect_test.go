package main

import (
	"testing"

	ceclients "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/clients"
)

// TestReconnectDelaysStayUnderTheirCap: after installReconnectBackoff, no wait between two
// reconnect attempts of the server's or the agent's CloudEvents client is longer than
// maxReconnectDelay, however many attempts fail (a broker away for minutes), so a client is
// back at most that long after its broker. Upstream's backoff grows to a minute and more.
func TestReconnectDelaysStayUnderTheirCap(t *testing.T) {
	installReconnectBackoff()
	for attempt := range 40 {
		if d := ceclients.DelayFn(); d > maxReconnectDelay || d <= 0 {
			t.Fatalf("reconnect attempt %d waits %s, want (0, %s]", attempt+1, d, maxReconnectDelay)
		}
	}
}
