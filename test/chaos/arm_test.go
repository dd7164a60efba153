package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/test/chaos/invariant"
)

const (
	clusterAPIVersion  = "2024-06-10-preview"
	nodePoolAPIVersion = "2025-12-23-preview"
	// retryFor is how long a PUT or DELETE is retried on 429, 5xx or no answer, as the Azure
	// SDK's retry policy would (honouring Retry-After).
	retryFor = 90 * time.Second
)

// answer is one response of the frontend (Status 0: none, Err says why).
type answer struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
	Err    error
	At     time.Time
}

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
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return answer{Err: err, At: time.Now()}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-ms-client-request-id", uuid.NewString())
	req.Header.Set("x-ms-correlation-request-id", uuid.NewString())
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{Err: err, At: time.Now()}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	a := answer{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw), Err: err, At: time.Now()}
	if len(bytes.TrimSpace(raw)) > 0 {
		_ = json.Unmarshal(raw, &a.Body)
	}
	return a
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
	deadline := time.Now().Add(retryFor)
	wait, ambiguous := time.Second, false
	for {
		a := c.do(ctx, method, path, body)
		c.mu.Lock()
		c.writes = append(c.writes, a)
		c.mu.Unlock()
		retry := a.Status == 0 || a.Status == http.StatusTooManyRequests || a.Status >= 500
		if !retry || time.Now().After(deadline) || ctx.Err() != nil {
			return a, ambiguous
		}
		// A request that got no answer, or a 5xx, may still have been carried out.
		ambiguous = ambiguous || a.Status == 0 || a.Status >= 500
		d := wait
		if s, err := strconv.Atoi(a.Header.Get("Retry-After")); err == nil && s > 0 {
			d = time.Duration(s) * time.Second
		} else {
			wait = min(2*wait, 8*time.Second)
		}
		select {
		case <-ctx.Done():
			return a, ambiguous
		case <-time.After(d):
		}
	}
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

func clusterPath(sub, rg, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/%s", sub, rg, name)
}

// clusterBody is a valid create body (the e2e tests' clusterBody).
func clusterBody(sub, rg string) map[string]any {
	net := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network"
	mi := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
	return map[string]any{
		"location": region.Info.Location,
		"properties": map[string]any{
			"version": map[string]any{"id": "4.19", "channelGroup": "stable"},
			"network": map[string]any{
				"networkType": "OVNKubernetes", "podCidr": "10.128.0.0/14", "serviceCidr": "172.30.0.0/16",
				"machineCidr": "10.0.0.0/16", "hostPrefix": 23,
			},
			"api": map[string]any{"visibility": "Public"},
			"platform": map[string]any{
				"managedResourceGroup":   "managed-" + rg,
				"subnetId":               net + "/virtualNetworks/vnet/subnets/workers",
				"networkSecurityGroupId": net + "/networkSecurityGroups/nsg",
				"outboundType":           "LoadBalancer",
				"operatorsAuthentication": map[string]any{"userAssignedIdentities": map[string]any{
					"controlPlaneOperators":  map[string]string{"cluster-api-azure": mi + "capz"},
					"dataPlaneOperators":     map[string]string{"disk-csi-driver": mi + "disk"},
					"serviceManagedIdentity": mi + "service",
				}},
			},
		},
		"identity": map[string]any{
			"type":                   "UserAssigned",
			"userAssignedIdentities": map[string]any{mi + "service": map[string]any{}, mi + "capz": map[string]any{}, mi + "disk": map[string]any{}},
		},
	}
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
