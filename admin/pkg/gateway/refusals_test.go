package gateway

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/refusallimit"
)

// TestGatewayRefusalRecordsAreBounded: a revoked (leaked) certificate still completes the
// handshake, and each of its requests is refused; the audit table the gateway shares with the
// admin API (full, it stops every admin call) gets at most the per-source bucket's records of
// them.
func TestGatewayRefusalRecordsAreBounded(t *testing.T) {
	e := newEnv(t)
	if _, err := e.revoked.Revoke(context.Background(), "dave", "alice", "leaked"); err != nil {
		t.Fatal(err)
	}
	const n = 150
	c := e.client("dave")
	start := time.Now()
	for range n {
		resp, err := c.Get(e.srv.URL + "/sessions/x/api")
		if err != nil {
			t.Fatal(err)
		}
		if msg := readAll(t, resp); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a revoked certificate's request: %d %.200s, want 403", resp.StatusCode, msg)
		}
	}
	recs, _, err := e.audit.Query(context.Background(), audit.Filter{Person: "dave", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// The bucket's burst, and what it refilled while the requests ran (each refusal ends its
	// connection, so each request is a new handshake: seconds on a busy machine).
	rate := refusallimit.Default().PerSource
	if limit := rate.Burst + int(math.Ceil(time.Since(start).Seconds()*rate.PerSecond)); len(recs) == 0 || len(recs) > limit {
		t.Fatalf("%d refused requests of one person left %d audit records, want 1 to %d", n, len(recs), limit)
	}
	if dropped := testutil.ToFloat64(e.gw.metrics.refusalsDropped); int(dropped) != n-len(recs) {
		t.Fatalf("gateway_audit_refusals_dropped_total is %v, want the %d refusals not recorded", dropped, n-len(recs))
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return "" // an upgraded stream: its body is the connection
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for b.Len() < 1<<16 {
		k, err := resp.Body.Read(buf)
		b.Write(buf[:k])
		if err != nil {
			break
		}
	}
	return b.String()
}
