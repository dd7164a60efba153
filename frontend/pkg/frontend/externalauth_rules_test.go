//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// Cluster Service's server, whose coverage counters every fuzz execution would scan.

package frontend

import (
	"context"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/internal/armspec/bounds"
)

// eaRulesBody is the valid external auth every case of TestExternalAuthRulesAgree edits: a
// client whose ID is one of two audiences, the default prefix policy.
func eaRulesBody() map[string]any {
	return map[string]any{"properties": map[string]any{
		"issuer": map[string]any{"url": "https://login.example.test/tenant/v2.0", "audiences": []any{"console-app", "cli-app"}},
		"clients": []any{map[string]any{
			"component": map[string]any{"name": "console", "authClientNamespace": "openshift-console"},
			"clientId":  "console-app", "type": "Confidential",
		}},
		"claim": map[string]any{"mappings": map[string]any{"username": map[string]any{"claim": "email"}}},
	}}
}

// eaRulesSpec is eaRulesBody as the frontend sends it to Cluster Service (the prefix policy
// defaulted to None).
func eaRulesSpec() *csv1.ExternalAuthSpec {
	return &csv1.ExternalAuthSpec{
		Issuer: &csv1.TokenIssuer{Url: "https://login.example.test/tenant/v2.0", Audiences: []string{"console-app", "cli-app"}},
		Clients: []*csv1.ExternalAuthClient{{ComponentName: "console", ComponentNamespace: "openshift-console",
			ClientId: "console-app", Type: "Confidential"}},
		ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "email", PrefixPolicy: "None"}},
	}
}

// eaCluster creates a cluster named name in the frontend and in Cluster Service, at a version
// in Cluster Service's catalogue.
func eaCluster(t *testing.T, e *csEnv, name string) {
	t.Helper()
	e.csCluster(t, name, func(b map[string]any) { set(b, "properties.version.id", "4.20.3") })
}

// eaProps is an external auth body's properties, the part an external auth case edits.
func eaProps(body map[string]any) map[string]any { return body["properties"].(map[string]any) }

// eaRuleVerdict is Cluster Service's rule on spec: model.ValidateExternalAuthSpec, which its
// server runs on a create and on the merged spec of an update.
func eaRuleVerdict(spec *csv1.ExternalAuthSpec) model.Violations {
	var v model.Violations
	model.ValidateExternalAuthSpec(&v, "external_auth.spec", spec)
	return v
}

// eaCreates is the target of external auth creates: a PUT of eaRulesBody to a cluster of each
// case's own (a cluster has at most one external auth), and Cluster Service's rule on
// eaRulesSpec with the case's edit.
func eaCreates(e *csEnv) ruleTarget[*csv1.ExternalAuthSpec] {
	return ruleTarget[*csv1.ExternalAuthSpec]{
		method: "PUT", accepted: []int{201},
		request: (&csv1.CreateExternalAuthRequest{}).ProtoReflect().Descriptor(),
		body:    eaRulesBody, scope: eaProps,
		open: func(t *testing.T, i int) caseRule[*csv1.ExternalAuthSpec] {
			cluster := fmt.Sprintf("eac%d", i)
			eaCluster(t, e, cluster)
			return caseRule[*csv1.ExternalAuthSpec]{
				path: eaPath(cluster, "auth1"),
				verdict: func(c ruleCase[*csv1.ExternalAuthSpec]) model.Violations {
					spec := eaRulesSpec()
					c.spec(spec)
					return eaRuleVerdict(spec)
				},
			}
		},
	}
}

