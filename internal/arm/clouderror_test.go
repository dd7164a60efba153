package arm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
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
	if _, err := ParseSystemData("{not json"); err == nil {
		t.Fatal("bad header accepted")
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
