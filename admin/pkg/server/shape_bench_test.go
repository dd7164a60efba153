package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/serverlimits"
)

// bodyShapes are admin request bodies at maxBody, one per shape a caller can choose.
func bodyShapes() map[string]string {
	fill := func(prefix, item, suffix string) string {
		n := (maxBody - len(prefix) - len(suffix)) / len(item)
		return prefix + strings.TrimSuffix(strings.Repeat(item, n), ",") + suffix
	}
	n := (maxBody - 16) / 2
	var keys strings.Builder
	keys.WriteString(`{"reason":"r"`)
	for i := 0; keys.Len() < maxBody-24; i++ {
		fmt.Fprintf(&keys, `,"k%d":1`, i)
	}
	keys.WriteString(`}`)
	return map[string]string{
		"deep_arrays":   `{"reason":"r","x":` + strings.Repeat("[", n/2) + strings.Repeat("]", n/2) + `}`,
		"many_keys":     keys.String(),
		"long_string":   `{"reason":"` + strings.Repeat("r", maxBody-16) + `"}`,
		"long_array":    fill(`{"reason":"r","x":[`, `{},`, `]}`),
		"repeated_keys": fill(`{`, `"reason":"r",`, `}`),
	}
}

// BenchmarkAdminBodiesAtTheLimit reads each shape with the admin API's body parsers: the
// reason of a mutating route, and the strict decoder of the day-2 routes.
func BenchmarkAdminBodiesAtTheLimit(b *testing.B) {
	for name, body := range bodyShapes() {
		if len(body) > maxBody {
			b.Fatalf("%s: %d bytes, over the limit", name, len(body))
		}
		for _, p := range []struct {
			name  string
			parse func(r *http.Request) error
		}{
			{"readReason", func(r *http.Request) error { _, _, err := readReason(r); return err }},
			{"parseScale", func(r *http.Request) error { _, err := parseScale(r); return err }},
		} {
			b.Run(name+"/"+p.name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					_ = p.parse(httptest.NewRequest(http.MethodPost, "/admin/v1/scale/x", strings.NewReader(body)))
				}
			})
		}
	}
}

// BenchmarkAdminQueriesAtTheLimit parses query strings as long as the listener's header limit
// lets through (serverlimits.API().MaxHeaderBytes) with the audit and cluster list parsers.
func BenchmarkAdminQueriesAtTheLimit(b *testing.B) {
	limit := serverlimits.API().MaxHeaderBytes
	fill := func(item string) string {
		return strings.TrimSuffix(strings.Repeat(item, limit/len(item)), "&")
	}
	for name, raw := range map[string]string{
		"many_known_params":   fill("person=a&"),
		"many_unknown_params": fill("x=a&"),
		"long_value":          "person=" + strings.Repeat("a", limit-7),
		"escapes":             "person=" + strings.Repeat("%ff", (limit-7)/3),
	} {
		for _, p := range []struct {
			name  string
			parse func(r *http.Request) error
		}{
			{"parseAuditQuery", func(r *http.Request) error { _, err := parseAuditQuery(r, 100); return err }},
			{"parseClusterFilter", func(r *http.Request) error { _, err := parseClusterFilter(r); return err }},
		} {
			b.Run(name+"/"+p.name, func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					_ = p.parse(&http.Request{URL: &url.URL{Path: "/admin/v1/audit", RawQuery: raw}})
				}
			})
		}
	}
}
