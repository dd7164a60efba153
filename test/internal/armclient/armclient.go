// Package armclient is ARM's side of the frontend for the suites that drive a running region
// (test/e2e, test/chaos, test/upgrade, test/scale): one request as ARM sends it, a write retried
// as the Azure SDK's retry policy retries it (429, 5xx or no answer, honouring Retry-After), and
// the valid cluster create body they all start from. It uses the standard library only, so it
// adds nothing to test/e2e's build.
package armclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Response is one answer of the frontend. Status 0 means none came: Err says why, and so does
// Raw. Err is also set when the body could not be read or is not a JSON object.
type Response struct {
	Status int
	Header http.Header
	// Body is the JSON object answered, if any.
	Body map[string]any
	Raw  string
	Err  error
	At   time.Time
}

// Retryable reports whether the Azure SDK's retry policy would send the request again: no
// answer, 429 or 5xx.
func (r Response) Retryable() bool {
	return r.Status == 0 || r.Status == http.StatusTooManyRequests || r.Status >= 500
}

// Unseen reports whether the request may have taken effect although the answer does not say
// so: no answer, or a 5xx.
func (r Response) Unseen() bool { return r.Status == 0 || r.Status >= 500 }

// Do sends one request to url with hc as ARM would (NewRequest) and reads the answer.
func Do(ctx context.Context, hc *http.Client, method, url string, body any) Response {
	req, err := NewRequest(ctx, method, url, body)
	if err != nil {
		return noAnswer(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return noAnswer(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	r := Response{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw), At: time.Now()}
	if err != nil {
		r.Err = fmt.Errorf("read the answer: %w", err)
	} else if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			r.Err = fmt.Errorf("%d with a body that is not a JSON object: %.300q", resp.StatusCode, raw)
		}
	}
	return r
}

// NewRequest is a request as ARM sends it: body (when not nil) as JSON, and new client request
// and correlation IDs.
func NewRequest(ctx context.Context, method, url string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode the body: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-ms-client-request-id", uuid.NewString())
	req.Header.Set("x-ms-correlation-request-id", uuid.NewString())
	return req, nil
}

func noAnswer(err error) Response {
	return Response{Header: http.Header{}, Raw: err.Error(), Err: err, At: time.Now()}
}

// Retry is the Azure SDK's retry policy as the suites use it.
type Retry struct {
	// For is how long a request is sent again; the answer after it is returned, whatever it is.
	For time.Duration
	// First is the wait after the first retryable answer without Retry-After; each such wait
	// doubles, up to Max.
	First, Max time.Duration
	// Seen, when set, is called with every answer, the retried ones included.
	Seen func(Response)
}

// Do sends the request (Do) and sends it again while the answer is Retryable, for up to p.For,
// waiting the answer's Retry-After seconds when it gives them. It returns the last answer and
// whether an earlier attempt may have taken effect unseen (Response.Unseen), as a retried
// create may have.
func (p Retry) Do(ctx context.Context, hc *http.Client, method, url string, body any) (last Response, unseen bool) {
	deadline := time.Now().Add(p.For)
	wait := p.First
	for {
		r := Do(ctx, hc, method, url, body)
		if p.Seen != nil {
			p.Seen(r)
		}
		if !r.Retryable() || time.Now().After(deadline) || ctx.Err() != nil {
			return r, unseen
		}
		unseen = unseen || r.Unseen()
		d := wait
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil && s > 0 {
			d = time.Duration(s) * time.Second
		} else {
			wait = min(2*wait, p.Max)
		}
		select {
		case <-ctx.Done():
			return r, unseen
		case <-time.After(d):
		}
	}
}

// ClusterPath is the ARM resource path of a cluster.
func ClusterPath(sub, rg, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/%s", sub, rg, name)
}

// ClusterBody is a valid create body of a public 4.19 cluster in location, whose network and
// identities are in sub's resource group rg, with tags when tags is not nil.
func ClusterBody(location, sub, rg string, tags map[string]string) map[string]any {
	net := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network"
	mi := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
	body := map[string]any{
		"location": location,
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
			"userAssignedIdentities": map[string]any{mi + "service": map[string]any{}, mi + "capz": map[string]any{}},
		},
	}
	if tags != nil {
		body["tags"] = tags
	}
	return body
}
