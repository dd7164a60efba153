package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzShardChangeBody feeds arbitrary bodies to the parser of a mutating route's body: it never
// panics, and what it accepts has a trimmed, bounded, non-empty reason; what it refuses is a
// 400 that names its field when there is one.
func FuzzShardChangeBody(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"reason":"x"}`, `{"reason":" "}`, `{"reason":null}`, `[1]`, `{"reason":"a","status":"offline"}`,
		`{"reason":` + `"` + strings.Repeat("r", 1100) + `"}`, "\x00", `{"reason":"\u0000"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, "/admin/v1/shards/x/cordon", strings.NewReader(body))
		reason, rest, err := readReason(r)
		if err != nil {
			if err.status != http.StatusBadRequest || err.body.Code == "" || err.body.Message == "" {
				t.Fatalf("refusal %+v", err)
			}
			return
		}
		if reason == "" || reason != strings.TrimSpace(reason) || len(reason) > 1024 || string(rest) != body {
			t.Fatalf("accepted %q with reason %q", body, reason)
		}
	})
}

// FuzzAuditQuery feeds arbitrary query strings to the audit route's parameter checks: no panic,
// and every refusal names the parameter at fault.
func FuzzAuditQuery(f *testing.F) {
	for _, s := range []string{"", "since=2026-01-01T00:00:00Z", "pageSize=0", "pageSize=1001", "since=x", "colour=red", "person=%ff", "until=2026-13-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := &http.Request{URL: &url.URL{Path: "/admin/v1/audit", RawQuery: raw}}
		var ae *apiError
		check := func(err error) bool {
			if err == nil {
				return true
			}
			if !errors.As(err, &ae) || ae.status != http.StatusBadRequest || ae.body.Target == "" || !utf8.ValidString(ae.body.Message) && utf8.ValidString(raw) {
				t.Fatalf("refusal %v of %q", err, raw)
			}
			return false
		}
		if !check(knownParams(r, "person", "group", "outcome", "target", "correlationId", "method", "route", "since", "until", "pageSize", "pageToken")) {
			return
		}
		for _, p := range []string{"since", "until"} {
			if _, err := timeParam(r, p); !check(err) {
				return
			}
		}
		if n, err := pageSize(r, 100, 1000); check(err) && (n < 1 || n > 1000) {
			t.Fatalf("pageSize %d accepted from %q", n, raw)
		}
	})
}
