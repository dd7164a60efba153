package armpath_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// oddStoredNodePools are stored node pool documents whose values have another shape than the
// specification's. A body is decoded strictly into its api-version's type first, so only a
// stored document (written by an older release, or by hand) can hold one.
var oddStoredNodePools = []struct {
	name, doc string
	path      string // the ARM path the error names
}{
	{"replicas_a_fraction", `{"properties":{"replicas":1.5}}`, "properties.replicas"},
	{"replicas_a_string", `{"properties":{"replicas":"3"}}`, "properties.replicas"},
	{"replicas_an_object", `{"properties":{"replicas":{"n":3}}}`, "properties.replicas"},
	{"replicas_a_list", `{"properties":{"replicas":[3]}}`, "properties.replicas"},
	{"replicas_beyond_int32", `{"properties":{"replicas":4294967296}}`, "properties.replicas"},
	{"auto_repair_a_string", `{"properties":{"autoRepair":"true"}}`, "properties.autoRepair"},
	{"version_id_a_number", `{"properties":{"version":{"id":4.19}}}`, "properties.version.id"},
	{"version_a_string", `{"properties":{"version":"4.19"}}`, "properties.version"},
	{"properties_a_list", `{"properties":[1]}`, "properties"},
	{"platform_a_string", `{"properties":{"platform":"big"}}`, "properties.platform"},
	{"disk_type_a_number", `{"properties":{"platform":{"osDisk":{"diskType":1}}}}`, "properties.platform.osDisk.diskType"},
	{"labels_an_object", `{"properties":{"labels":{"a":"b"}}}`, "properties.labels"},
	{"a_label_null", `{"properties":{"labels":[null]}}`, "properties.labels"},
	{"a_label_value_a_number", `{"properties":{"labels":[{"key":"a","value":1}]}}`, "properties.labels"},
	{"taints_an_object", `{"properties":{"taints":{"key":"k"}}}`, "properties.taints"},
	{"taints_a_string", `{"properties":{"taints":"k=v"}}`, "properties.taints"},
	{"a_taint_null", `{"properties":{"taints":[null]}}`, "properties.taints"},
	{"a_taint_a_number", `{"properties":{"taints":[7]}}`, "properties.taints"},
	{"a_taint_key_an_object", `{"properties":{"taints":[{"key":{"k":1}}]}}`, "properties.taints.key"},
	{"autoscaling_max_a_bool", `{"properties":{"autoScaling":{"min":1,"max":true}}}`, "properties.autoScaling.max"},
}

// readStored reads a stored node pool document as the frontend does, turning a panic into an
// error of the test.
func readStored(doc string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	var np api.NodePool
	if jerr := json.Unmarshal([]byte(doc), &np); jerr != nil {
		return fmt.Errorf("refused: %w", jerr)
	}
	return nil
}

