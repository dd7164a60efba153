package arm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestWriteCloudError(t *testing.T) {
	e := NewCloudError(http.StatusServiceUnavailable, CodeServiceUnavailable, "properties.x", "no capacity in %s", "eastus")
	e.RetryAfter = 30
	rec := httptest.NewRecorder()
	WriteCloudError(rec, e)
	if rec.Code != 503 || rec.Header().Get("x-ms-error-code") != "ServiceUnavailable" || rec.Header().Get("Retry-After") != "30" ||
		rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d headers %v", rec.Code, rec.Header())
	}
	var body struct {
		Error struct{ Code, Message, Target string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Code != "ServiceUnavailable" || body.Error.Message != "no capacity in eastus" || body.Error.Target != "properties.x" {
		t.Fatalf("body %s", rec.Body)
	}
}

func TestMultiple(t *testing.T) {
	if Multiple(nil) != nil {
		t.Fatal("Multiple(nil) != nil")
	}
	one := NewCloudError(400, CodeInvalidRequestContent, "a", "bad a")
	if got, _ := AsCloudError(Multiple([]*CloudError{one})); got != one {
		t.Fatal("one error is not returned as is")
	}
	m, _ := AsCloudError(Multiple([]*CloudError{one, NewCloudError(400, CodeInvalidRequestContent, "b", "bad b")}))
	if m.Code != CodeMultipleErrorsOccurred || m.StatusCode != 400 || len(m.Details) != 2 || m.Details[1].Target != "b" {
		t.Fatalf("Multiple = %+v", m)
	}
	wrapped := fmt.Errorf("ctx: %w", m)
	if got, ok := AsCloudError(wrapped); !ok || got != m {
		t.Fatal("AsCloudError does not unwrap")
	}
}

func TestSystemData(t *testing.T) {
	sd, err := ParseSystemData(`{"createdBy":"a@b","createdByType":"User","createdAt":"2024-03-27T14:57:32.578Z","lastModifiedBy":"a@b","lastModifiedByType":"User","lastModifiedAt":"2024-03-27T14:57:32.578Z"}`)
	if err != nil || sd.CreatedBy != "a@b" || sd.CreatedAt == nil || !sd.CreatedAt.Equal(time.Date(2024, 3, 27, 14, 57, 32, 578e6, time.UTC)) {
		t.Fatalf("parse: %+v %v", sd, err)
	}
	for _, bad := range []string{"{not json", `{"createdBy":"a\u0000b"}`, `{"lastModifiedByType":"\u0000"}`} {
		if _, err := ParseSystemData(bad); err == nil {
			t.Fatalf("bad header %s accepted", bad)
		}
	}
	if sd, err := ParseSystemData(""); sd != nil || err != nil {
		t.Fatal("empty header should give nil, nil")
	}
	later := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	m := sd.Merge(&SystemData{CreatedBy: "other", LastModifiedBy: "c@d", LastModifiedByType: "Application", LastModifiedAt: &later})
	if m.CreatedBy != "a@b" || m.LastModifiedBy != "c@d" || !m.LastModifiedAt.Equal(later) {
		t.Fatalf("merge kept %+v", m)
	}
}

// TestNewCloudErrorClipsWhatACallerSent: a message or target that repeats a value the caller sent
// (a 3 MB base domain prefix, a 100,000-digit number) is cut, so a refusal is never larger than
// what it refuses, in the answer or in the log line that records it; a usual one is as formatted.
func TestNewCloudErrorClipsWhatACallerSent(t *testing.T) {
	huge := strings.Repeat("a", 3<<20)
	for _, tc := range []struct {
		name, target, value string
		cut                 bool
	}{
		{"usual", "properties.dns.baseDomainPrefix", "abc", false},
		{"at_the_limit", strings.Repeat("t", MaxErrorTextLen), strings.Repeat("m", MaxErrorTextLen-len("Invalid value ''.")), false},
		{"huge_value", "properties.dns.baseDomainPrefix", huge, true},
		{"huge_target", "tags[" + huge + "]", "x", true},
		{"multibyte", "t", strings.Repeat("é", MaxErrorTextLen), true},
	} {
		e := NewCloudError(400, CodeInvalidRequestContent, tc.target, "Invalid value '%s'.", tc.value)
		whole := fmt.Sprintf("Invalid value '%s'.", tc.value)
		if !tc.cut {
			if e.Message != whole || e.Target != tc.target {
				t.Errorf("%s: changed: %.80q %.80q", tc.name, e.Message, e.Target)
			}
			continue
		}
		for _, s := range []string{e.Message, e.Target} {
			if len(s) > MaxErrorTextLen+64 || !utf8.ValidString(s) {
				t.Errorf("%s: %d bytes (valid UTF-8 %v), want at most about %d", tc.name, len(s), utf8.ValidString(s), MaxErrorTextLen)
			}
		}
		if len(whole) > MaxErrorTextLen && !strings.Contains(e.Message, "characters cut") {
			t.Errorf("%s: the message does not say it was cut: %.120q", tc.name, e.Message)
		}
	}
}
