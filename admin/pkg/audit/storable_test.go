package audit

import (
	"context"
	"testing"
)

// TestAppendRecordsNULAndInvalidUTF8 pins that a record whose strings hold what PostgreSQL's
// text refuses (a NUL, bytes that are not UTF-8: a path /clusters/a%00b, a reason with a NUL)
// is written, those bytes escaped as \xNN, and is found again by a query for the same value.
// Refused, the record failed and the admin API answered 503 to any caller, credential or not.
func TestAppendRecordsNULAndInvalidUTF8(t *testing.T) {
	_, _, serviceDSN := installed(t)
	ctx := context.Background()
	l, err := Open(ctx, serviceDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	in := Entry{RequestID: "r1", CorrelationID: "c\x00", Person: "a\x00b", Group: "g\xff", Subject: "CN=\xc3",
		Method: "GET", Route: "GET /admin/v1/clusters/{id}", Path: "/admin/v1/clusters/a\x00b\xff\xfeé",
		Target: "a\x00b", Reason: "why\x00 ☃", Outcome: Unauthenticated, Status: 401}
	if _, err := l.Append(ctx, in); err != nil {
		t.Fatalf("Append: %v", err)
	}
	got, _, err := l.Query(ctx, Filter{Person: "a\x00b"})
	if err != nil || len(got) != 1 {
		t.Fatalf("Query by the person as sent: %d records, %v; want 1", len(got), err)
	}
	for _, c := range []struct{ field, got, want string }{
		{"correlationId", got[0].CorrelationID, `c\x00`},
		{"person", got[0].Person, `a\x00b`},
		{"group", got[0].Group, `g\xff`},
		{"subject", got[0].Subject, `CN=\xc3`},
		{"path", got[0].Path, `/admin/v1/clusters/a\x00b\xff\xfeé`},
		{"target", got[0].Target, `a\x00b`},
		{"reason", got[0].Reason, `why\x00 ☃`},
		{"route", got[0].Route, in.Route},
	} {
		if c.got != c.want {
			t.Errorf("%s stored as %q, want %q", c.field, c.got, c.want)
		}
	}
}

func TestStorable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"é☃😀", "é☃😀"},
		{"\x00", `\x00`},
		{"a\x00\x00b", `a\x00\x00b`},
		{"\xff\xfe", `\xff\xfe`},
		{"\xe2\x98", `\xe2\x98`},         // a cut rune: each byte
		{"\xed\xa0\x80", `\xed\xa0\x80`}, // a surrogate, not UTF-8
		{`\x00`, `\x00`},                 // already the escape: kept as written
	} {
		if got := Storable(c.in); got != c.want {
			t.Errorf("Storable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
