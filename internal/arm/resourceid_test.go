package arm

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestParseResourceID(t *testing.T) {
	const cluster = "/subscriptions/FDEA43EA-0230-4A7D-BDEE-F3AFF2183B1D/resourceGroups/MyRG/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/Dev-1"
	for _, tc := range []struct {
		name     string
		id       string
		wantErr  bool
		sub, rg  string
		provider string
		types    []string
		names    []string
		fullType string
		resName  string
		parent   string
	}{
		{name: "cluster_keeps_casing", id: cluster, sub: "FDEA43EA-0230-4A7D-BDEE-F3AFF2183B1D", rg: "MyRG", provider: "Microsoft.RedHatOpenShift",
			types: []string{"hcpOpenShiftClusters"}, names: []string{"Dev-1"}, fullType: "Microsoft.RedHatOpenShift/hcpOpenShiftClusters", resName: "Dev-1",
			parent: "/subscriptions/FDEA43EA-0230-4A7D-BDEE-F3AFF2183B1D/resourceGroups/MyRG"},
		{name: "keywords_case_insensitive", id: "/SUBSCRIPTIONS/s/RESOURCEGROUPS/rg/PROVIDERS/ns/t/n", sub: "s", rg: "rg", provider: "ns",
			types: []string{"t"}, names: []string{"n"}, fullType: "ns/t", resName: "n", parent: "/SUBSCRIPTIONS/s/RESOURCEGROUPS/rg"},
		{name: "child_resource", id: cluster + "/nodePools/np1", sub: "FDEA43EA-0230-4A7D-BDEE-F3AFF2183B1D", rg: "MyRG", provider: "Microsoft.RedHatOpenShift",
			types: []string{"hcpOpenShiftClusters", "nodePools"}, names: []string{"Dev-1", "np1"},
			fullType: "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools", resName: "np1", parent: cluster},
		{name: "subscription", id: "/subscriptions/abc", sub: "abc", fullType: "Microsoft.Resources/subscriptions", resName: "abc"},
		{name: "resource_group", id: "/subscriptions/abc/resourcegroups/rg", sub: "abc", rg: "rg", fullType: "Microsoft.Resources/resourceGroups", resName: "rg", parent: "/subscriptions/abc"},
		{name: "subscription_scope_provider", id: "/subscriptions/abc/providers/Microsoft.RedHatOpenShift/locations/eastus/hcpOperationStatuses/op1",
			sub: "abc", provider: "Microsoft.RedHatOpenShift", types: []string{"locations", "hcpOperationStatuses"}, names: []string{"eastus", "op1"},
			fullType: "Microsoft.RedHatOpenShift/locations/hcpOperationStatuses", resName: "op1",
			parent: "/subscriptions/abc/providers/Microsoft.RedHatOpenShift/locations/eastus"},
		{name: "trailing_slash_tolerated", id: "/subscriptions/abc/", sub: "abc", fullType: "Microsoft.Resources/subscriptions", resName: "abc"},
		{name: "no_leading_slash", id: "subscriptions/abc", wantErr: true},
		{name: "empty", id: "", wantErr: true},
		{name: "not_subscriptions", id: "/tenants/abc", wantErr: true},
		{name: "no_subscription_id", id: "/subscriptions", wantErr: true},
		{name: "empty_segment", id: "/subscriptions//resourceGroups/rg", wantErr: true},
		{name: "resource_group_without_name", id: "/subscriptions/abc/resourceGroups", wantErr: true},
		{name: "provider_without_namespace", id: "/subscriptions/abc/resourceGroups/rg/providers", wantErr: true},
		{name: "type_without_name", id: "/subscriptions/abc/resourceGroups/rg/providers/ns/t", wantErr: true},
		{name: "unknown_scope_keyword", id: "/subscriptions/abc/things/x", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseResourceID(tc.id)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parsed %q as %+v; want an error", tc.id, r)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse %q: %v", tc.id, err)
			}
			if r.SubscriptionID != tc.sub || r.ResourceGroup != tc.rg || r.Provider != tc.provider ||
				!reflect.DeepEqual(r.Types, tc.types) || !reflect.DeepEqual(r.Names, tc.names) {
				t.Fatalf("parsed %+v", r)
			}
			if r.ResourceType() != tc.fullType || r.Name() != tc.resName || r.String() != tc.id || r.Lower() != strings.ToLower(tc.id) {
				t.Fatalf("type %q name %q string %q", r.ResourceType(), r.Name(), r.String())
			}
			p := r.Parent()
			if tc.parent == "" {
				if p != nil {
					t.Fatalf("parent = %q, want none", p)
				}
			} else if p == nil || p.String() != tc.parent {
				t.Fatalf("parent = %v, want %q", p, tc.parent)
			}
		})
	}
}

func TestResourceIDEqualFold(t *testing.T) {
	a, _ := ParseResourceID("/subscriptions/ABC/resourceGroups/RG")
	b, _ := ParseResourceID("/subscriptions/abc/resourcegroups/rg")
	c, _ := ParseResourceID("/subscriptions/abc/resourcegroups/rg2")
	if !a.EqualFold(b) || a.EqualFold(c) {
		t.Fatal("EqualFold does not compare case-insensitively")
	}
}

func FuzzParseResourceID(f *testing.F) {
	for _, s := range []string{
		"/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c",
		"/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c/nodePools/n",
		"/subscriptions/s", "/subscriptions/s/providers/ns/locations/l/hcpOperationStatuses/x", "/", "//", "/subscriptions/s/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseResourceID(s)
		if err != nil {
			return
		}
		if r.String() != s {
			t.Fatalf("String() = %q, want the input %q", r.String(), s)
		}
		if r.SubscriptionID == "" || len(r.Types) != len(r.Names) {
			t.Fatalf("inconsistent parse of %q: %+v", s, r)
		}
		// Case does not change the structure.
		l, err := ParseResourceID(strings.ToLower(s))
		if err != nil {
			t.Fatalf("lowercase of valid %q does not parse: %v", s, err)
		}
		if !strings.EqualFold(l.ResourceType(), r.ResourceType()) || !strings.EqualFold(l.Name(), r.Name()) || len(l.Types) != len(r.Types) {
			t.Fatalf("lowercase parse differs: %+v vs %+v", l, r)
		}
		// Walking up the parents ends at the subscription, each level a prefix.
		for p, depth := r.Parent(), 0; p != nil; p, depth = p.Parent(), depth+1 {
			if !strings.HasPrefix(s, p.String()) || depth > len(s) {
				t.Fatalf("parent %q of %q is not a prefix", p, s)
			}
		}
	})
}

// TestResourceIDOfManySegmentsIsRefusedCheaply: an ID of a million segments (a 4 MiB string in
// a body) is refused by its segment count, before it is split.
func TestResourceIDOfManySegmentsIsRefusedCheaply(t *testing.T) {
	id := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift" + strings.Repeat("/t/n", 1<<20)
	var err error
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ParseResourceID(id)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "segments") {
		t.Fatalf("got %v, want a refusal naming the segment count", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Fatalf("refusing it allocated %d bytes", alloc)
	}
	// The deepest ID the RP serves (a node pool) is far within the limit.
	if _, err := ParseResourceID("/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c/nodePools/n"); err != nil {
		t.Fatal(err)
	}
}
