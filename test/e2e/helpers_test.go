package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/internal/armspec"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/test/internal/armclient"
)

const apiVersion = "2024-06-10-preview"

var (
	hostedClusterGVR       = schema.GroupVersionResource{Group: "hypershift.openshift.io", Version: "v1beta1", Resource: "hostedclusters"}
	appliedManifestWorkGVR = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "appliedmanifestworks"}
)

// httpClient presents ARM's client certificate and trusts the region CA, as ARM does: the
// frontend admits nothing else. runMain makes it once the region is up (it is also fine for
// the plaintext loopback metrics endpoints).
var httpClient *http.Client

// maestroRESTClient calls Maestro's REST API as Cluster Service: the gate in front of it admits
// only Cluster Service (read-write) and the admin API (read-only), and refuses ARM's
// certificate that httpClient presents.
func maestroRESTClient(tb testing.TB) *http.Client {
	tb.Helper()
	cfg, err := region.Info.Maestro.ClientTLS.Files().Client(strings.TrimPrefix(region.Info.Maestro.REST, "https://"))
	if err != nil {
		tb.Fatal(err)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// armResponse is a frontend answer with its body read.
type armResponse struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// arm sends an ARM-style request to the frontend, as ARM would: with request and correlation
// IDs, and the caller's systemData.
func arm(t *testing.T, method, path string, body any) armResponse {
	t.Helper()
	u := region.Info.Frontend.URL + path
	if !strings.Contains(path, "api-version=") {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		u += sep + "api-version=" + apiVersion
	}
	return armURL(t, method, u, body)
}

func armURL(t *testing.T, method, u string, body any) armResponse {
	t.Helper()
	req, err := armclient.NewRequest(context.Background(), method, u, body)
	if err != nil {
		t.Fatalf("build request: %v", err)
	}
	return doARM(t, req)
}

// doARM sends a request to the frontend and reads its answer, which must carry an
// x-ms-request-id and, on an ARM route, match the schema the specification gives it
// (armspec.ValidateExchange): a missing required property or an undeclared one fails the test.
func doARM(t *testing.T, req *http.Request) armResponse {
	t.Helper()
	method, u := req.Method, req.URL.String()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := armResponse{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			t.Fatalf("%s %s: %d with a body that is not a JSON object: %q", method, u, resp.StatusCode, raw)
		}
	}
	if resp.Header.Get("x-ms-request-id") == "" {
		t.Errorf("%s %s: response has no x-ms-request-id", method, u)
	}
	validateARM(t, req, resp, raw)
	return out
}

// validateARM fails the test when an answer of the frontend does not match the schema the
// specification gives its route (armspec.ValidateExchange).
func validateARM(t *testing.T, req *http.Request, resp *http.Response, raw []byte) {
	t.Helper()
	_, err := armspec.ValidateExchange(req.Method, req.URL, resp.StatusCode, resp.Header, raw)
	var vs armspec.Violations
	switch {
	case errors.As(err, &vs):
		t.Errorf("%s %s answered %d, which does not match the spec:\n%v\nbody: %.800s", req.Method, req.URL, resp.StatusCode, vs, raw)
	case err != nil:
		t.Errorf("validate %s %s: %v", req.Method, req.URL, err)
	}
}

// checkingClient is httpClient for clients that make their own requests (the Azure SDK's
// pipeline, its poller included): every answer is validated like doARM's.
func checkingClient(t *testing.T) *http.Client {
	return &http.Client{Timeout: httpClient.Timeout, Transport: armspec.CheckingTransport{
		Next: httpClient.Transport,
		Report: func(req *http.Request, status int, body []byte, err error) {
			t.Errorf("%s %s answered %d, which does not match the spec:\n%v\nbody: %.800s", req.Method, req.URL, status, err, body)
		},
	}}
}

func registerSubscription(t *testing.T, sub string) {
	t.Helper()
	r := arm(t, http.MethodPut, "/subscriptions/"+sub+"?api-version=2.0", map[string]any{
		"state":            "Registered",
		"registrationDate": time.Now().UTC().Format(time.RFC3339),
		"properties":       map[string]any{"tenantId": uuid.NewString()},
	})
	if r.Status != http.StatusOK && r.Status != http.StatusCreated {
		t.Fatalf("register subscription: %d %s", r.Status, r.Raw)
	}
}

func clusterPath(sub, rg, name string) string { return armclient.ClusterPath(sub, rg, name) }

// clusterBody is a valid create body for the api-version under test (armclient.ClusterBody).
func clusterBody(sub, rg string) map[string]any {
	return armclient.ClusterBody(region.Info.Location, sub, rg, map[string]string{"purpose": "e2e"})
}

// waitOperation follows an Azure-AsyncOperation URL until the operation is terminal, as an ARM
// client would, and returns the final status body.
func waitOperation(t *testing.T, asyncURL string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last map[string]any
	for time.Now().Before(deadline) {
		r := armURL(t, http.MethodGet, asyncURL, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("operation status: %d %s", r.Status, r.Raw)
		}
		last = r.Body
		switch r.Body["status"] {
		case "Succeeded", "Failed", "Canceled":
			return r.Body
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("operation %s not terminal after %s; last status %v", asyncURL, timeout, last)
	return nil
}

func clusterService(t *testing.T) csv1.ClustersClient {
	t.Helper()
	conn, err := region.DialClusterServiceAs(pki.SRE)
	if err != nil {
		t.Fatalf("dial cluster service: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return csv1.NewClustersClient(conn)
}

// csClusters lists what Cluster Service holds for one ARM resource ID.
func csClusters(t *testing.T, resourceID string) []*csv1.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := clusterService(t).ListClusters(ctx, &csv1.ListClustersRequest{ArmResourceIdPrefix: resourceID, PageSize: 100})
	if err != nil {
		t.Fatalf("list clusters in cluster service: %v", err)
	}
	var out []*csv1.Cluster
	for _, c := range resp.GetClusters() {
		if strings.EqualFold(c.GetArmResourceId(), resourceID) {
			out = append(out, c)
		}
	}
	return out
}

func kube(t *testing.T, mc localregion.ManagementClusterInfo) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", mc.Kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig of %s: %v", mc.Name, err)
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client for %s: %v", mc.Name, err)
	}
	return c
}

// hostedClusters lists the HostedClusters on a management cluster in namespaces of one CS
// cluster ID (all of them when csID is empty).
func hostedClusters(t *testing.T, mc localregion.ManagementClusterInfo, csID string) []unstructured.Unstructured {
	t.Helper()
	list, err := kube(t, mc).Resource(hostedClusterGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list hostedclusters on %s: %v", mc.Name, err)
	}
	var out []unstructured.Unstructured
	for _, hc := range list.Items {
		if csID == "" || strings.HasSuffix(hc.GetNamespace(), csID) {
			out = append(out, hc)
		}
	}
	return out
}

func managementCluster(t *testing.T, shard string) localregion.ManagementClusterInfo {
	t.Helper()
	for _, mc := range region.Info.ManagementClusters {
		if mc.ProvisionShard == shard {
			return mc
		}
	}
	t.Fatalf("cluster service placed the cluster on %q, which is not a management cluster of this region", shard)
	return localregion.ManagementClusterInfo{}
}

func condition(obj unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// eventually retries f until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: still failing after %s: %v", what, timeout, err)
}

func appliedWorksFor(t *testing.T, mc localregion.ManagementClusterInfo, csID string) ([]string, error) {
	list, err := kube(t, mc).Resource(appliedManifestWorkGVR).List(context.Background(), metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, w := range list.Items {
		b, _ := json.Marshal(w.Object)
		if strings.Contains(string(b), csID) {
			names = append(names, w.GetName())
		}
	}
	return names, nil
}

// createCluster PUTs a cluster (url: its path, with or without ?api-version), waits until the
// create Succeeded and, when the test ends, deletes it again and checks the delete Succeeded
// too. It returns what Cluster Service holds for it and the management cluster it was placed on.
func createCluster(t *testing.T, url string, body any) (*csv1.Cluster, localregion.ManagementClusterInfo) {
	t.Helper()
	put := arm(t, http.MethodPut, url, body)
	if put.Status != http.StatusCreated {
		t.Fatalf("PUT cluster: got %d, want 201: %s", put.Status, put.Raw)
	}
	if final := waitOperation(t, put.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("create operation ended %v: %v", final["status"], final["error"])
	}
	t.Cleanup(func() {
		del := arm(t, http.MethodDelete, url, nil)
		if del.Status != http.StatusAccepted {
			t.Errorf("DELETE cluster: got %d: %s", del.Status, del.Raw)
			return
		}
		if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
			t.Errorf("delete operation ended %v: %v", final["status"], final["error"])
		}
	})
	path, _, _ := strings.Cut(url, "?")
	cs := csClusters(t, path)
	if len(cs) != 1 {
		t.Fatalf("cluster service holds %d clusters for %s, want 1", len(cs), path)
	}
	return cs[0], managementCluster(t, cs[0].GetShard())
}
