package api_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// storedExternalAuthDocuments are external auth resource documents' properties as the frontend
// wrote them before the external auth model became Cluster Service's spec (its own
// ExternalAuthProperties, defaults applied before the write): they must still read, render in
// every api-version and be written back as they were.
var storedExternalAuthDocuments = []struct{ name, doc string }{
	{"every_property", `{"properties":{"issuer":{"url":"https://login.example.com/t/v2.0","audiences":["console-app","cli-app"],
		"ca":"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
		"clients":[{"component":{"name":"console","authClientNamespace":"openshift-console"},"clientId":"console-app","extraScopes":["email","profile"],"type":"Confidential"},
		{"component":{"name":"cli","authClientNamespace":"openshift-console"},"clientId":"cli-app","type":"Public"}],
		"claim":{"mappings":{"username":{"claim":"email","prefix":"u:","prefixPolicy":"Prefix"},"groups":{"claim":"groups","prefix":"g:"}},
		"validationRules":[{"type":"RequiredClaim","requiredClaim":{"claim":"tid","requiredValue":"t1"}},{"type":"RequiredClaim","requiredClaim":{"claim":"ver","requiredValue":"2"}}]}}}`},
	{"defaults_only", `{"properties":{"issuer":{"url":"https://login.example.com/t/v2.0","audiences":["a"]},
		"claim":{"mappings":{"username":{"claim":"sub","prefixPolicy":"None"}}}}}`},
	{"groups_without_prefix", `{"properties":{"issuer":{"url":"https://i.example.com","audiences":["a","b"]},
		"claim":{"mappings":{"username":{"claim":"sub","prefixPolicy":"NoPrefix"},"groups":{"claim":"roles"}}}}}`},
	// Written by hand or by a release before defaults were applied: empty values stay as they are.
	{"without_defaults", `{"properties":{"issuer":{"url":"https://i.example.com","audiences":["a"],"ca":""},"clients":[],
		"claim":{"mappings":{"username":{"claim":"sub","prefix":"","prefixPolicy":""}},"validationRules":[{"type":"","requiredClaim":{"claim":"c","requiredValue":"v"}}]}}}`},
	{"client_without_scopes_or_type", `{"properties":{"issuer":{"url":"https://i.example.com","audiences":["a"]},
		"clients":[{"component":{"name":"console","authClientNamespace":"ns"},"clientId":"a","extraScopes":[],"type":""}],
		"claim":{"mappings":{"username":{"claim":"sub","prefixPolicy":"None"}}}}}`},
}

// TestStoredExternalAuthDocumentsReadAndRender: each stored document reads into the model,
// renders in every api-version (with and without Cluster Service's condition) exactly as
// testdata/externalauth_documents.golden records (made by the frontend that wrote these
// documents), and what it is written back as reads and renders the same.
func TestStoredExternalAuthDocumentsReadAndRender(t *testing.T) {
	id, _ := arm.ParseResourceID("/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c/externalAuths/e")
	cond := &api.Condition{Type: "Available", Status: "True", Reason: "AsExpected", Message: "ready",
		LastTransitionTime: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	// read is a stored document as the frontend reads it (its envelope from the path and the
	// resource document).
	read := func(doc []byte) (*api.ExternalAuth, error) {
		ea := &api.ExternalAuth{ID: id, ProvisioningState: "Succeeded"}
		return ea, json.Unmarshal(doc, ea)
	}
	var got bytes.Buffer
	for _, d := range storedExternalAuthDocuments {
		ea, err := read([]byte(d.doc))
		if err != nil {
			t.Fatalf("%s: read: %v", d.name, err)
		}
		renders := renderAllExternalAuth(t, ea, cond)
		got.WriteString(d.name + "\n" + renders)
		// Written back and read again, it renders the same.
		written, err := json.Marshal(ea)
		if err != nil {
			t.Fatalf("%s: write: %v", d.name, err)
		}
		again, err := read(written)
		if err != nil {
			t.Fatalf("%s: read what was written: %v\n%s", d.name, err, written)
		}
		if r := renderAllExternalAuth(t, again, cond); r != renders {
			t.Fatalf("%s: written and read again renders differently:\n%s\nwant\n%s", d.name, r, renders)
		}
	}
	matchStoredDocumentsGolden(t, "externalauth_documents.golden", got.String())
}

// renderAllExternalAuth is ea rendered in every api-version, without and with cond, one line
// each, exactly as the answer's body is marshalled (key order included).
func renderAllExternalAuth(t *testing.T, ea *api.ExternalAuth, cond *api.Condition) string {
	t.Helper()
	var b strings.Builder
	for _, ver := range externalAuthVersions(t) {
		for _, c := range []*api.Condition{nil, cond} {
			shown := *ea
			shown.Condition = c
			r, err := json.Marshal(ver.RenderExternalAuth(&shown))
			if err != nil {
				t.Fatalf("render %s: %v", ver, err)
			}
			b.WriteString(ver.String() + " " + string(r) + "\n")
		}
	}
	return b.String()
}

// externalAuthVersions are the external auth schemas of every api-version, oldest first.
func externalAuthVersions(t *testing.T) []api.ExternalAuthVersion {
	t.Helper()
	out := make([]api.ExternalAuthVersion, len(nodePoolVersions))
	for i, name := range nodePoolVersions {
		var ok bool
		if out[i], ok = api.LookupExternalAuth(name); !ok {
			t.Fatalf("%s: external auths not registered", name)
		}
	}
	return out
}
