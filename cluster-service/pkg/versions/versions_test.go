package versions

import (
	"strings"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	c, err := Parse([]byte(`{"channelGroups":{
		"stable":[
			{"id":"4.18.2","enabled":true},
			{"id":"4.18.10","enabled":true},
			{"id":"4.18.11","enabled":false},
			{"id":"4.19.1","enabled":true,"endOfLife":"2026-01-01T00:00:00Z"},
			{"id":"4.19.2","enabled":true,"endOfLife":"2030-01-01T00:00:00Z"}],
		"candidate":[{"id":"4.20.0","enabled":true}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, group, id, want, wantErr string
	}{
		{"minor_resolves_to_newest_enabled_patch_numerically", "stable", "4.18", "4.18.10", ""},
		{"full_version_resolves_to_itself", "stable", "4.18.2", "4.18.2", ""},
		{"disabled_version_is_refused", "stable", "4.18.11", "", "not available"},
		{"end_of_life_version_is_skipped", "stable", "4.19", "4.19.2", ""},
		{"end_of_life_full_version_is_refused", "stable", "4.19.1", "", "available: 4.18.10, 4.18.2, 4.19.2"},
		{"version_of_another_group_is_refused", "stable", "4.20", "", "not available in channel group stable"},
		{"unknown_group_names_the_groups", "fast", "4.18", "", "use one of candidate, stable"},
		{"garbage_is_refused", "stable", "4.x", "", "must look like"},
		{"major_only_is_refused", "stable", "4", "", "must look like"},
		{"leading_zero_is_refused", "stable", "4.018", "", "must look like"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Resolve(tc.group, tc.id, now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Resolve(%s, %s) = %q, %v; want error containing %q", tc.group, tc.id, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Resolve(%s, %s) = %q, %v; want %q", tc.group, tc.id, got, err, tc.want)
			}
		})
	}
}

func TestDefaultCatalogueIsValid(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatalf("default catalogue: %v", err)
	}
	if _, err := c.Resolve("stable", "4.19", time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("default catalogue cannot resolve stable 4.19: %v", err)
	}
}

func TestParseRejectsBadCatalogues(t *testing.T) {
	for name, in := range map[string]string{
		"empty":         `{}`,
		"unknown_field": `{"channelGroups":{"stable":[{"id":"4.1.1","enabled":true,"eol":"x"}]}}`,
		"short_version": `{"channelGroups":{"stable":[{"id":"4.1","enabled":true}]}}`,
		"duplicate":     `{"channelGroups":{"stable":[{"id":"4.1.1"},{"id":"4.1.1"}]}}`,
		"not_json":      `channelGroups: {}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(in)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestCompareAndMinorsBehind(t *testing.T) {
	for _, tc := range []struct {
		a, b   string
		cmp    int
		minors int
	}{
		{"4.19.7", "4.19.7", 0, 0},
		{"4.19.7", "4.19.17", -1, 0},
		{"4.20.0", "4.19.17", 1, -1},
		{"4.17.44", "4.19.17", -1, 2},
	} {
		if c, err := Compare(tc.a, tc.b); err != nil || c != tc.cmp {
			t.Errorf("Compare(%s, %s) = %d, %v; want %d", tc.a, tc.b, c, err, tc.cmp)
		}
		if n, ok := MinorsBehind(tc.a, tc.b); !ok || n != tc.minors {
			t.Errorf("MinorsBehind(%s, %s) = %d, %v; want %d", tc.a, tc.b, n, ok, tc.minors)
		}
	}
	if _, err := Compare("4.19", "4.19.1"); err == nil {
		t.Error("Compare accepted a version without a patch")
	}
	if _, ok := MinorsBehind("5.0.0", "4.19.1"); ok {
		t.Error("MinorsBehind across majors")
	}
}
