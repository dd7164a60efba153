package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// TestSharedProfileAnswers pins, for every api-version, the exact problems (target and message,
// in order) a cluster body gets for the bounds the specification puts on the profiles every
// version shares (package profiles): their checks are generated (fieldcheck's
// zz_generated_shared.go) and must answer as the hand-written ones they replaced did.
func TestSharedProfileAnswers(t *testing.T) {
	repeat := func(n int, f func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	mirror := func(src any, mirrors ...any) map[string]any {
		m := map[string]any{"mirrors": mirrors}
		if mirrors == nil {
			delete(m, "mirrors")
		}
		if src != nil {
			m["source"] = src
		}
		return m
	}
	type set struct {
		path  string
		value any
	}
	const idm = "properties.imageDigestMirrors"
	cases := []struct {
		name string
		sets []set
		// sinceMirrors: only versions with properties.imageDigestMirrors (2025-12-23-preview on).
		sinceMirrors bool
		want         []string // "target|message"
	}{
		{name: "base_domain_prefix_form", sets: []set{{"properties.dns.baseDomainPrefix", "Abc"}}, want: []string{
			"properties.dns.baseDomainPrefix|Invalid value 'Abc' for field 'properties.dns.baseDomainPrefix': at most 15 lowercase letters, digits and '-', starting with a letter."}},
		{name: "base_domain_prefix_16", sets: []set{{"properties.dns.baseDomainPrefix", long(16)}}, want: []string{
			"properties.dns.baseDomainPrefix|Invalid value '" + long(16) + "' for field 'properties.dns.baseDomainPrefix': at most 15 lowercase letters, digits and '-', starting with a letter."}},
		{name: "base_domain_prefix_15", sets: []set{{"properties.dns.baseDomainPrefix", long(15)}}},
		{name: "network_type", sets: []set{{"properties.network.networkType", "Calico"}}, want: []string{
			"properties.network.networkType|Invalid value 'Calico' for field 'properties.network.networkType' (must be one of: OVNKubernetes, Other)."}},
		{name: "api_visibility", sets: []set{{"properties.api.visibility", "Hidden"}}, want: []string{
			"properties.api.visibility|Invalid value 'Hidden' for field 'properties.api.visibility' (must be one of: Public, Private)."}},
		{name: "authorized_cidrs_500", sets: []set{{"properties.api.authorizedCidrs", repeat(500, func(int) any { return "10.0.0.0/8" })}}},
		{name: "authorized_cidrs_501_entries_unchecked", sets: []set{{"properties.api.authorizedCidrs", repeat(501, func(int) any { return "bad" })}}, want: []string{
			"properties.api.authorizedCidrs|At most 500 entries are allowed in 'properties.api.authorizedCidrs', not 501."}},
		{name: "authorized_cidrs_entry", sets: []set{{"properties.api.visibility", "Hidden"}, {"properties.api.authorizedCidrs", []any{"10.0.0.1", "bad"}}}, want: []string{
			"properties.api.visibility|Invalid value 'Hidden' for field 'properties.api.visibility' (must be one of: Public, Private).",
			"properties.api.authorizedCidrs[1]|Invalid value 'bad' for field 'properties.api.authorizedCidrs[1]': must be an IPv4 CIDR block."}},
		{name: "autoscaling", sets: []set{
			{"properties.autoscaling", map[string]any{"maxNodesTotal": -1, "maxPodGracePeriodSeconds": -2, "maxNodeProvisionTimeSeconds": -3, "podPriorityThreshold": -4}},
		}, want: []string{
			"properties.autoscaling.maxNodesTotal|Invalid value '-1' for field 'properties.autoscaling.maxNodesTotal' (must be between 0 and 2147483647).",
			"properties.autoscaling.maxPodGracePeriodSeconds|Invalid value '-2' for field 'properties.autoscaling.maxPodGracePeriodSeconds' (must be between 0 and 2147483647).",
			"properties.autoscaling.maxNodeProvisionTimeSeconds|Invalid value '-3' for field 'properties.autoscaling.maxNodeProvisionTimeSeconds' (must be between 0 and 2147483647)."}},
		{name: "image_registry_state", sets: []set{{"properties.clusterImageRegistry.state", "Off"}}, want: []string{
			"properties.clusterImageRegistry.state|Invalid value 'Off' for field 'properties.clusterImageRegistry.state' (must be one of: Enabled, Disabled)."}},
		{name: "mirrors_241_entries_unchecked", sinceMirrors: true, sets: []set{{idm, repeat(241, func(int) any { return mirror(nil) })}}, want: []string{
			idm + "|At most 240 entries are allowed in 'properties.imageDigestMirrors', not 241."}},
		{name: "mirrors_entries", sinceMirrors: true, sets: []set{{idm, []any{
			mirror("a", []any{}...),
			mirror("a", long(256), "m", long(256)),
			mirror(nil, "m"),
			mirror(long(256), repeat(256, func(i int) any { return fmt.Sprint(i) })...),
			mirror("", "m"),
			mirror("b"),
		}}}, want: []string{
			idm + "[0].mirrors|Field 'properties.imageDigestMirrors[0].mirrors' must have 1 to 255 entries, not 0.",
			idm + "[1].source|The source 'a' appears more than once in 'properties.imageDigestMirrors'.",
			idm + "[1].mirrors[0]|Each mirror must be at most 255 characters long.",
			idm + "[1].mirrors[2]|Each mirror must be at most 255 characters long.",
			idm + "[2].source|Missing required field 'properties.imageDigestMirrors[2].source'.",
			idm + "[3].source|Field 'properties.imageDigestMirrors[3].source' must be at most 255 characters long.",
			idm + "[3].mirrors|Field 'properties.imageDigestMirrors[3].mirrors' must have 1 to 255 entries, not 256.",
			idm + "[5].mirrors|Missing required field 'properties.imageDigestMirrors[5].mirrors'."}},
		{name: "every_profile_at_once", sinceMirrors: true, sets: []set{
			{"properties.clusterImageRegistry.state", "Off"},
			{"properties.autoscaling.maxNodesTotal", -1},
			{"properties.api.visibility", "Hidden"},
			{"properties.network.networkType", "Calico"},
			{"properties.dns.baseDomainPrefix", "-"},
			{idm, []any{mirror("a")}},
		}, want: []string{
			idm + "[0].mirrors|Missing required field 'properties.imageDigestMirrors[0].mirrors'.",
			"properties.dns.baseDomainPrefix|Invalid value '-' for field 'properties.dns.baseDomainPrefix': at most 15 lowercase letters, digits and '-', starting with a letter.",
			"properties.network.networkType|Invalid value 'Calico' for field 'properties.network.networkType' (must be one of: OVNKubernetes, Other).",
			"properties.api.visibility|Invalid value 'Hidden' for field 'properties.api.visibility' (must be one of: Public, Private).",
			"properties.autoscaling.maxNodesTotal|Invalid value '-1' for field 'properties.autoscaling.maxNodesTotal' (must be between 0 and 2147483647).",
			"properties.clusterImageRegistry.state|Invalid value 'Off' for field 'properties.clusterImageRegistry.state' (must be one of: Enabled, Disabled)."}},
	}
	for _, name := range api.Versions() {
		cv, _ := api.Lookup(name)
		for _, tc := range cases {
			if tc.sinceMirrors && name < "2025-12-23-preview" {
				continue
			}
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				body := []byte(clusterBodyFor(name))
				for _, s := range tc.sets {
					body = withValue(t, string(body), s.path, s.value)
				}
				_, err := cv.DecodeCluster(body)
				if got, want := problems(t, err), strings.Join(tc.want, "\n"); got != want {
					t.Errorf("problems:\n  %s\nwant:\n  %s", strings.ReplaceAll(got, "\n", "\n  "), strings.ReplaceAll(want, "\n", "\n  "))
				}
			})
		}
	}
}

