package versions

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	c, err := Parse([]byte(`{"channelGroups":{
		"stable":{"versions":[
			{"id":"4.18.2","enabled":true,"endOfLife":"2030-01-01T00:00:00Z"},
			{"id":"4.18.10","enabled":true,"endOfLife":"2030-01-01T00:00:00Z"},
			{"id":"4.18.11","enabled":false,"endOfLife":"2030-01-01T00:00:00Z"},
			{"id":"4.19.1","enabled":true,"endOfLife":"2026-01-01T00:00:00Z"},
			{"id":"4.19.2","enabled":true,"endOfLife":"2030-01-01T00:00:00Z"}]},
		"candidate":{"versions":[{"id":"4.20.0","enabled":true,"endOfLife":"2030-01-01T00:00:00Z"}]}}}`))
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
	const eol = `"endOfLife":"2030-01-01T00:00:00Z"`
	for _, tc := range []struct{ name, in, wantErr string }{
		{"empty", `{}`, "no channel groups"},
		{"old_list_format", `{"channelGroups":{"stable":[{"id":"4.1.1","enabled":true}]}}`, "decode"},
		{"unknown_field", `{"channelGroups":{"stable":{"versions":[{"id":"4.1.1","enabled":true,"eol":"x"}]}}}`, "unknown field"},
		{"short_version", `{"channelGroups":{"stable":{"versions":[{"id":"4.1",` + eol + `}]}}}`, `"4.1" must look like`},
		{"duplicate", `{"channelGroups":{"stable":{"versions":[{"id":"4.1.1",` + eol + `},{"id":"4.1.1",` + eol + `}]}}}`, "lists 4.1.1 twice"},
		{"no_end_of_life", `{"channelGroups":{"stable":{"versions":[{"id":"4.1.1"}]}}}`, "4.1.1 has no endOfLife"},
		{"empty_group", `{"channelGroups":{"stable":{"versions":[]}}}`, "stable has no versions"},
		{"bad_group_name", `{"channelGroups":{"Stable":{"versions":[{"id":"4.1.1",` + eol + `}]}}}`, `"Stable" must be lowercase`},
		{"edge_to_unknown_version", `{"channelGroups":{"stable":{"versions":[{"id":"4.1.1",` + eol + `,"upgrades":["4.1.2"]}]}}}`, "4.1.1 → 4.1.2 leads to a version the group does not list"},
		{"edge_downgrades", `{"channelGroups":{"stable":{"versions":[{"id":"4.1.1",` + eol + `},{"id":"4.1.2",` + eol + `,"upgrades":["4.1.1"]}]}}}`, "4.1.2 → 4.1.1 is not an upgrade"},
		{"edge_skips_minor", `{"channelGroups":{"stable":{"versions":[{"id":"4.1.1",` + eol + `,"upgrades":["4.3.0"]},{"id":"4.3.0",` + eol + `}]}}}`, "skips 1 minor versions"},
		{"edge_listed_twice", `{"channelGroups":{"stable":{"versions":[{"id":"4.1.1",` + eol + `,"upgrades":["4.1.2","4.1.2"]},{"id":"4.1.2",` + eol + `}]}}}`, "listed twice"},
		{"edge_changes_major", `{"channelGroups":{"eus":{"allowMinorSkips":true,"versions":[{"id":"4.1.1",` + eol + `,"upgrades":["5.0.0"]},{"id":"5.0.0",` + eol + `}]}}}`, "changes the major version"},
		{"not_json", `channelGroups: {}`, "decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse = %v; want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseAcceptsMinorSkipsWhenTheGroupAllowsThem(t *testing.T) {
	c, err := Parse([]byte(`{"channelGroups":{"eus":{"allowMinorSkips":true,"versions":[
		{"id":"4.16.1","enabled":true,"endOfLife":"2030-01-01T00:00:00Z","upgrades":["4.18.1"]},
		{"id":"4.18.1","enabled":true,"endOfLife":"2030-01-01T00:00:00Z"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ResolveUpgrade("eus", "4.16.1", "4.18", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || got != "4.18.1" {
		t.Fatalf("ResolveUpgrade(eus, 4.16.1, 4.18) = %q, %v; want 4.18.1", got, err)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := t.TempDir() + "/versions.json"
	if err := os.WriteFile(path, []byte(`{"channelGroups":{"stable":{"versions":[{"id":"4.1.1"}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "no endOfLife") {
		t.Fatalf("Load = %v; want an error naming %s and the problem", err, path)
	}
}

func TestResolveUpgrade(t *testing.T) {
	c, err := Parse([]byte(`{"channelGroups":{
		"stable":{"versions":[
			{"id":"4.18.26","enabled":true,"endOfLife":"2030-01-01T00:00:00Z","upgrades":["4.18.27","4.19.16"]},
			{"id":"4.18.27","enabled":true,"endOfLife":"2030-01-01T00:00:00Z","upgrades":["4.19.16","4.19.17"]},
			{"id":"4.19.16","enabled":true,"endOfLife":"2030-01-01T00:00:00Z","upgrades":["4.19.17","4.19.18","4.20.3"]},
			{"id":"4.19.17","enabled":true,"endOfLife":"2030-01-01T00:00:00Z","upgrades":["4.20.3"]},
			{"id":"4.19.18","enabled":false,"endOfLife":"2030-01-01T00:00:00Z"},
			{"id":"4.20.3","enabled":true,"endOfLife":"2030-01-01T00:00:00Z"},
			{"id":"4.20.4","enabled":true,"endOfLife":"2030-01-01T00:00:00Z"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, from, to, want, wantErr string
	}{
		{"minor_upgrade_takes_the_newest_edge", "4.18.27", "4.19", "4.19.17", ""},
		{"minor_upgrade_with_only_one_edge", "4.18.26", "4.19", "4.19.16", ""},
		{"patch_upgrade_along_an_edge", "4.19.16", "4.19.17", "4.19.17", ""},
		{"same_minor_is_no_change", "4.19.16", "4.19", "4.19.16", ""},
		{"same_version_is_no_change", "4.19.16", "4.19.16", "4.19.16", ""},
		{"next_minor", "4.19.17", "4.20", "4.20.3", ""},
		{"newer_version_without_edge_is_refused", "4.19.17", "4.20.4", "", "no upgrade edge from 4.19.17 to it; 4.19.17 can be upgraded to 4.20.3"},
		{"disabled_target_is_refused", "4.19.16", "4.19.18", "", "not available in channel group stable"},
		{"downgrade_minor_is_refused", "4.19.17", "4.18", "", "cannot downgrade from 4.19.17 to 4.18"},
		{"downgrade_patch_is_refused", "4.19.17", "4.19.16", "", "cannot downgrade from 4.19.17 to 4.19.16"},
		{"skipping_a_minor_is_refused", "4.18.27", "4.20", "", "skips minor version 4.19; upgrade to 4.19 first"},
		{"unknown_group", "4.19.17", "4.20", "", `channel group "fast" does not exist`},
		{"garbage_target", "4.19.17", "latest", "", "must look like"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := "stable"
			if tc.name == "unknown_group" {
				group = "fast"
			}
			got, err := c.ResolveUpgrade(group, tc.from, tc.to, now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ResolveUpgrade(%s → %s) = %q, %v; want error containing %q", tc.from, tc.to, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveUpgrade(%s → %s) = %q, %v; want %q", tc.from, tc.to, got, err, tc.want)
			}
		})
	}
}

func TestVersionsAreSortedNumerically(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	vs, ok := c.Versions("stable")
	if !ok || len(vs) < 2 {
		t.Fatalf("Versions(stable) = %v, %v", vs, ok)
	}
	for i := 1; i < len(vs); i++ {
		if r, _ := Compare(vs[i-1].ID, vs[i].ID); r >= 0 {
			t.Fatalf("%s listed before %s", vs[i-1].ID, vs[i].ID)
		}
	}
	if _, ok := c.Versions("nope"); ok {
		t.Fatal("unknown group listed")
	}
	if v, ok := c.Get("stable", "4.19.17"); !ok || len(v.Upgrades) == 0 {
		t.Fatalf("Get(stable, 4.19.17) = %+v, %v; want it with its edges", v, ok)
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

func TestMinor(t *testing.T) {
	for _, c := range []struct {
		id, want string
		ok       bool
	}{
		{"4.19", "4.19", true},
		{"4.19.7", "4.19", true},
		{"4.20.0", "4.20", true},
		{"", "", false},
		{"4", "", false},
		{"4.19.7.1", "", false},
		{"04.19", "", false},
		{"4.19.x", "", false},
		{"v4.19", "", false},
	} {
		got, ok := Minor(c.id)
		if got != c.want || ok != c.ok {
			t.Errorf("Minor(%q) = %q, %v; want %q, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}