// eaUpdates is the target of external auth updates through method: each case's own cluster
// with an external auth created from eaRulesBody, then a PUT of eaRulesBody (it replaces the
// spec) or a PATCH of properties (merged into the stored one) with the case's edit, and
// Cluster Service's rule on the stored spec with the edit (what UpdateExternalAuth validates).
// An accepted update must reach Cluster Service as the edit gives it.
func eaUpdates(e *csEnv, method string) ruleTarget[*csv1.ExternalAuthSpec] {
	body := eaRulesBody
	if method == "PATCH" {
		body = func() map[string]any { return map[string]any{"properties": map[string]any{}} }
	}
	return ruleTarget[*csv1.ExternalAuthSpec]{
		method: method, accepted: []int{200, 201, 202},
		// The rule's violations are named as a create's (external_auth.spec…): the same ARM
		// paths as UpdateExternalAuth's, which the frontend maps.
		request: (&csv1.CreateExternalAuthRequest{}).ProtoReflect().Descriptor(),
		body:    body, scope: eaProps,
		open: func(t *testing.T, i int) caseRule[*csv1.ExternalAuthSpec] {
			cluster := fmt.Sprintf("ea%s%d", strings.ToLower(method), i)
			eaCluster(t, e, cluster)
			id := e.readyExternalAuth(t, cluster, "auth1", eaRulesBody())
			cur, err := e.auths.GetExternalAuth(context.Background(), &csv1.GetExternalAuthRequest{Id: id})
			if err != nil {
				t.Fatal(err)
			}
			var want *csv1.ExternalAuthSpec
			return caseRule[*csv1.ExternalAuthSpec]{
				path: eaPath(cluster, "auth1"),
				verdict: func(c ruleCase[*csv1.ExternalAuthSpec]) model.Violations {
					// The stored spec is Cluster Service's normalised one; the case's edit is
					// made on what the frontend sends, then normalised the same way.
					spec := eaRulesSpec()
					c.spec(spec)
					v := eaRuleVerdict(spec)
					if len(v) == 0 {
						var none model.Violations
						want = model.ValidateExternalAuthSpec(&none, "external_auth.spec", spec)
					}
					return v
				},
				whenAccepted: func(t *testing.T) {
					after, err := e.auths.GetExternalAuth(context.Background(), &csv1.GetExternalAuthRequest{Id: cur.GetId()})
					if err != nil {
						t.Fatal(err)
					}
					if !proto.Equal(after.GetSpec(), want) {
						t.Fatalf("Cluster Service holds %v; the edit gives %v", after.GetSpec(), want)
					}
				},
			}
		},
	}
}

