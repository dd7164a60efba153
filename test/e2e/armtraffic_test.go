package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// armTraffic lists subscription sub's clusters through ARM every 100 ms, each time on a new
// connection (so every handshake sees the certificate files of the moment), until stopped.
type armTraffic struct {
	stopOnce     sync.Once
	stop         context.CancelFunc
	wg           sync.WaitGroup
	sent, failed atomic.Int64
	mu           sync.Mutex
	failures     []string
}

// startARMTraffic starts the traffic; ctx ending stops it too.
func startARMTraffic(ctx context.Context, t *testing.T, sub string) *armTraffic {
	ctx, stop := context.WithCancel(ctx)
	a := &armTraffic{stop: stop}
	a.wg.Go(func() {
		var tornSince time.Time
		for ctx.Err() == nil {
			c, err := region.Info.Frontend.HTTPClient(30 * time.Second)
			if err != nil && strings.Contains(err.Error(), "private key does not match public key") &&
				(tornSince.IsZero() || time.Since(tornSince) < 30*time.Second) {
				// A rotation replaces the client's certificate and its key one file after the
				// other; a read between the two sees a pair that does not match (as a service's
				// reload can) and reads again. Not a request: nothing was sent.
				if tornSince.IsZero() {
					tornSince = time.Now()
				}
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
			if err != nil {
				t.Error(err)
				return
			}
			tornSince = time.Time{}
			c.Transport.(*http.Transport).DisableKeepAlives = true
			a.sent.Add(1)
			resp, err := c.Get(region.Info.Frontend.URL + "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version=" + apiVersion)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil {
				a.failed.Add(1)
				a.mu.Lock()
				a.failures = append(a.failures, err.Error())
				a.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	return a
}

// Stop ends the traffic and waits for its last request; it may be called more than once.
func (a *armTraffic) Stop() {
	a.stopOnce.Do(func() { a.stop(); a.wg.Wait() })
}

// Tally returns the requests sent and failed, and the failures; call it after Stop.
func (a *armTraffic) Tally() (sent, failed int64, failures []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent.Load(), a.failed.Load(), append([]string(nil), a.failures...)
}