// TestStoredNodePoolOfOddShapeIsAnError: a stored node pool document whose value has another
// shape than its property's is refused with an error naming the property's ARM path; it never
// panics. null stays "not set".
func TestStoredNodePoolOfOddShapeIsAnError(t *testing.T) {
	for _, tc := range oddStoredNodePools {
		t.Run(tc.name, func(t *testing.T) {
			err := readStored(tc.doc)
			if err == nil || !strings.HasPrefix(err.Error(), "refused: ") || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("reading %s: %v; want it refused naming %s", tc.doc, err, tc.path)
			}
		})
	}
	for _, tc := range []struct{ name, doc string }{
		{"replicas_null_is_not_set", `{"properties":{"replicas":null}}`},
		{"platform_null_is_not_set", `{"properties":{"platform":null}}`},
		{"an_empty_label_list", `{"properties":{"labels":[]}}`},
		{"a_label_without_a_value", `{"properties":{"labels":[{"key":"a"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := readStored(tc.doc); err != nil {
				t.Fatalf("reading %s: %v; want it read", tc.doc, err)
			}
		})
	}
}

// FuzzStoredNodePoolDocument: reading any stored node pool document gives a node pool or an
// error, never a panic.
func FuzzStoredNodePoolDocument(f *testing.F) {
	f.Add([]byte(everyNodePoolProperty))
	for _, tc := range oddStoredNodePools {
		f.Add([]byte(tc.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var np api.NodePool
		_ = json.Unmarshal(doc, &np)
	})
}

// oddStoredExternalAuths are stored external auth documents whose values have another shape
// than the specification's (only a stored document can hold one: a body is decoded strictly).
var oddStoredExternalAuths = []struct {
	name, doc string
	path      string // the ARM path the error names
}{
	{"properties_a_list", `{"properties":[1]}`, "properties"},
	{"issuer_a_string", `{"properties":{"issuer":"https://i"}}`, "properties.issuer"},
	{"url_a_number", `{"properties":{"issuer":{"url":1}}}`, "properties.issuer.url"},
	{"audiences_a_string", `{"properties":{"issuer":{"audiences":"a"}}}`, "properties.issuer.audiences"},
	{"an_audience_null", `{"properties":{"issuer":{"audiences":[null]}}}`, "properties.issuer.audiences"},
	{"clients_an_object", `{"properties":{"clients":{"clientId":"a"}}}`, "properties.clients"},
	{"a_client_a_number", `{"properties":{"clients":[7]}}`, "properties.clients"},
	{"component_a_string", `{"properties":{"clients":[{"component":"console"}]}}`, "properties.clients.component"},
	{"claim_a_list", `{"properties":{"claim":[]}}`, "properties.claim"},
	{"username_a_string", `{"properties":{"claim":{"mappings":{"username":"sub"}}}}`, "properties.claim.mappings.username"},
	{"prefix_policy_a_bool", `{"properties":{"claim":{"mappings":{"username":{"prefixPolicy":true}}}}}`, "properties.claim.mappings.username.prefixPolicy"},
	{"rules_an_object", `{"properties":{"claim":{"validationRules":{"type":"RequiredClaim"}}}}`, "properties.claim.validationRules"},
	{"required_claim_a_string", `{"properties":{"claim":{"validationRules":[{"requiredClaim":"tid"}]}}}`, "properties.claim.validationRules.requiredClaim"},
}

// readStoredExternalAuth reads a stored external auth document as the frontend does, turning a
// panic into an error of the test.
func readStoredExternalAuth(doc []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	var ea api.ExternalAuth
	if jerr := json.Unmarshal(doc, &ea); jerr != nil {
		return fmt.Errorf("refused: %w", jerr)
	}
	return nil
}

// TestStoredExternalAuthOfOddShapeIsAnError: a stored external auth document whose value has
// another shape than its property's is refused with an error naming the property's ARM path;
// it never panics.
func TestStoredExternalAuthOfOddShapeIsAnError(t *testing.T) {
	for _, tc := range oddStoredExternalAuths {
		t.Run(tc.name, func(t *testing.T) {
			err := readStoredExternalAuth([]byte(tc.doc))
			if err == nil || !strings.HasPrefix(err.Error(), "refused: ") || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("reading %s: %v; want it refused naming %s", tc.doc, err, tc.path)
			}
		})
	}
}

// FuzzStoredExternalAuthDocument: reading any stored external auth document gives an external
// auth or an error, never a panic, and what reads renders and is written back.
func FuzzStoredExternalAuthDocument(f *testing.F) {
	f.Add([]byte(`{"properties":{"issuer":{"url":"https://i","audiences":["a"]},"clients":[{"component":{"name":"c","authClientNamespace":"n"},"clientId":"a","type":"Public"}],
		"claim":{"mappings":{"username":{"claim":"sub","prefixPolicy":"None"},"groups":{"claim":"g"}},"validationRules":[{"type":"RequiredClaim","requiredClaim":{"claim":"c","requiredValue":"v"}}]}}}`))
	for _, tc := range oddStoredExternalAuths {
		f.Add([]byte(tc.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var ea api.ExternalAuth
		if json.Unmarshal(doc, &ea) != nil {
			return
		}
		if _, err := json.Marshal(&ea); err != nil {
			t.Fatalf("write %s: %v", doc, err)
		}
	})
}
