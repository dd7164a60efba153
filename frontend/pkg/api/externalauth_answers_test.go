package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// TestSharedExternalAuthAnswers pins, for every api-version that has external auths, the exact
// problems (target and message, in order) hostile external auth bodies get from the frontend:
// the specification's bounds of the shared external auth definitions (issuer, clients, claim
// mappings, validation rules, generated: fieldcheck's spec functions of armgen.SharedAuthChecks)
// and nothing else. A case with no problem here (an http issuer, a CA that is no PEM, a client ID
// no audience, …) is a rule of Cluster Service's alone, answered by it
// (TestExternalAuthRulesAgree in package frontend).
func TestSharedExternalAuthAnswers(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	list := func(n int, f func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	client := func(name, ns, id, typ any) map[string]any {
		c := map[string]any{}
		comp := map[string]any{}
		for k, v := range map[string]any{"name": name, "authClientNamespace": ns} {
			if v != nil {
				comp[k] = v
			}
		}
		if name != nil || ns != nil {
			c["component"] = comp
		}
		for k, v := range map[string]any{"clientId": id, "type": typ} {
			if v != nil {
				c[k] = v
			}
		}
		return c
	}
	type set struct {
		path  string
		value any
	}
	const (
		iss = "properties.issuer"
		cl  = "properties.clients"
		usr = "properties.claim.mappings.username"
		grp = "properties.claim.mappings.groups"
		vr  = "properties.claim.validationRules"
	)
	cases := []struct {
		name string
		sets []set
		want []string // "target|message"
	}{
		{name: "valid"},
		{name: "issuer_missing", sets: []set{{iss, nil}}, want: []string{
			"properties.issuer|The field 'properties.issuer' is required.",
		}},
		{name: "issuer_empty", sets: []set{{iss, map[string]any{}}}, want: []string{
			"properties.issuer.url|The field 'properties.issuer.url' is required.",
			"properties.issuer.audiences|The field 'properties.issuer.audiences' must have at least one entry.",
		}},
		{name: "url_empty", sets: []set{{iss + ".url", ""}}, want: []string{
			"properties.issuer.url|The field 'properties.issuer.url' is required.",
		}},
		{name: "url_http", sets: []set{{iss + ".url", "http://x.example.com"}}},
		{name: "url_query", sets: []set{{iss + ".url", "https://x.example.com/?a=b"}}},
		{name: "url_not_a_url", sets: []set{{iss + ".url", "%zz"}}},
		{name: "audiences_empty", sets: []set{{iss + ".audiences", []any{}}}, want: []string{
			"properties.issuer.audiences|The field 'properties.issuer.audiences' must have at least one entry.",
		}},
		{name: "audiences_null", sets: []set{{iss + ".audiences", nil}}, want: []string{
			"properties.issuer.audiences|The field 'properties.issuer.audiences' must have at least one entry.",
		}},
		{name: "audiences_10", sets: []set{{iss + ".audiences", list(10, func(i int) any { return fmt.Sprint("a", i) })}, {cl, nil}}},
		{name: "audiences_11", sets: []set{{iss + ".audiences", list(11, func(i int) any { return fmt.Sprint("a", i) })}, {cl, nil}}, want: []string{
			"properties.issuer.audiences|The field 'properties.issuer.audiences' has 11 entries; at most 10 are allowed.",
		}},
		{name: "audience_empty_and_twice", sets: []set{{iss + ".audiences", []any{"console-app", "", "console-app", ""}}}},
		{name: "ca_not_pem", sets: []set{{iss + ".ca", "not a certificate"}}},
		{name: "clients_20", sets: []set{{cl, list(20, func(i int) any { return client(fmt.Sprint("c", i), "ns", "console-app", "Public") })}}},
		{name: "clients_21", sets: []set{{cl, list(21, func(i int) any { return client(fmt.Sprint("c", i), "ns", "console-app", "Public") })}}, want: []string{
			"properties.clients|The field 'properties.clients' has 21 entries; at most 20 are allowed.",
		}},
		{name: "client_empty", sets: []set{{cl, []any{map[string]any{}}}}, want: []string{
			"properties.clients[0].component.name|The field 'properties.clients[0].component.name' is required.",
			"properties.clients[0].component.authClientNamespace|The field 'properties.clients[0].component.authClientNamespace' is required.",
			"properties.clients[0].clientId|The field 'properties.clients[0].clientId' is required.",
			"properties.clients[0].type|The field 'properties.clients[0].type' is required.",
		}},
		{name: "client_component_bounds", sets: []set{{cl, []any{
			client(long(256), long(63), "console-app", "Public"),
			client(long(257), long(64), "console-app", "Public"),
			client("", "", "console-app", "Public"),
		}}}, want: []string{
			"properties.clients[1].component.name|The field 'properties.clients[1].component.name' is 257 characters long; at most 256 are allowed.",
			"properties.clients[1].component.authClientNamespace|The field 'properties.clients[1].component.authClientNamespace' is 64 characters long; at most 63 are allowed.",
			"properties.clients[2].component.name|The field 'properties.clients[2].component.name' is required.",
			"properties.clients[2].component.authClientNamespace|The field 'properties.clients[2].component.authClientNamespace' is required.",
		}},
		{name: "client_component_twice", sets: []set{{cl, []any{
			client("console", "ns", "console-app", "Public"),
			client("console", "ns", "cli-app", "Confidential"),
		}}}},
		// The type's enum (the specification's) before the client ID's audience (a rule).
		{name: "client_id_and_type", sets: []set{{cl, []any{
			client("a", "ns", nil, nil),
			client("b", "ns", "", ""),
			client("c", "ns", "other", "Secret"),
		}}}, want: []string{
			"properties.clients[0].clientId|The field 'properties.clients[0].clientId' is required.",
			"properties.clients[0].type|The field 'properties.clients[0].type' is required.",
			"properties.clients[1].clientId|The field 'properties.clients[1].clientId' is required.",
			"properties.clients[1].type|The field 'properties.clients[1].type' is required.",
			"properties.clients[2].type|The value 'Secret' is not allowed for 'properties.clients[2].type': Confidential or Public.",
		}},
		{name: "username_missing", sets: []set{{usr, nil}}, want: []string{
			"properties.claim.mappings.username|The field 'properties.claim.mappings.username' is required.",
		}},
		{name: "mappings_missing", sets: []set{{"properties.claim.mappings", nil}}, want: []string{
			"properties.claim.mappings.username|The field 'properties.claim.mappings.username' is required.",
		}},
		{name: "claim_missing", sets: []set{{"properties.claim", nil}}, want: []string{
			"properties.claim.mappings.username|The field 'properties.claim.mappings.username' is required.",
		}},
		{name: "issuer_and_username_missing", sets: []set{{iss, nil}, {usr, nil}}, want: []string{
			"properties.issuer|The field 'properties.issuer' is required.",
			"properties.claim.mappings.username|The field 'properties.claim.mappings.username' is required.",
		}},
		{name: "username_empty", sets: []set{{usr, map[string]any{}}}, want: []string{
			"properties.claim.mappings.username.claim|The field 'properties.claim.mappings.username.claim' is required.",
		}},
		{name: "username_claim_256", sets: []set{{usr + ".claim", long(256)}}},
		{name: "username_claim_257", sets: []set{{usr + ".claim", long(257)}}, want: []string{
			"properties.claim.mappings.username.claim|The field 'properties.claim.mappings.username.claim' is 257 characters long; at most 256 are allowed.",
		}},
		{name: "prefix_policy_bad", sets: []set{{usr + ".prefixPolicy", "Sometimes"}, {usr + ".prefix", "p:"}}, want: []string{
			"properties.claim.mappings.username.prefixPolicy|The value 'Sometimes' is not allowed for 'properties.claim.mappings.username.prefixPolicy': None, Prefix or NoPrefix.",
		}},
		{name: "prefix_policy_empty", sets: []set{{usr + ".prefixPolicy", ""}}},
		{name: "prefix_without_prefix", sets: []set{{usr + ".prefixPolicy", "Prefix"}}},
		{name: "prefix_with_noprefix", sets: []set{{usr + ".prefixPolicy", "NoPrefix"}, {usr + ".prefix", "p:"}}},
		{name: "groups_empty", sets: []set{{grp, map[string]any{}}}, want: []string{
			"properties.claim.mappings.groups.claim|The field 'properties.claim.mappings.groups.claim' is required.",
		}},
		{name: "groups_claim_257", sets: []set{{grp + ".claim", long(257)}}, want: []string{
			"properties.claim.mappings.groups.claim|The field 'properties.claim.mappings.groups.claim' is 257 characters long; at most 256 are allowed.",
		}},
		{name: "validation_rules", sets: []set{{vr, []any{
			map[string]any{},
			map[string]any{"type": "Other", "requiredClaim": map[string]any{"claim": "", "requiredValue": ""}},
			map[string]any{"type": "", "requiredClaim": map[string]any{"claim": "c"}},
			map[string]any{"requiredClaim": map[string]any{"claim": "c", "requiredValue": "v"}},
		}}}, want: []string{
			"properties.claim.validationRules[0].requiredClaim.claim|The field 'properties.claim.validationRules[0].requiredClaim.claim' is required.",
			"properties.claim.validationRules[0].requiredClaim.requiredValue|The field 'properties.claim.validationRules[0].requiredClaim.requiredValue' is required.",
			"properties.claim.validationRules[1].type|The value 'Other' is not allowed for 'properties.claim.validationRules[1].type': RequiredClaim.",
			"properties.claim.validationRules[1].requiredClaim.claim|The field 'properties.claim.validationRules[1].requiredClaim.claim' is required.",
			"properties.claim.validationRules[1].requiredClaim.requiredValue|The field 'properties.claim.validationRules[1].requiredClaim.requiredValue' is required.",
			"properties.claim.validationRules[2].requiredClaim.requiredValue|The field 'properties.claim.validationRules[2].requiredClaim.requiredValue' is required.",
		}},
		// What the specification says of the values is answered first, then the rules it cannot
		// state (as a cluster body is: its generated checks, then fieldcheck.Cluster); the
		// hand-written checks had interleaved them, field by field.
		{name: "everything_at_once", sets: []set{
			{iss + ".url", "ftp://x"},
			{iss + ".audiences", []any{"", "x", "x"}},
			{iss + ".ca", "-"},
			{cl, []any{client(long(257), "", "y", "Secret"), client(long(257), "", "x", nil)}},
			{usr, map[string]any{"claim": long(300), "prefixPolicy": "Prefix"}},
			{grp, map[string]any{"claim": ""}},
			{vr, []any{map[string]any{"type": "T"}}},
		}, want: []string{
			"properties.clients[0].component.name|The field 'properties.clients[0].component.name' is 257 characters long; at most 256 are allowed.",
			"properties.clients[0].component.authClientNamespace|The field 'properties.clients[0].component.authClientNamespace' is required.",
			"properties.clients[0].type|The value 'Secret' is not allowed for 'properties.clients[0].type': Confidential or Public.",
			"properties.clients[1].component.name|The field 'properties.clients[1].component.name' is 257 characters long; at most 256 are allowed.",
			"properties.clients[1].component.authClientNamespace|The field 'properties.clients[1].component.authClientNamespace' is required.",
			"properties.clients[1].type|The field 'properties.clients[1].type' is required.",
			"properties.claim.mappings.username.claim|The field 'properties.claim.mappings.username.claim' is 300 characters long; at most 256 are allowed.",
			"properties.claim.mappings.groups.claim|The field 'properties.claim.mappings.groups.claim' is required.",
			"properties.claim.validationRules[0].type|The value 'T' is not allowed for 'properties.claim.validationRules[0].type': RequiredClaim.",
			"properties.claim.validationRules[0].requiredClaim.claim|The field 'properties.claim.validationRules[0].requiredClaim.claim' is required.",
			"properties.claim.validationRules[0].requiredClaim.requiredValue|The field 'properties.claim.validationRules[0].requiredClaim.requiredValue' is required.",
		}},
	}
	for _, name := range []string{"2024-06-10-preview", "2025-12-23-preview", "2026-06-30-preview", "2026-09-01-preview"} {
		ver, ok := api.LookupExternalAuth(name)
		if !ok {
			t.Fatalf("%s: external auths not registered", name)
		}
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				body := []byte(eaBody)
				for _, s := range tc.sets {
					body = withValue(t, string(body), s.path, s.value)
				}
				_, err := ver.DecodeExternalAuth(body)
				if got, want := problems(t, err), strings.Join(tc.want, "\n"); got != want {
					t.Errorf("problems:\n  %s\nwant:\n  %s", strings.ReplaceAll(got, "\n", "\n  "), strings.ReplaceAll(want, "\n", "\n  "))
				}
			})
		}
	}
}

// TestExternalAuthProblemsAreCapped: a body with more problems than api.MaxReportedProblems (a
// thousand clients without anything) is answered with that many, as a cluster's is.
func TestExternalAuthProblemsAreCapped(t *testing.T) {
	clients := make([]any, 1000)
	for i := range clients {
		clients[i] = map[string]any{}
	}
	body := withValue(t, eaBody, "properties.clients", clients)
	for _, name := range []string{"2024-06-10-preview", "2026-06-30-preview"} {
		ver, _ := api.LookupExternalAuth(name)
		_, err := ver.DecodeExternalAuth(body)
		if got := strings.Count(problems(t, err), "\n") + 1; got != api.MaxReportedProblems {
			t.Errorf("%s: %d problems, want %d", name, got, api.MaxReportedProblems)
		}
	}
}
