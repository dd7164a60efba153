package frontend

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/serverlimits"
)

// hostileBodies are bodies at the size limit in every shape a caller can choose.
func hostileBodies() map[string][]byte {
	fill := func(prefix, item, suffix string) []byte {
		n := (MaxBodyBytes - len(prefix) - len(suffix)) / len(item)
		return []byte(prefix + strings.TrimSuffix(strings.Repeat(item, n), ",") + suffix)
	}
	deep := func(open, close string) []byte {
		n := (MaxBodyBytes - 16) / (len(open) + len(close))
		return []byte(`{"a":` + strings.Repeat(open, n) + `1` + strings.Repeat(close, n) + `}`)
	}
	var keys bytes.Buffer
	keys.WriteString(`{"tags":{`)
	for i := 0; keys.Len() < MaxBodyBytes-32; i++ {
		if i > 0 {
			keys.WriteByte(',')
		}
		fmt.Fprintf(&keys, `"k%d":"v"`, i)
	}
	keys.WriteString(`}}`)
	return map[string][]byte{
		"deep_arrays":   deep("[", "]"),
		"deep_objects":  deep(`{"a":`, "}"),
		"many_keys":     keys.Bytes(),
		"long_array":    fill(`{"properties":{"imageDigestMirrors":[`, `{},`, `]}}`),
		"repeated_keys": fill(`{"tags":{`, `"a":"b",`, `}}`),
		"long_string":   []byte(`{"location":"` + strings.Repeat("x", MaxBodyBytes-32) + `"}`),
	}
}

// TestHostileBodiesLeaveOthersServed runs the frontend's handler chain behind a real HTTPS
// listener, sends hostile bodies at the size limit of every shape concurrently, and meanwhile
// ordinary requests: each hostile body is refused with 400, and every ordinary request is
// answered as usual. The deadline is generous; nothing here is timed.
func TestHostileBodiesLeaveOthersServed(t *testing.T) {
	e := newEnv(t)
	// The listener as the frontend binary builds it: its timeouts, header limit and
	// connection cap (internal/serverlimits), under TLS.
	limits := serverlimits.API()
	hs := httptest.NewUnstartedServer(e.srv.Handler())
	hs.Config = limits.Server("", e.srv.Handler(), nil)
	hs.Listener = serverlimits.LimitListener(hs.Listener, limits.MaxConns)
	hs.StartTLS()
	t.Cleanup(hs.Close)
	client := hs.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	send := func(method, path string, body []byte) (int, string, error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, hs.URL+path, rd)
		if err != nil {
			return 0, "", err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}

	// A cluster to PATCH, created and its operation finished as the backend would.
	created := e.put(clusterPath("rg", "patched"), minimalBody())
	if created.code != http.StatusCreated {
		t.Fatalf("PUT of the cluster to patch: %d %s", created.code, created.body)
	}
	e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)

	var wg sync.WaitGroup
	hostileDone := make(chan struct{})
	bodies := hostileBodies()
	for name, body := range bodies {
		if len(body) > MaxBodyBytes {
			t.Fatalf("%s: %d bytes, over the limit", name, len(body))
		}
		for i, method := range []string{"PUT", "PATCH"} { // each body as a create and as a PATCH, at once
			path := clusterPath("rg", fmt.Sprintf("hostile-%d", i))
			if method == "PATCH" {
				path = clusterPath("rg", "patched")
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, resp, err := send(method, path+"?api-version="+testVersion, body)
				if err != nil {
					t.Errorf("%s %s: %v", method, name, err)
					return
				}
				if code != http.StatusBadRequest || !strings.Contains(resp, "InvalidRequestContent") {
					t.Errorf("%s %s: status %d, want 400 InvalidRequestContent: %.300s", method, name, code, resp)
				}
			}()
		}
	}
	go func() { wg.Wait(); close(hostileDone) }()

	// Ordinary callers, until the hostile bodies are all answered (and at least a few rounds).
	ordinary := 0
	for round := 0; ; round++ {
		code, resp, err := send("GET", "/subscriptions/"+testSub+"?api-version=2.0", nil)
		if err != nil || code != http.StatusOK {
			t.Fatalf("ordinary GET of the subscription: %d %v %.300s", code, err, resp)
		}
		code, resp, err = send("PUT", clusterPath("rg", fmt.Sprintf("ordinary-%d", round))+"?api-version="+testVersion, mustJSON(minimalBody()))
		if err != nil || (code != http.StatusCreated && code != http.StatusOK) {
			t.Fatalf("ordinary PUT of a cluster: %d %v %.300s", code, err, resp)
		}
		ordinary++
		select {
		case <-hostileDone:
			if round >= 2 {
				t.Logf("%d ordinary rounds answered while %d hostile bodies were refused", ordinary, 2*len(bodies))
				return
			}
		case <-ctx.Done():
			t.Fatal("the hostile bodies were not all answered before the deadline")
		default:
		}
	}
}
