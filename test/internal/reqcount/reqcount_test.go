package reqcount

import (
	"maps"
	"testing"
)

func TestParse(t *testing.T) {
	raw := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="hypershift.openshift.io",resource="hostedclusters",scope="resource",subresource="status",verb="PUT",version="v1beta1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 1.5e+01
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="POST",version="v1"} not-a-number
apiserver_request_duration_seconds_count{verb="GET"} 99
`
	got := Parse([]byte(raw))
	want := map[string]float64{
		"POST namespaces":           3,
		"POST namespaces 409":       7,
		"PUT hostedclusters/status": 2,
		"GET (no resource)":         15,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("Parse = %v, want %v", got, want)
	}
}

func TestSince(t *testing.T) {
	before := map[string]float64{"POST namespaces": 1, "GET secrets": 10}
	after := map[string]float64{"POST namespaces": 5, "POST namespaces 409": 6, "GET secrets": 10, "APPLY secrets": 9}
	for _, tc := range []struct {
		name          string
		before, after map[string]float64
		creates, top  int
		want          string
	}{
		{"largest first, 409s counted", before, after, 2, 10,
			"19 in all, 9.5 per create; APPLY secrets 9 (4.5 per create); POST namespaces 409 6 (3.0 per create); POST namespaces 4 (2.0 per create)"},
		{"top cuts the list", before, after, 2, 1, "19 in all, 9.5 per create; APPLY secrets 9 (4.5 per create)"},
		{"nothing served", before, before, 2, 10, "not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Since(tc.before, tc.after, tc.creates, tc.top); got != tc.want {
				t.Errorf("Since = %q\nwant    %q", got, tc.want)
			}
		})
	}
}
