package controller

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"

	"github.com/openhcp/openhcp/backend/pkg/oprecord"
)

// receiverCA is the receivers' self-signed certificate, valid for localhost and the loopback
// addresses the tests listen on; pool trusts it.
var receiverCA = func() (ca struct {
	cert tls.Certificate
	pool *x509.CertPool
}) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "notification receiver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2"), net.ParseIP("::1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	ca.cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	ca.pool = x509.NewCertPool()
	ca.pool.AddCert(leaf)
	return ca
}()

// TestNotificationTargets: the backend posts notifications only over HTTPS, follows no redirect,
// and refuses loopback (by address or by a name that resolves to it) unless the operator's
// allow-list names the address. One controller, whose allow-list is 127.0.0.2/32 only, sees
// every target; receivers on 127.0.0.1 stand for the region's own services.
func TestNotificationTargets(t *testing.T) {
	allowed := startReceiver(t, "127.0.0.2:0", true, nil)
	local := startReceiver(t, "127.0.0.1:0", true, nil)
	plain := startReceiver(t, "127.0.0.2:0", false, nil)
	redirector := startReceiver(t, "127.0.0.2:0", true, nil)
	redirector.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, local.URL+"/notify/redirected", http.StatusTemporaryRedirect)
	})
	_, localPort, _ := net.SplitHostPort(local.Listener.Addr().String())

	h := newHarness(t)
	h.start(Config{ResyncPeriod: time.Minute, NotifyGiveUp: time.Hour,
		NotifyAllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, NotifyRootCAs: receiverCA.pool})

	for _, tc := range []struct {
		name    string
		uri     string
		rcv     *receiver
		path    string
		wantErr string // "" means delivered
	}{
		{"allowed_https_target_is_delivered", allowed.URL + "/notify/ok", allowed, "/notify/ok", ""},
		{"loopback_address_not_on_the_allow_list_is_refused", local.URL + "/notify/loopback", local, "/notify/loopback", "loopback"},
		{"hostname_resolving_to_loopback_is_refused", "https://localhost:" + localPort + "/notify/name", local, "/notify/name", "loopback"},
		{"plain_http_is_refused_even_to_an_allowed_address", plain.URL + "/notify/plain", plain, "/notify/plain", "not https"},
		{"redirect_to_loopback_is_a_failure_and_not_followed", redirector.URL + "/notify/redirect", local, "/notify/redirected", "307"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.notifyURI = tc.uri
			csID, opID := h.createCluster(strings.ReplaceAll(tc.name, "_", "-")[:20], 0)
			h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
			if tc.wantErr == "" {
				h.waitNotification(opID, oprecord.NotifyDelivered, 15*time.Second)
				if got := len(tc.rcv.got(tc.path)); got != 1 {
					t.Fatalf("receiver got %d posts on %s, want 1", got, tc.path)
				}
				return
			}
			n := h.waitNotificationAttempted(opID, 15*time.Second)
			if n.State != oprecord.NotifyPending || !strings.Contains(n.LastError, tc.wantErr) {
				t.Fatalf("notification record %+v, want Pending with an error naming %q", n, tc.wantErr)
			}
			if got := len(tc.rcv.got(tc.path)); got != 0 {
				t.Fatalf("refused target's receiver got %d posts on %s, want none", got, tc.path)
			}
		})
	}
}

// waitNotificationAttempted waits until the operation's notification has been tried at least once.
func (h *harness) waitNotificationAttempted(opID string, timeout time.Duration) *oprecord.Notification {
	h.t.Helper()
	var last *oprecord.Notification
	waitUntil(h.t, timeout, "a notification attempt of "+opID, func() bool {
		last = h.notificationRecord(opID)
		return last != nil && last.Attempts > 0
	})
	return last
}
