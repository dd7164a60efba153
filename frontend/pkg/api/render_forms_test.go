package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// TestRenderedClusterForms: the forms every api-version renders alike (api.Cluster.RenderProperties)
// and those that are a version's own, for a cluster whose read-only properties are empty and
// whose image digest mirror has no mirrors.
func TestRenderedClusterForms(t *testing.T) {
	c := &api.Cluster{}
	c.Properties.ImageDigestMirrors = []api.ImageDigestMirror{{Source: "quay.io/a"}}
	c.Properties.Etcd.DataEncryption.KeyManagementMode = api.KeyManagementPlatform
	for _, tc := range []struct {
		version     string
		has, hasNot []string
	}{
		{"2024-06-10-preview",
			[]string{`"version":{}`, `"dns":{}`, `"api":{"url":""}`, `"issuerUrl":""`, `"nodeDrainTimeoutMinutes":0`,
				`"operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{},"dataPlaneOperators":{}}}`},
			[]string{`"console"`, `"provisioningState"`, `"imageDigestMirrors"`, `"vnetIntegrationSubnetId"`}},
		{"2025-12-23-preview",
			[]string{`"version":{"id":""}`, `"dns":{}`, `"url":""`, `"issuerUrl":""`, `"nodeDrainTimeoutMinutes":0`, `"vnetIntegrationSubnetId":""`,
				`"imageDigestMirrors":[{"source":"quay.io/a","mirrors":[]}]`, `"controlPlaneOperators":{},"dataPlaneOperators":{}`},
			[]string{`"console"`, `"provisioningState"`}},
		{"2026-06-30-preview",
			[]string{`"version":{"id":""}`, `"dns":{}`, `"url":""`, `"issuerUrl":""`, `"nodeDrainTimeoutMinutes":0`, `"vnetIntegrationSubnetId":""`,
				`"imageDigestMirrors":[{"source":"quay.io/a","mirrors":[]}]`, `"controlPlaneOperators":{},"dataPlaneOperators":{}`},
			[]string{`"console"`, `"provisioningState"`, `"status"`}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			v, ok := api.Lookup(tc.version)
			if !ok {
				t.Fatalf("no api-version %s", tc.version)
			}
			b, err := json.Marshal(v.RenderCluster(c))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.has {
				if !strings.Contains(string(b), s) {
					t.Errorf("rendered without %s: %s", s, b)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(string(b), s) {
					t.Errorf("rendered with %s: %s", s, b)
				}
			}
		})
	}
}
