package chaos

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/test/chaos/invariant"
	"github.com/openhcp/openhcp/test/internal/armclient"
)

const (
	clusterAPIVersion  = "2024-06-10-preview"
	nodePoolAPIVersion = "2025-12-23-preview"
	// retryFor is how long a PUT or DELETE is retried on 429, 5xx or no answer, as the Azure
	// SDK's retry policy would (honouring Retry-After).
	retryFor = 90 * time.Second
)

// answer is one response of the frontend (Status 0: none, Err says why).
type answer = armclient.Response

// armClient is ARM's side of the frontend: mutual TLS with ARM's certificate, and a record of
// every answer that matters to the invariants.
type armClient struct {
	base string
	hc   *http.Client

	mu sync.Mutex
	// badReads are GETs that answered 5xx or nothing.
	badReads []invariant.Read
	// writes are every answer to a PUT or DELETE attempt, retried ones included.
	writes []answer
}

func newARMClient() (*armClient, error) {
	hc, err := region.Info.Frontend.HTTPClient(30 * time.Second)
	if err != nil {
		return nil, fmt.Errorf("ARM client: %w", err)
	}
	return &armClient{base: region.Info.Frontend.URL, hc: hc}, nil
}

// do sends one request, as ARM would (request and correlation IDs).
func (c *armClient) do(ctx context.Context, method, pathOrURL string, body any) answer {
	u := pathOrURL
	if !strings.HasPrefix(u, "https://") {
		u = c.base + pathOrURL
	}
	return armclient.Do(ctx, c.hc, method, u, body)
}

// get reads, recording a 5xx or a missing answer against the invariants.
func (c *armClient) get(ctx context.Context, pathOrURL string) answer {
	a := c.do(ctx, http.MethodGet, pathOrURL, nil)
	if (a.Status == 0 || a.Status >= 500) && ctx.Err() == nil {
		c.mu.Lock()
		c.badReads = append(c.badReads, invariant.Read{Path: pathOrURL, Status: a.Status, At: a.At})
		c.mu.Unlock()
	}
	return a
}

// write sends a PUT or DELETE and retries it on 429, 5xx or no answer for up to retryFor,
// waiting Retry-After when the answer gives one (else 1 s, doubling to 8 s). It returns the
// last answer and whether an attempt before it may have taken effect unseen.
func (c *armClient) write(ctx context.Context, method, path string, body any) (answer, bool) {
	u := path
	if !strings.HasPrefix(u, "https://") {
		u = c.base + path
	}
	p := armclient.Retry{For: retryFor, First: time.Second, Max: 8 * time.Second, Seen: func(a answer) {
		c.mu.Lock()
		c.writes = append(c.writes, a)
		c.mu.Unlock()
	}}
	return p.Do(ctx, c.hc, method, u, body)
}

// waitOperation follows an Azure-AsyncOperation URL until it is terminal or timeout passes;
// reads that fail are retried (and recorded).
func (c *armClient) waitOperation(ctx context.Context, asyncURL string, timeout time.Duration) (final, errMsg string) {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		a := c.get(ctx, asyncURL)
		if a.Status == http.StatusOK {
			switch s, _ := a.Body["status"].(string); s {
			case "Succeeded", "Failed", "Canceled":
				return s, fmt.Sprint(a.Body["error"])
			default:
				last = s
			}
		} else {
			last = fmt.Sprintf("GET answered %d %v", a.Status, a.Err)
		}
		sleep(ctx, time.Second)
	}
	return "", fmt.Sprintf("not terminal after %s; last %s", timeout, last)
}

// waitProvisioned follows a resource's provisioningState (when a retried write lost the
// operation's URL) until it is terminal, or until the resource is gone when gone is true.
func (c *armClient) waitProvisioned(ctx context.Context, path string, gone bool, timeout time.Duration) (final, errMsg string) {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		a := c.get(ctx, path)
		switch {
		case a.Status == http.StatusNotFound && gone:
			return "Succeeded", ""
		case a.Status == http.StatusOK && !gone:
			props, _ := a.Body["properties"].(map[string]any)
			switch s, _ := props["provisioningState"].(string); s {
			case "Succeeded", "Failed", "Canceled":
				return s, ""
			default:
				last = s
			}
		default:
			last = fmt.Sprintf("GET answered %d %v", a.Status, a.Err)
		}
		sleep(ctx, time.Second)
	}
	return "", fmt.Sprintf("not terminal after %s; last %s", timeout, last)
}

func (c *armClient) registerSubscription(ctx context.Context, sub string) error {
	a, _ := c.write(ctx, http.MethodPut, "/subscriptions/"+sub+"?api-version=2.0", map[string]any{
		"state":            "Registered",
		"registrationDate": time.Now().UTC().Format(time.RFC3339),
		"properties":       map[string]any{"tenantId": uuid.NewString()},
	})
	if a.Status != http.StatusOK && a.Status != http.StatusCreated {
		return fmt.Errorf("register subscription %s: %d %v %s", sub, a.Status, a.Err, a.Raw)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func clusterPath(sub, rg, name string) string { return armclient.ClusterPath(sub, rg, name) }

// clusterBody is a valid create body (armclient.ClusterBody) in the region's location.
func clusterBody(sub, rg string) map[string]any {
	return armclient.ClusterBody(region.Info.Location, sub, rg, nil)
}

func nodePoolBody(replicas int) map[string]any {
	return map[string]any{
		"location": region.Info.Location,
		"properties": map[string]any{
			"version":  map[string]any{"id": "4.19", "channelGroup": "stable"},
			"replicas": replicas,
			"platform": map[string]any{"vmSize": "Standard_D8s_v3"},
		},
	}
}
