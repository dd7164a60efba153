package main

import (
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ceclients "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/clients"
)

// The pinned sdk-go waits between two reconnect attempts of a CloudEvents client (the server's
// MQTT source client, the agent's MQTT agent client) by clients.DelayFn: 5 s growing ×5 with up
// to 100 % jitter, capped at a minute (so up to 2 minutes with the jitter), and reset only after
// 10 minutes without a reconnect. After a broker outage of a minute the agents came back 74-104 s
// after the broker (docs/reliability.md, defect 3): the last wait before they tried again had
// grown past the outage. sdk-go offers no option for it; DelayFn is a package variable, one for
// the process, read before every wait, so the command sets it before anything connects.

// maxReconnectDelay is the longest a CloudEvents client waits between two reconnect attempts:
// reconnectBackoff's cap with its jitter. A client is therefore back at most this long after its
// broker, well inside the 30 s convergence target, and a broker that is away costs each client
// one attempt every 4-6 s, which a broker of this region's size does not notice. It was 12 s (an
// 8 s cap): after a one-minute broker outage the server came back 9.4 s after the broker, the
// largest wait left once its unpublished events were synced every 5 s (docs/reliability.md).
const maxReconnectDelay = 6 * time.Second

// reconnectBackoff waits 1 s, 2 s, then 4 s per attempt, each with up to 50 % jitter so the
// agents of a region do not all try in the same second.
var reconnectBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Steps: 3, Cap: 4 * time.Second}

// reconnectReset: a client that has stayed connected this long starts again from 1 s.
const reconnectReset = time.Minute

// installReconnectBackoff replaces sdk-go's reconnect backoff with reconnectBackoff.
func installReconnectBackoff() {
	ceclients.DelayFn = reconnectBackoff.DelayWithReset(clock.RealClock{}, reconnectReset)
}
