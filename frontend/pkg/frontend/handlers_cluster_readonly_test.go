package frontend

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestCheckClientProvisioningState: a body's properties.provisioningState is refused when it
// differs from the stored one, however its key is written (a JSON escape included), and every
// other body, including a large one and one the decoder will refuse, is left to the decoder.
func TestCheckClientProvisioningState(t *testing.T) {
	large := `{"tags":{"a":"` + strings.Repeat("x", 1<<20) + `"},"properties":{"version":{"id":"4.19.7"}}}`
	for _, tc := range []struct {
		name    string
		body    string
		stored  armdoc.ProvisioningState
		refused bool
	}{
		{"absent", `{"properties":{"version":{"id":"4.19.7"}}}`, armdoc.StateSucceeded, false},
		{"large_without_it", large, armdoc.StateSucceeded, false},
		{"same_as_stored", `{"properties":{"provisioningState":"succeeded"}}`, armdoc.StateSucceeded, false},
		{"different", `{"properties":{"provisioningState":"Failed"}}`, armdoc.StateSucceeded, true},
		{"nothing_stored", `{"properties":{"provisioningState":"Succeeded"}}`, "", true},
		{"key_with_an_escape", `{"properties":{"provisioning\u0053tate":"Failed"}}`, armdoc.StateSucceeded, true},
		{"escaped_properties_key", `{"propertie\u0073":{"provisioningState":"Failed"}}`, armdoc.StateSucceeded, true},
		{"value_with_an_escape", `{"properties":{"provisioningState":"F\u0061iled"}}`, armdoc.StateSucceeded, true},
		{"wrong_case_is_the_decoders", `{"properties":{"ProvisioningState":"Failed"}}`, armdoc.StateSucceeded, false},
		{"elsewhere_is_not_it", `{"tags":{"provisioningState":"Failed"}}`, armdoc.StateSucceeded, false},
		{"not_json", `{"properties":{"provisioningState":"Failed"}`, armdoc.StateSucceeded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkClientProvisioningState([]byte(tc.body), tc.stored)
			if (err != nil) != tc.refused {
				t.Fatalf("refused: %v (%v), want %v", err != nil, err, tc.refused)
			}
		})
	}
}
