package controller

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"

	"github.com/openhcp/openhcp/backend/pkg/oprecord"
)

// receiver is a real HTTP server standing in for ARM's notification endpoint. It records every
// POST per path and answers with what the test scripted.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	posts  map[string][]armdoc.OperationStatus
	answer func(path string, n int) int
	block  chan struct{}
}

// newReceiver starts an HTTPS receiver on 127.0.0.1; rcv.allow lets a controller reach it.
func newReceiver(t *testing.T, answer func(path string, n int) int) *receiver {
	return startReceiver(t, "127.0.0.1:0", true, answer)
}

// startReceiver starts a receiver on addr (a loopback address), over HTTPS with the test CA's
// certificate unless plain.
func startReceiver(t *testing.T, addr string, tlsOn bool, answer func(path string, n int) int) *receiver {
	r := &receiver{posts: map[string][]armdoc.OperationStatus{}, answer: answer, block: make(chan struct{})}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/hang") {
			select {
			case <-r.block:
			case <-req.Context().Done():
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(req.Body)
		var body armdoc.OperationStatus
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &body) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.posts[req.URL.Path] = append(r.posts[req.URL.Path], body)
		n := len(r.posts[req.URL.Path])
		r.mu.Unlock()
		code := http.StatusOK
		if r.answer != nil {
			code = r.answer(req.URL.Path, n)
		}
		w.WriteHeader(code)
	}))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	r.Listener.Close()
	r.Listener = l
	if tlsOn {
		r.TLS = &tls.Config{Certificates: []tls.Certificate{receiverCA.cert}}
		r.StartTLS()
	} else {
		r.Start()
	}
	t.Cleanup(func() { close(r.block); r.Close() })
	return r
}

// allow returns cfg with this receiver's address allowed and the test CA trusted.
func (r *receiver) allow(cfg Config) Config {
	ap := netip.MustParseAddrPort(r.Listener.Addr().String())
	cfg.NotifyAllowedCIDRs = append(cfg.NotifyAllowedCIDRs, netip.PrefixFrom(ap.Addr(), 32))
	cfg.NotifyRootCAs = receiverCA.pool
	return cfg
}

func (r *receiver) got(path string) []armdoc.OperationStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]armdoc.OperationStatus(nil), r.posts[path]...)
}

// notificationRecord reads the operation's notification record (nil before the first attempt).
func (h *harness) notificationRecord(opID string) *oprecord.Notification {
	h.t.Helper()
	d, err := h.docs.Get(t0(), strings.ToLower(h.sub), opID)
	if err != nil {
		h.t.Fatal(err)
	}
	var op oprecord.Record
	if err := json.Unmarshal(d.Body, &op); err != nil {
		h.t.Fatal(err)
	}
	return op.Notification
}

func (h *harness) waitNotification(opID, state string, timeout time.Duration) *oprecord.Notification {
	h.t.Helper()
	var n *oprecord.Notification
	waitUntil(h.t, timeout, "notification of "+opID+" "+state, func() bool {
		n = h.notificationRecord(opID)
		return n != nil && n.State == state
	})
	return n
}

func TestNotifications(t *testing.T) {
	t.Run("failing_receiver_is_retried_with_backoff_until_it_accepts_once", func(t *testing.T) {
		rcv := newReceiver(t, func(_ string, n int) int {
			if n < 3 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		})
		h := newHarness(t)
		h.start(rcv.allow(Config{ResyncPeriod: time.Minute}))
		h.notifyURI = rcv.URL + "/notify/c01"
		csID, opID := h.createCluster("c01", 0)
		h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_ERROR, ErrorCode: "InvalidReleaseImage", Message: "cannot pull"})
		h.waitStatus(opID, armdoc.StateFailed, 10*time.Second)
		n := h.waitNotification(opID, oprecord.NotifyDelivered, 15*time.Second)
		if n.Attempts != 3 || n.DeliveredAt == nil {
			t.Errorf("notification record %+v, want Delivered after 3 attempts", n)
		}
		posts := rcv.got("/notify/c01")
		if len(posts) != 3 {
			t.Fatalf("receiver got %d posts, want 3 (two refused, one accepted)", len(posts))
		}
		last := posts[2]
		if last.Name != opID || last.Status != armdoc.StateFailed || last.Error == nil || last.Error.Code != "InvalidReleaseImage" || last.EndTime == nil ||
			!strings.HasSuffix(last.ID, "/providers/Microsoft.RedHatOpenShift/locations/westus3/hcpOperationStatuses/"+opID) {
			t.Errorf("notification body = %+v", last)
		}
		time.Sleep(2 * time.Second)
		if got := len(rcv.got("/notify/c01")); got != 3 {
			t.Errorf("receiver got %d posts after delivery was recorded, want still 3", got)
		}
	})

	t.Run("hanging_receiver_blocks_neither_operations_nor_other_notifications", func(t *testing.T) {
		rcv := newReceiver(t, nil)
		h := newHarness(t)
		h.start(rcv.allow(Config{ResyncPeriod: time.Minute, NotifyTimeout: time.Minute}))
		h.notifyURI = rcv.URL + "/hang"
		csA, _ := h.createCluster("a", 0)
		h.feedback(csA, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
		h.notifyURI = rcv.URL + "/notify/b"
		csB, opB := h.createCluster("b", 0)
		h.notifyURI = ""
		csC, opC := h.createCluster("c", 0)
		time.Sleep(500 * time.Millisecond) // a's POST is hanging now
		h.feedback(csB, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
		h.feedback(csC, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
		h.waitStatus(opC, armdoc.StateSucceeded, 5*time.Second)
		h.waitStatus(opB, armdoc.StateSucceeded, 5*time.Second)
		h.waitNotification(opB, oprecord.NotifyDelivered, 5*time.Second)
		if got := len(rcv.got("/notify/b")); got != 1 {
			t.Errorf("b's receiver got %d posts, want 1", got)
		}
	})

	t.Run("operation_without_notification_uri_gets_no_record", func(t *testing.T) {
		h := newHarness(t)
		h.start(Config{ResyncPeriod: time.Minute})
		csID, opID := h.createCluster("c01", 0)
		h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
		h.waitStatus(opID, armdoc.StateSucceeded, 10*time.Second)
		d, _ := h.docs.Get(t0(), strings.ToLower(h.sub), opID)
		if strings.Contains(string(d.Body), `"notification"`) {
			t.Errorf("operation without a notification URI has a notification record: %s", d.Body)
		}
	})

	t.Run("receiver_that_keeps_failing_is_abandoned_after_give_up", func(t *testing.T) {
		rcv := newReceiver(t, func(string, int) int { return http.StatusInternalServerError })
		h := newHarness(t)
		h.start(rcv.allow(Config{ResyncPeriod: time.Minute, NotifyGiveUp: 2 * time.Second}))
		h.notifyURI = rcv.URL + "/notify/c01"
		csID, opID := h.createCluster("c01", 0)
		h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
		n := h.waitNotification(opID, oprecord.NotifyAbandoned, 15*time.Second)
		if n.Attempts < 1 || n.LastError == "" {
			t.Errorf("abandoned record %+v, want failed attempts with the last error", n)
		}
	})
}
