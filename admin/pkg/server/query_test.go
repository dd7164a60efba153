package server

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestQueryParameters: every route's query goes through knownParams, which refuses a parameter
// the route does not take and one given twice that the route takes once (a repeated
// ?state=ready&state=error was once narrowed to its first value, silently), with a 400 naming
// it; a parameter marked repeatable ("correlationId...") may come any number of times.
func TestQueryParameters(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		takes       []string
		wantTarget  string // "" when admitted
		wantInMsg   string
	}{
		{"one_value_each_is_admitted", "state=ready&shard=s1", []string{"state", "shard"}, "", ""},
		{"no_query_is_admitted", "", []string{"state"}, "", ""},
		{"a_repeated_parameter_is_400_naming_it", "state=ready&state=error", []string{"state", "shard"}, "state", "once"},
		{"a_repeated_empty_parameter_is_400_too", "state=&state=", []string{"state"}, "state", "once"},
		{"a_repeated_parameter_among_others", "shard=s1&pageToken=a&pageToken=b", []string{"shard", "pageToken"}, "pageToken", "once"},
		{"an_unknown_parameter_is_400_naming_it", "stat=ready", []string{"state"}, "stat", "unknown"},
		{"the_first_problem_in_name_order_is_named", "zz=1&state=a&state=b", []string{"state"}, "state", "once"},
		{"a_repeatable_parameter_may_repeat", "correlationId=a&correlationId=b", []string{"correlationId..."}, "", ""},
		{"a_repeatable_parameter_is_named_plainly", "x=1", []string{"correlationId..."}, "x", "takes correlationId (repeatable)"},
		{"a_route_without_parameters_refuses_any", "state=a", nil, "state", "takes none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{URL: &url.URL{Path: "/admin/v1/clusters", RawQuery: tc.query}}
			err := knownParams(r, tc.takes...)
			if tc.wantTarget == "" {
				if err != nil {
					t.Fatalf("?%s: %v, want admitted", tc.query, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("?%s admitted, want a 400 naming %s", tc.query, tc.wantTarget)
			}
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != http.StatusBadRequest || ae.body.Target != tc.wantTarget || !strings.Contains(ae.body.Message, tc.wantInMsg) {
				t.Fatalf("?%s: %v; want 400 target %q, a message with %q", tc.query, err, tc.wantTarget, tc.wantInMsg)
			}
		})
	}
}