// TestExternalAuthRulesAgree: for every rule of an external auth (the specification's bounds and
// the rules it cannot state: an https issuer, audiences given once, a PEM bundle, client IDs
// among the audiences, unique components, the prefix and its policy), values around each edge,
// sent through a create, a PUT of an existing one and a PATCH (a real Cluster Service behind the
// frontend): the frontend's answer, Cluster Service's own rule (model.ValidateExternalAuthSpec)
// and the outcome the specification or the documented rule (docs/cluster-service.md, "Spec
// validation") gives agree.
func TestExternalAuthRulesAgree(t *testing.T) {
	e := newCSEnv(t)
	const (
		url      = "properties.issuer.url"
		auds     = "properties.issuer.audiences"
		ca       = "properties.issuer.ca"
		clients  = "properties.clients"
		username = "properties.claim.mappings.username"
	)
	var cases []ruleCase[*csv1.ExternalAuthSpec]
	add := func(name string, want outcome, arm func(map[string]any), cs func(*csv1.ExternalAuthSpec)) {
		cases = append(cases, ruleCase[*csv1.ExternalAuthSpec]{name: name, body: arm, spec: cs, want: want})
	}

	// The issuer: an https URL with a host and without query, fragment or user info (OpenShift's
	// Authentication issuerURL).
	for _, u := range []struct {
		url string
		ok  bool
	}{
		{"https://login.example.test/tenant/v2.0", true}, {"https://login.example.test:8443/t", true},
		{"https://login.example.test", true}, {"http://login.example.test/t", false}, {"ftp://login.example.test", false},
		{"login.example.test/t", false}, {"https://", false}, {"https:///t", false},
		{"https://login.example.test/t?a=b", false}, {"https://login.example.test/t#f", false},
		{"https://user@login.example.test/t", false}, {"https://user:pw@login.example.test/t", false}, {"%zz", false},
	} {
		add(fmt.Sprintf("issuer.url=%q", u.url), refusedUnless(u.ok, url),
			func(p map[string]any) { set(p, "issuer.url", u.url) },
			func(s *csv1.ExternalAuthSpec) { s.Issuer.Url = u.url })
	}

	// Audiences: 1-10 (the specification), each non-empty and given once (case-sensitive).
	audiences := func(name string, want outcome, list ...string) {
		add("audiences_"+name, want,
			func(p map[string]any) {
				var l []any
				for _, a := range list {
					l = append(l, a)
				}
				set(p, "issuer.audiences", l)
			},
			func(s *csv1.ExternalAuthSpec) { s.Issuer.Audiences = list })
	}
	audiences("one", accepted(), "console-app")
	audiences("two", accepted(), "console-app", "other")
	audiences("other_case", accepted(), "console-app", "Console-App")
	audiences("empty_entry", refused(auds+"[1]"), "console-app", "")
	audiences("twice", refused(auds+"[2]"), "console-app", "x", "console-app")
	audiences("empty_twice", refused(auds+"[1]", auds+"[2]"), "console-app", "", "")
	ten := []string{"console-app"}
	for i := 1; len(ten) < bounds.TokenIssuerProfileAudiencesMaxItems; i++ {
		ten = append(ten, fmt.Sprintf("a%d", i))
	}
	audiences("at_most", accepted(), ten...)
	audiences("one_too_many", refused(auds), append(slices.Clone(ten), "one-more")...)
	// No audience at all: the clients go too, so the audiences alone are at fault.
	add("audiences_none", refused(auds),
		func(p map[string]any) { set(p, "issuer.audiences", []any{}); set(p, "clients", []any{}) },
		func(s *csv1.ExternalAuthSpec) { s.Issuer.Audiences, s.Clients = nil, nil })

	// The CA: a bundle of PEM certificates and nothing else.
	cert := testCA(t)
	for _, c := range []struct {
		name, ca string
		ok       bool
	}{
		{"one_certificate", cert, true},
		{"two_certificates", cert + cert, true},
		{"in_blank_lines", "\n\n" + cert + "\n \n", true},
		{"indented", "  " + cert, false},
		{"text_between", cert + "junk\n" + cert, false},
		{"not_pem", "not a certificate", false},
		{"trailing_junk", cert + "junk", false},
		{"leading_junk", "junk\n" + cert, false},
		{"other_block", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})), false},
		{"certificate_and_other_block", cert + string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})), false},
		{"certificate_not_der", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not der")})), false},
	} {
		add("issuer.ca_"+c.name, refusedUnless(c.ok, ca),
			func(p map[string]any) { set(p, "issuer.ca", c.ca) },
			func(s *csv1.ExternalAuthSpec) { s.Issuer.Ca = c.ca })
	}

	// Clients: at most 20 (the specification), each client ID one of the audiences
	// (case-sensitive), each namespace/name pair once (HyperShift's list key); Cluster Service
	// names the second pair's name.
	type client struct{ ns, name, id string }
	clientList := func(name string, want outcome, cl ...client) {
		add("clients_"+name, want,
			func(p map[string]any) {
				l := []any{}
				for _, c := range cl {
					l = append(l, map[string]any{"component": map[string]any{"name": c.name, "authClientNamespace": c.ns},
						"clientId": c.id, "type": "Public"})
				}
				set(p, "clients", l)
			},
			func(s *csv1.ExternalAuthSpec) {
				s.Clients = nil
				for _, c := range cl {
					s.Clients = append(s.Clients, &csv1.ExternalAuthClient{ComponentName: c.name, ComponentNamespace: c.ns, ClientId: c.id, Type: "Public"})
				}
			})
	}
	clientList("none", accepted())
	clientList("other_audience", accepted(), client{"openshift-console", "console", "cli-app"})
	clientList("id_not_an_audience", refused(clients+"[0].clientId"), client{"openshift-console", "console", "other"})
	clientList("id_other_case", refused(clients+"[0].clientId"), client{"openshift-console", "console", "Console-App"})
	clientList("id_empty", refused(clients+"[0].clientId"), client{"openshift-console", "console", ""})
	clientList("same_name_other_namespace", accepted(),
		client{"openshift-console", "console", "console-app"}, client{"other-ns", "console", "console-app"})
	clientList("same_namespace_other_name", accepted(),
		client{"openshift-console", "console", "console-app"}, client{"openshift-console", "cli", "cli-app"})
	clientList("component_twice", refused(clients+"[1].component.name"),
		client{"openshift-console", "console", "console-app"}, client{"openshift-console", "console", "cli-app"})
	clientList("component_thrice", refused(clients+"[1].component.name", clients+"[2].component.name"),
		client{"ns", "c", "console-app"}, client{"ns", "c", "console-app"}, client{"ns", "c", "cli-app"})
	many := func(n int) []client {
		var l []client
		for i := range n {
			l = append(l, client{"ns", fmt.Sprintf("c%d", i), "console-app"})
		}
		return l
	}
	clientList("at_most", accepted(), many(bounds.ExternalAuthPropertiesClientsMaxItems)...)
	clientList("one_too_many", refused(clients), many(bounds.ExternalAuthPropertiesClientsMaxItems+1)...)
	clientList("name_longest", accepted(), client{"ns", strings.Repeat("n", bounds.ExternalAuthClientComponentProfileNameMaxLength), "console-app"})
	clientList("name_too_long", refused(clients+"[0].component.name"),
		client{"ns", strings.Repeat("n", bounds.ExternalAuthClientComponentProfileNameMaxLength+1), "console-app"})

	// Extra scopes: each a scope without spaces (Cluster Service's rule, docs/cluster-service.md),
	// each once (HyperShift's extraScopes is a set).
	for _, sc := range []struct {
		name   string
		scopes []string
		want   outcome
	}{
		{"two", []string{"email", "profile"}, accepted()},
		{"other_case", []string{"email", "Email"}, accepted()},
		{"empty", []string{"email", ""}, refused(clients + "[0].extraScopes[1]")},
		{"with_space", []string{"a b"}, refused(clients + "[0].extraScopes[0]")},
		{"twice", []string{"email", "profile", "email"}, refused(clients + "[0].extraScopes[2]")},
	} {
		add("clients_extraScopes_"+sc.name, sc.want,
			func(p map[string]any) {
				var l []any
				for _, x := range sc.scopes {
					l = append(l, x)
				}
				set(p, "clients", []any{map[string]any{
					"component": map[string]any{"name": "console", "authClientNamespace": "openshift-console"},
					"clientId":  "console-app", "type": "Confidential", "extraScopes": l,
				}})
			},
			func(s *csv1.ExternalAuthSpec) { s.Clients[0].ExtraScopes = sc.scopes })
	}

	// The username prefix: required with the Prefix policy, refused with any other (None, the
	// default, and NoPrefix); the policy one of the specification's.
	prefix := func(name string, want outcome, policy, pfx string) {
		add("username_"+name, want,
			func(p map[string]any) {
				if policy != "" {
					set(p, "claim.mappings.username.prefixPolicy", policy)
				}
				if pfx != "" {
					set(p, "claim.mappings.username.prefix", pfx)
				}
			},
			func(s *csv1.ExternalAuthSpec) {
				if policy != "" {
					s.ClaimMappings.Username.PrefixPolicy = policy
				}
				s.ClaimMappings.Username.Prefix = pfx
			})
	}
	prefix("prefix_with_Prefix", accepted(), "Prefix", "oidc:")
	prefix("no_prefix_with_Prefix", refused(username+".prefix"), "Prefix", "")
	prefix("prefix_with_NoPrefix", refused(username+".prefix"), "NoPrefix", "oidc:")
	prefix("no_prefix_with_NoPrefix", accepted(), "NoPrefix", "")
	prefix("prefix_with_None", refused(username+".prefix"), "None", "oidc:")
	prefix("prefix_with_the_default", refused(username+".prefix"), "", "oidc:")
	prefix("policy_not_allowed", refused(username+".prefixPolicy"), "Sometimes", "")
	prefix("policy_lower_case", refused(username+".prefixPolicy"), "prefix", "oidc:")

	// Groups and validation rules: what the specification says (a claim; RequiredClaim, the
	// default type, with a claim and a value).
	add("groups", accepted(),
		func(p map[string]any) {
			set(p, "claim.mappings.groups", map[string]any{"claim": "groups", "prefix": "g:"})
		},
		func(s *csv1.ExternalAuthSpec) {
			s.ClaimMappings.Groups = &csv1.GroupsClaimMapping{Claim: "groups", Prefix: "g:"}
		})
	add("validation_rule", accepted(),
		func(p map[string]any) {
			set(p, "claim.validationRules", []any{map[string]any{"requiredClaim": map[string]any{"claim": "tid", "requiredValue": "t1"}}})
		},
		func(s *csv1.ExternalAuthSpec) {
			s.ValidationRules = []*csv1.TokenClaimValidationRule{{Type: "RequiredClaim", RequiredClaim: "tid", RequiredValue: "t1"}}
		})
	add("validation_rule_type_not_allowed", refused("properties.claim.validationRules[0].type"),
		func(p map[string]any) {
			set(p, "claim.validationRules", []any{map[string]any{"type": "Other", "requiredClaim": map[string]any{"claim": "tid", "requiredValue": "t1"}}})
		},
		func(s *csv1.ExternalAuthSpec) {
			s.ValidationRules = []*csv1.TokenClaimValidationRule{{Type: "Other", RequiredClaim: "tid", RequiredValue: "t1"}}
		})

	for _, tg := range []struct {
		name   string
		target ruleTarget[*csv1.ExternalAuthSpec]
	}{{"create", eaCreates(e)}, {"put", eaUpdates(e, "PUT")}, {"patch", eaUpdates(e, "PATCH")}} {
		t.Run(tg.name, func(t *testing.T) { runRuleCases(t, e, tg.target, cases) })
	}
}

