package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
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

// FuzzAuditQuery feeds arbitrary query strings to the audit query's parser (the API's and the
// portal's): no panic, every refusal names the parameter at fault, and what it accepts has a
// known outcome and a page size within bounds.
func FuzzAuditQuery(f *testing.F) {
	for _, s := range []string{"", "since=2026-01-01T00:00:00Z", "pageSize=0", "pageSize=1001", "since=x", "colour=red", "person=%ff", "until=2026-13-01T00:00:00Z", "outcome=allowed&method=post", "outcome=Allowed", "outcome="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := &http.Request{URL: &url.URL{Path: "/admin/v1/audit", RawQuery: raw}}
		f, err := parseAuditQuery(r, 100)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != http.StatusBadRequest || ae.body.Target == "" || !utf8.ValidString(ae.body.Message) && utf8.ValidString(raw) {
				t.Fatalf("refusal %v of %q", err, raw)
			}
			return
		}
		if f.Limit < 1 || f.Limit > 1000 || (f.Outcome != "" && !slices.Contains(auditOutcomes, f.Outcome)) {
			t.Fatalf("%q accepted as %+v", raw, f)
		}
	})
}

// FuzzDayTwoRequest feeds arbitrary bodies and If-Match headers to the parsers of the scale,
// upgrade, pause and resume routes: no panic; a refusal is a 400 naming its field; an accepted
// scale has exactly one of replicas and autoscaling, an accepted upgrade a version, a pause a
// value and a resume none, an accepted If-Match a positive revision (and none only when the
// header is blank).
func FuzzDayTwoRequest(f *testing.F) {
	for _, s := range [][2]string{{`{"replicas":3,"reason":"r"}`, `"7"`}, {`{"autoscaling":{"min":1,"max":2},"reason":"r"}`, ``},
		{`{"replicas":3,"autoscaling":{"min":1,"max":2}}`, `W/"3"`}, {`{"version":"4.20.3","reason":"r"}`, `abc`}, {`{"version":" "}`, `"-1"`},
		{`{"replicas":99999999999}`, `"0"`}, {`{} {}`, ` `}, {`null`, `"9223372036854775808"`}, {`{"replica":1}`, `""`}, {`{"until":"2030-01-02T15:04:05Z","reason":"r"}`, ``}, {`{"until":"","reason":"r"}`, `"2"`}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, body, ifMatch string) {
		refusal := func(err error) bool {
			var ae *apiError
			if err == nil {
				return false
			}
			if !errors.As(err, &ae) || ae.status != http.StatusBadRequest || ae.body.Target == "" || ae.body.Message == "" {
				t.Fatalf("refusal %v of %q / %q", err, body, ifMatch)
			}
			return true
		}
		req := func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/admin/v1/scale/x", strings.NewReader(body))
			r.Header.Set("If-Match", ifMatch)
			return r
		}
		if sc, err := parseScale(req()); !refusal(err) && (sc.Replicas == nil) == (sc.Autoscaling == nil) {
			t.Fatalf("scale %q accepted as %+v", body, sc)
		}
		if up, err := parseUpgrade(req()); !refusal(err) && strings.TrimSpace(up.Version) == "" {
			t.Fatalf("upgrade %q accepted without a version", body)
		}
		for _, resume := range []bool{false, true} {
			if _, until, err := parsePause(req(), resume); !refusal(err) && (until == "") != resume {
				t.Fatalf("pause (resume %t) %q accepted as %q", resume, body, until)
			}
		}
		rev, err := ifMatchRevision(req())
		if !refusal(err) && (rev < 0 || (rev == 0) != (strings.TrimSpace(req().Header.Get("If-Match")) == "")) {
			t.Fatalf("If-Match %q read as revision %d", ifMatch, rev)
		}
	})
}
