package main

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// TestExplain: each refusal of the admin API is followed by what to do, in hcpctl's words:
// the flag to fix for a field, and for a 409 whether retrying helps.
func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       *adminapi.Error
		want, not string
	}{
		{"bad_shard_filter_names_the_flag", &adminapi.Error{Status: 400, Code: adminapi.CodeInvalidRequest, Target: "shard", Message: `no shard "x"`}, "Fix --shard.", ""},
		{"bad_page_token_names_the_flag", &adminapi.Error{Status: 400, Code: adminapi.CodeInvalidRequest, Target: "pageToken", Message: "x"}, "Fix --page-token.", ""},
		{"busy_says_retry", &adminapi.Error{Status: 409, Code: adminapi.CodeBusy, Message: "x"}, "retry once it has ended", "will not help"},
		{"not_cancelable_says_pause", &adminapi.Error{Status: 409, Code: adminapi.CodeNotCancelable, Message: "x"}, "Retrying will not help: 'hcpctl cluster pause", "retry once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := explain(tc.err)
			if !strings.Contains(got, tc.want) || (tc.not != "" && strings.Contains(got, tc.not)) {
				t.Fatalf("explain = %q, want it to say %q and not %q", got, tc.want, tc.not)
			}
		})
	}
}
