package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func externalAuthBody(issuer string) map[string]any {
	return map[string]any{"properties": map[string]any{
		"issuer": map[string]any{"url": issuer, "audiences": []string{"console-app", "cli-app"}},
		"clients": []any{
			map[string]any{"component": map[string]any{"name": "console", "authClientNamespace": "openshift-console"}, "clientId": "console-app", "type": "Confidential"},
			map[string]any{"component": map[string]any{"name": "cli", "authClientNamespace": "openshift-console"}, "clientId": "cli-app", "type": "Public"},
		},
		"claim": map[string]any{
			"mappings":        map[string]any{"username": map[string]any{"claim": "email", "prefixPolicy": "Prefix", "prefix": "entra:"}, "groups": map[string]any{"claim": "groups"}},
			"validationRules": []any{map[string]any{"type": "RequiredClaim", "requiredClaim": map[string]any{"claim": "tid", "requiredValue": "tenant-1"}}},
		},
	}}
}

// TestExternalAuthThroughTheFrontend adds external auth to a cluster through ARM and follows it
// to the management cluster and back: the operation Succeeds only once the HostedCluster carries
// the OIDC provider and HyperShift (the sim) reports its clients in use; a second external auth
// of the cluster is refused with 409; a PATCH rolls out a new claim; the delete takes the
// provider out of the HostedCluster.
func TestExternalAuthThroughTheFrontend(t *testing.T) {
	sub, rg := uuid.NewString(), "rg-externalauth"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "withauth")
	authPath := path + "/externalAuths/entra"

	if r := arm(t, http.MethodPut, authPath, externalAuthBody("https://login.example.com/t/v2.0")); r.Status != http.StatusNotFound {
		t.Fatalf("PUT external auth without its cluster: got %d, want 404: %s", r.Status, r.Raw)
	}
	cl, mc := createCluster(t, path, clusterBody(sub, rg))
	provider := func() (map[string]any, error) {
		hcs := hostedClusters(t, mc, cl.GetId())
		if len(hcs) != 1 {
			return nil, fmt.Errorf("%d HostedClusters", len(hcs))
		}
		ps, _, _ := unstructured.NestedSlice(hcs[0].Object, "spec", "configuration", "authentication", "oidcProviders")
		if len(ps) == 0 {
			return nil, nil
		}
		return ps[0].(map[string]any), nil
	}

	create := arm(t, http.MethodPut, authPath, externalAuthBody("https://login.example.com/t/v2.0"))
	if create.Status != http.StatusCreated || create.Header.Get("Azure-AsyncOperation") == "" {
		t.Fatalf("PUT external auth: got %d, want 201 with Azure-AsyncOperation: %s", create.Status, create.Raw)
	}
	if final := waitOperation(t, create.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("external auth create ended %v: %v", final["status"], final["error"])
	}
	p, err := provider()
	if err != nil || p == nil {
		t.Fatalf("HostedCluster has no OIDC provider after Succeeded: %v", err)
	}
	hc := hostedClusters(t, mc, cl.GetId())[0]
	typ, _, _ := unstructured.NestedString(hc.Object, "spec", "configuration", "authentication", "type")
	issuer, _, _ := unstructured.NestedString(p, "issuer", "issuerURL")
	claim, _, _ := unstructured.NestedString(p, "claimMappings", "username", "claim")
	clients, _, _ := unstructured.NestedSlice(p, "oidcClients")
	inUse, _, _ := unstructured.NestedSlice(hc.Object, "status", "configuration", "authentication", "oidcClients")
	if typ != "OIDC" || p["name"] != "entra" || issuer != "https://login.example.com/t/v2.0" || claim != "email" || len(clients) != 2 || len(inUse) != 2 {
		t.Fatalf("HostedCluster authentication: type %q, provider %v, clients in use %d", typ, p, len(inUse))
	}
	get := arm(t, http.MethodGet, authPath, nil)
	if get.Status != http.StatusOK || get.Body["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
		t.Fatalf("GET external auth: %d %s", get.Status, get.Raw)
	}
	if cond, _ := get.Body["properties"].(map[string]any)["condition"].(map[string]any); cond["type"] != "Available" || cond["status"] != "True" {
		t.Fatalf("GET external auth condition = %v, want Available True", cond)
	}

	second := arm(t, http.MethodPut, path+"/externalAuths/other", externalAuthBody("https://idp.example.org"))
	if second.Status != http.StatusConflict {
		t.Fatalf("PUT a second external auth: got %d, want 409: %s", second.Status, second.Raw)
	}
	if r := arm(t, http.MethodGet, path+"/externalAuths/other", nil); r.Status != http.StatusNotFound {
		t.Fatalf("the refused external auth is stored: GET %d", r.Status)
	}
	if list := arm(t, http.MethodGet, path+"/externalAuths", nil); list.Status != http.StatusOK || len(list.Body["value"].([]any)) != 1 {
		t.Fatalf("list external auths: %d %s", list.Status, list.Raw)
	}

	patch := arm(t, http.MethodPatch, authPath, map[string]any{"properties": map[string]any{"claim": map[string]any{"mappings": map[string]any{"username": map[string]any{"claim": "preferred_username"}}}}})
	if patch.Status != http.StatusAccepted {
		t.Fatalf("PATCH external auth: got %d, want 202: %s", patch.Status, patch.Raw)
	}
	if final := waitOperation(t, patch.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("external auth update ended %v: %v", final["status"], final["error"])
	}
	if p, err := provider(); err != nil || p == nil {
		t.Fatalf("provider after PATCH: %v", err)
	} else if c, _, _ := unstructured.NestedString(p, "claimMappings", "username", "claim"); c != "preferred_username" {
		t.Fatalf("username claim on the HostedCluster after Succeeded = %q, want preferred_username", c)
	}

	del := arm(t, http.MethodDelete, authPath, nil)
	if del.Status != http.StatusAccepted {
		t.Fatalf("DELETE external auth: got %d, want 202: %s", del.Status, del.Raw)
	}
	if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("external auth delete ended %v: %v", final["status"], final["error"])
	}
	if p, err := provider(); err != nil || p != nil {
		t.Fatalf("HostedCluster still has an OIDC provider after the delete Succeeded: %v, %v", p, err)
	}
	if r := arm(t, http.MethodGet, authPath, nil); r.Status != http.StatusNotFound {
		t.Fatalf("GET after delete: %d, want 404", r.Status)
	}
	// With the first one gone, the cluster takes another.
	again := arm(t, http.MethodPut, path+"/externalAuths/other", externalAuthBody("https://idp.example.org"))
	if again.Status != http.StatusCreated {
		t.Fatalf("PUT another external auth after the delete: got %d, want 201: %s", again.Status, again.Raw)
	}
	if final := waitOperation(t, again.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("second external auth create ended %v: %v", final["status"], final["error"])
	}
}
