package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20240610preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20251223preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20260630preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20260901preview"
	"github.com/openhcp/openhcp/internal/arm"
)

const eaBody = `{"properties":{
  "issuer":{"url":"https://login.example.com/t/v2.0","audiences":["console-app","cli-app"]},
  "clients":[{"component":{"name":"console","authClientNamespace":"openshift-console"},"clientId":"console-app","type":"Confidential","extraScopes":["email"]}],
  "claim":{"mappings":{"username":{"claim":"email"},"groups":{"claim":"groups","prefix":"g:"}},
           "validationRules":[{"requiredClaim":{"claim":"tid","requiredValue":"t1"}}]}}}`

func targets(err error) []string {
	ce, ok := err.(*arm.CloudError)
	if !ok {
		return nil
	}
	if len(ce.Details) == 0 {
		return []string{ce.Target}
	}
	var out []string
	for _, d := range ce.Details {
		out = append(out, d.Target)
	}
	return out
}

func TestExternalAuthDecodeEveryVersion(t *testing.T) {
	for _, v := range []string{"2024-06-10-preview", "2025-12-23-preview", "2026-06-30-preview", "2026-09-01-preview"} {
		ver, ok := api.LookupExternalAuth(v)
		if !ok {
			t.Fatalf("%s: external auths not registered", v)
		}
		tests := []struct {
			name    string
			body    string
			targets []string
		}{
			{"valid_with_defaults", eaBody, nil},
			// The rules the specification cannot state (an https issuer, a PEM CA, …) are
			// Cluster Service's alone: TestExternalAuthRulesAgree in package frontend.
			{"unknown_field", strings.Replace(eaBody, `"clients"`, `"clientz"`, 1), []string{"properties.clientz"}},
			{"bad_prefix_policy", strings.Replace(eaBody, `{"claim":"email"}`, `{"claim":"email","prefixPolicy":"Sometimes"}`, 1), []string{"properties.claim.mappings.username.prefixPolicy"}},
			{"issuer_missing", `{"properties":{"claim":{"mappings":{"username":{"claim":"email"}}}}}`, []string{"properties.issuer"}},
			{"client_type_enum", strings.Replace(eaBody, `"Confidential"`, `"Secret"`, 1), []string{"properties.clients[0].type"}},
		}
		for _, tc := range tests {
			t.Run(v+"/"+tc.name, func(t *testing.T) {
				ea, err := ver.DecodeExternalAuth([]byte(tc.body))
				got := targets(err)
				if len(tc.targets) == 0 {
					if err != nil {
						t.Fatalf("decode: %v", err)
					}
					// The decoded spec is what the body says: Cluster Service's model, not the
					// decoder, fills what it leaves out (model.DefaultExternalAuth).
					if p := ea.Spec.GetClaimMappings().GetUsername(); p.GetClaim() != "email" || p.GetPrefixPolicy() != "" || ea.Spec.GetValidationRules()[0].GetType() != "" ||
						ea.Spec.GetValidationRules()[0].GetRequiredClaim() != "tid" || ea.Spec.GetClients()[0].GetComponentNamespace() != "openshift-console" {
						t.Fatalf("decoded spec: %v", ea.Spec)
					}
					return
				}
				if strings.Join(got, ",") != strings.Join(tc.targets, ",") {
					t.Fatalf("error targets = %v (%v), want %v", got, err, tc.targets)
				}
			})
		}
		t.Run(v+"/render_round_trips_and_shows_the_condition_its_way", func(t *testing.T) {
			ea, err := ver.DecodeExternalAuth([]byte(eaBody))
			if err != nil {
				t.Fatal(err)
			}
			ea.Condition = &api.Condition{Type: "Available", Status: "True", Reason: "AsExpected"}
			b, _ := json.Marshal(ver.RenderExternalAuth(ea))
			again, err := ver.DecodeExternalAuth(b)
			if err != nil {
				t.Fatalf("a rendered external auth does not decode: %v\n%s", err, b)
			}
			if ja, jb := mustJSON(ea), mustJSON(again); ja != jb {
				t.Fatalf("round trip changed the properties:\n%s\n%s", ja, jb)
			}
			wantKey := `"condition":{`
			if v >= "2026-06-30-preview" {
				wantKey = `"status":{"conditions":[{`
			}
			if !strings.Contains(string(b), wantKey) {
				t.Fatalf("%s renders the condition without %s: %s", v, wantKey, b)
			}
		})
		t.Run(v+"/patch_changes_only_what_it_names", func(t *testing.T) {
			stored, _ := ver.DecodeExternalAuth([]byte(eaBody))
			next, err := api.PatchExternalAuth(ver, stored, []byte(`{"properties":{"claim":{"mappings":{"username":{"claim":"sub"}}}}}`))
			if err != nil || next.Spec.GetClaimMappings().GetUsername().GetClaim() != "sub" || len(next.Spec.GetClients()) != 1 || next.Spec.GetClaimMappings().GetGroups() == nil {
				t.Fatalf("patched = %+v, %v", next, err)
			}
			if _, err := api.PatchExternalAuth(ver, stored, []byte(`{"location":"eastus"}`)); strings.Join(targets(err), ",") != "location" {
				t.Fatalf("patch of location: %v", err)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
