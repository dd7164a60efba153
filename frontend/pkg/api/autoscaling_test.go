package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// validIdentity and validProperties make a cluster body every api-version accepts.
const (
	validIdentity   = `"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i":{}}}`
	validProperties = `"version":{"id":"4.19"},"platform":{"subnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/a",` +
		`"networkSecurityGroupId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/networkSecurityGroups/n",` +
		`"operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{},"dataPlaneOperators":{},` +
		`"serviceManagedIdentity":"/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i"}}}`
)

func i32(v int32) *int32 { return &v }

func showAutoscaling(a *csv1.ClusterAutoscaling) string {
	if a == nil {
		a = &csv1.ClusterAutoscaling{}
	}
	f := func(p *int32) string {
		if p == nil {
			return "absent"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("maxNodesTotal=%s maxPodGracePeriodSeconds=%s maxNodeProvisionTimeSeconds=%s podPriorityThreshold=%s",
		f(a.MaxNodesTotal), f(a.MaxPodGracePeriodSeconds), f(a.MaxNodeProvisionTimeSeconds), f(a.PodPriorityThreshold))
}

// storedAutoscaling is the autoscaling of a cluster read from a document whose
// properties.autoscaling is stored.
func storedAutoscaling(t *testing.T, stored string) *api.Cluster {
	t.Helper()
	var c api.Cluster
	if err := json.Unmarshal([]byte(`{"properties":{"autoscaling":`+stored+`}}`), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestClusterAutoscalingStoredForm: the stored model tells an explicit 0 from an absent value,
// and documents written before it could (every field present, 0 meaning "not given") still
// decode with 0 as absent.
func TestClusterAutoscalingStoredForm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored string
		want   *csv1.ClusterAutoscaling
	}{
		{name: "old_document_zeros_are_absent", stored: `{"maxNodesTotal":0,"maxPodGracePeriodSeconds":0,"maxNodeProvisionTimeSeconds":0,"podPriorityThreshold":0}`},
		{name: "old_document_keeps_its_non_zero_values", stored: `{"maxNodesTotal":5,"maxPodGracePeriodSeconds":0,"maxNodeProvisionTimeSeconds":0,"podPriorityThreshold":-3}`,
			want: &csv1.ClusterAutoscaling{MaxNodesTotal: i32(5), PodPriorityThreshold: i32(-3)}},
		{name: "new_document_explicit_zero_is_a_value", stored: `{"zeroIsValue":true,"podPriorityThreshold":0,"maxNodesTotal":0}`,
			want: &csv1.ClusterAutoscaling{MaxNodesTotal: i32(0), PodPriorityThreshold: i32(0)}},
		{name: "new_document_absent_stays_absent", stored: `{"zeroIsValue":true,"maxPodGracePeriodSeconds":30}`,
			want: &csv1.ClusterAutoscaling{MaxPodGracePeriodSeconds: i32(30)}},
		{name: "empty_object", stored: `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := storedAutoscaling(t, tc.stored)
			got := c.Spec.GetAutoscaling()
			if showAutoscaling(got) != showAutoscaling(tc.want) {
				t.Fatalf("decoded %s\nwant    %s", showAutoscaling(got), showAutoscaling(tc.want))
			}
			// What is written back decodes to the same values.
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var again api.Cluster
			if err := json.Unmarshal(b, &again); err != nil || showAutoscaling(again.Spec.GetAutoscaling()) != showAutoscaling(got) {
				t.Fatalf("round trip through %s: %s, %v", b, showAutoscaling(again.Spec.GetAutoscaling()), err)
			}
		})
	}
	t.Run("cluster_document_without_autoscaling", func(t *testing.T) {
		var c api.Cluster
		if err := json.Unmarshal([]byte(`{"properties":{"nodeDrainTimeoutMinutes":3}}`), &c); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(c.Spec.GetAutoscaling(), &csv1.ClusterAutoscaling{}) {
			t.Fatalf("autoscaling %s", showAutoscaling(c.Spec.GetAutoscaling()))
		}
	})
}

// TestClusterAutoscalingThroughEveryVersion: every api-version decodes properties.autoscaling
// with an explicit 0 kept apart from an absent value, and renders back what was given (the
// spec declares no default for these fields, so none is filled in).
func TestClusterAutoscalingThroughEveryVersion(t *testing.T) {
	for _, tc := range []struct {
		name        string
		autoscaling string // the body's properties.autoscaling; "" leaves it out
		want        *csv1.ClusterAutoscaling
		rendered    string
	}{
		{name: "absent_object", rendered: `{}`},
		{name: "empty_object", autoscaling: `{}`, rendered: `{}`},
		{name: "explicit_zero_priority_threshold", autoscaling: `{"podPriorityThreshold":0}`,
			want: &csv1.ClusterAutoscaling{PodPriorityThreshold: i32(0)}, rendered: `{"podPriorityThreshold":0}`},
		{name: "all_zero", autoscaling: `{"maxNodesTotal":0,"maxPodGracePeriodSeconds":0,"maxNodeProvisionTimeSeconds":0,"podPriorityThreshold":0}`,
			want:     &csv1.ClusterAutoscaling{MaxNodesTotal: i32(0), MaxPodGracePeriodSeconds: i32(0), MaxNodeProvisionTimeSeconds: i32(0), PodPriorityThreshold: i32(0)},
			rendered: `{"maxNodesTotal":0,"maxPodGracePeriodSeconds":0,"maxNodeProvisionTimeSeconds":0,"podPriorityThreshold":0}`},
		{name: "some_set", autoscaling: `{"maxNodesTotal":12,"podPriorityThreshold":-20}`,
			want: &csv1.ClusterAutoscaling{MaxNodesTotal: i32(12), PodPriorityThreshold: i32(-20)}, rendered: `{"maxNodesTotal":12,"podPriorityThreshold":-20}`},
	} {
		for _, name := range api.Versions() {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				v, _ := api.Lookup(name)
				props := validProperties
				if name >= "2025-12-23-preview" { // required from then on, unknown before
					props = strings.Replace(props, `"platform":{`, `"platform":{"vnetIntegrationSubnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/b",`, 1)
				}
				if tc.autoscaling != "" {
					props += `,"autoscaling":` + tc.autoscaling
				}
				c, err := v.DecodeCluster([]byte(`{"location":"eastus",` + validIdentity + `,"properties":{` + props + `}}`))
				if err != nil {
					t.Fatal(err)
				}
				if showAutoscaling(c.Spec.GetAutoscaling()) != showAutoscaling(tc.want) {
					t.Fatalf("decoded %s\nwant    %s", showAutoscaling(c.Spec.GetAutoscaling()), showAutoscaling(tc.want))
				}
				b, _ := json.Marshal(v.RenderCluster(c))
				var out struct {
					Properties struct {
						Autoscaling json.RawMessage `json:"autoscaling"`
					} `json:"properties"`
				}
				json.Unmarshal(b, &out)
				if string(out.Properties.Autoscaling) != tc.rendered {
					t.Fatalf("rendered %s, want %s", out.Properties.Autoscaling, tc.rendered)
				}
			})
		}
	}
}