// TestSharedNodePoolProfileAnswers is TestSharedProfileAnswers for a node pool's shared
// profiles: autoScaling and the taints (each entry a shared Taint).
func TestSharedNodePoolProfileAnswers(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	taint := func(key, value, effect any) map[string]any {
		m := map[string]any{}
		for k, v := range map[string]any{"key": key, "value": value, "effect": effect} {
			if v != nil {
				m[k] = v
			}
		}
		return m
	}
	type set struct {
		path  string
		value any
	}
	cases := []struct {
		name string
		sets []set
		want []string // "target|message"
	}{
		{name: "autoscaling", sets: []set{{"properties.autoScaling", map[string]any{"min": -1, "max": -2}}}, want: []string{
			"properties.autoScaling.min|Invalid value '-1' for field 'properties.autoScaling.min' (must be at least 0).",
			"properties.autoScaling.max|Invalid value '-2' for field 'properties.autoScaling.max' (must be at least 0)."}},
		{name: "autoscaling_0", sets: []set{{"properties.autoScaling", map[string]any{"min": 0, "max": 0}}}},
		{name: "taints", sets: []set{{"properties.taints", []any{
			taint("", nil, "NoSchedule"),
			taint(long(317), long(64), "Bad"),
			taint(nil, "v", nil),
			taint(long(316), long(63), "NoExecute"),
			taint("k", "v", "PreferNoSchedule"),
			taint("k", "v", "PreferNoSchedule"),
		}}}, want: []string{
			"properties.taints[0].key|Field 'properties.taints[0].key' must be 1 to 316 characters long.",
			"properties.taints[1].key|Field 'properties.taints[1].key' must be 1 to 316 characters long.",
			"properties.taints[1].value|Field 'properties.taints[1].value' must be at most 63 characters long.",
			"properties.taints[1].effect|Invalid value 'Bad' for field 'properties.taints[1].effect' (must be one of: NoSchedule, PreferNoSchedule, NoExecute).",
			"properties.taints[2].key|Missing required field 'properties.taints[2].key'.",
			"properties.taints[2].effect|Missing required field 'properties.taints[2].effect'."}},
		{name: "every_profile_at_once", sets: []set{
			{"properties.taints", []any{taint("k", nil, nil)}},
			{"properties.labels", []any{map[string]any{"value": "v"}}},
			{"properties.autoScaling.max", -1},
			{"properties.replicas", -1},
		}, want: []string{
			"properties.replicas|Invalid value '-1' for field 'properties.replicas' (must be at least 0).",
			"properties.autoScaling.max|Invalid value '-1' for field 'properties.autoScaling.max' (must be at least 0).",
			"properties.labels[0].key|Missing required field 'properties.labels[0].key'.",
			"properties.taints[0].effect|Missing required field 'properties.taints[0].effect'."}},
	}
	for _, name := range api.Versions() {
		nv := npVersion(t, name)
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				body := []byte(nodePoolBody)
				for _, s := range tc.sets {
					body = withValue(t, string(body), s.path, s.value)
				}
				_, err := nv.DecodeNodePool(body, nil)
				if got, want := problems(t, err), strings.Join(tc.want, "\n"); got != want {
					t.Errorf("problems:\n  %s\nwant:\n  %s", strings.ReplaceAll(got, "\n", "\n  "), strings.ReplaceAll(want, "\n", "\n  "))
				}
			})
		}
	}
}

// problems is err's problems, "target|message" a line each, in order ("" for none).
func problems(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	ce, ok := arm.AsCloudError(err)
	if !ok {
		t.Fatalf("not a cloud error: %v", err)
	}
	if len(ce.Details) == 0 {
		return ce.Target + "|" + ce.Message
	}
	var out []string
	for _, d := range ce.Details {
		out = append(out, d.Target+"|"+d.Message)
	}
	return strings.Join(out, "\n")
}