// TestExternalAuthRefusedUpdateChangesNothing: an update Cluster Service refuses (its rule alone
// knows an http issuer is wrong) answers 400 naming the property, and leaves the external auth as
// it was, in the frontend and in Cluster Service; the next valid update goes through.
func TestExternalAuthRefusedUpdateChangesNothing(t *testing.T) {
	e := newCSEnv(t)
	eaCluster(t, e, "c1")
	id := e.readyExternalAuth(t, "c1", "auth1", eaRulesBody())
	before, err := e.auths.GetExternalAuth(context.Background(), &csv1.GetExternalAuthRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	issuerURL := func() any {
		t.Helper()
		r := e.do("GET", eaPath("c1", "auth1"), nil, nil)
		if r.code != 200 {
			t.Fatalf("GET = %d %s", r.code, r.body)
		}
		props := r.json(t)["properties"].(map[string]any)
		if props["provisioningState"] != "Succeeded" {
			t.Fatalf("GET shows %v", props)
		}
		return props["issuer"].(map[string]any)["url"]
	}

	for _, method := range []string{"PATCH", "PUT"} {
		body := eaRulesBody()
		if method == "PATCH" {
			body = map[string]any{"properties": map[string]any{}}
		}
		set(eaProps(body), "issuer.url", "http://login.example.test/t")
		r := e.do(method, eaPath("c1", "auth1"), mustJSON(body), nil)
		if r.code != 400 || !slices.Equal(refusalTargets(t, r), []string{"properties.issuer.url"}) {
			t.Fatalf("%s of an http issuer = %d %s; want 400 naming properties.issuer.url", method, r.code, r.body)
		}
		if got := issuerURL(); got != "https://login.example.test/tenant/v2.0" {
			t.Fatalf("after the refused %s the frontend shows issuer %v", method, got)
		}
		after, err := e.auths.GetExternalAuth(context.Background(), &csv1.GetExternalAuthRequest{Id: id})
		if err != nil {
			t.Fatal(err)
		}
		if after.GetSpecRevision() != before.GetSpecRevision() || !proto.Equal(after.GetSpec(), before.GetSpec()) {
			t.Fatalf("after the refused %s Cluster Service holds %v (spec revision %d), had %v (%d)", method,
				after.GetSpec(), after.GetSpecRevision(), before.GetSpec(), before.GetSpecRevision())
		}
	}

	r := e.do("PATCH", eaPath("c1", "auth1"), mustJSON(map[string]any{"properties": map[string]any{
		"issuer": map[string]any{"url": "https://login.example.test/other"}}}), nil)
	if r.code != 202 {
		t.Fatalf("a valid PATCH after the refusals = %d %s", r.code, r.body)
	}
	after, err := e.auths.GetExternalAuth(context.Background(), &csv1.GetExternalAuthRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetSpec().GetIssuer().GetUrl() != "https://login.example.test/other" {
		t.Fatalf("Cluster Service holds issuer %q after the valid PATCH", after.GetSpec().GetIssuer().GetUrl())
	}
}
