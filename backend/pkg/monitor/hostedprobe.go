package monitor

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// HostedProbe checks that a hosted cluster's kube-apiserver answers at its status.api_url; nil
// error means it does.
type HostedProbe func(ctx context.Context, apiURL string) error

// NewHostedAPIServerProbe is a liveness check of a hosted kube-apiserver, not a readiness one:
// the Monitor holds no credential of a hosted cluster (the customer's and the break-glass
// signers are not a monitor's to hold), so it GETs /readyz without one and counts a TLS
// handshake followed by a kube-apiserver's answer to an anonymous caller (401 where anonymous
// requests are refused, as in hypershift-sim; 403 or 200 where they are allowed) as alive. A
// refused or timed-out connection, a failed handshake, a redirect (never followed) or a 5xx is
// a failure.
//
// The server certificate is not verified: the cluster's root CA lives on its management
// cluster, which the Monitor cannot read. Nothing secret is sent, so a server in the middle
// could at worst fake liveness, never learn anything.
func NewHostedAPIServerProbe() HostedProbe {
	client := &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // liveness only, no credential sent (above)
			DisableKeepAlives: true,
			Proxy:             nil,
		},
		// A redirect is not a kube-apiserver's answer, and following one would let a hosted
		// endpoint steer the Monitor to any address it names: the 3xx itself is the result.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return func(ctx context.Context, apiURL string) error {
		u, err := url.Parse(apiURL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("api_url %q is not https://host:port", apiURL)
		}
		u.Path = "/readyz"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return fmt.Errorf("probe %s: %w", apiURL, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w", u, err)
		}
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK, http.StatusUnauthorized, http.StatusForbidden:
			return nil
		}
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
}

// hostedAPIServerExpected says whether a kube-apiserver should answer at a cluster's api_url
// now: the address is set, no HyperShift condition says the endpoint is not served
// (hypershift-sim's HostedAPIServer=False CapReached, for a cluster past its cap whose status is
// simulated), and the cluster has completed an install (current_version, from a Completed
// version history entry) and is READY, UPDATING, or INSTALLING again. An installed cluster
// whose control plane stops is reported INSTALLING by Cluster Service (Available is no longer
// True), and that is exactly when the probe matters; a first install, an uninstall or an ERROR
// is not probed.
func hostedAPIServerExpected(st *csv1.ClusterStatus) bool {
	if st.GetApiUrl() == "" || st.GetCurrentVersion() == "" && st.GetState() != csv1.ClusterState_CLUSTER_STATE_READY {
		return false
	}
	switch st.GetState() {
	case csv1.ClusterState_CLUSTER_STATE_READY, csv1.ClusterState_CLUSTER_STATE_UPDATING, csv1.ClusterState_CLUSTER_STATE_INSTALLING:
	default:
		return false
	}
	for _, c := range st.GetConditions() {
		if c.GetType() == "HostedAPIServer" && c.GetStatus() == "False" && c.GetReason() == "CapReached" {
			return false
		}
	}
	return true
}
