package frontend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// The properties every ARM body fuzzer checks on every answer (checkARMAnswer), and on a
// create the round trip through GET (checkRoundTrip). Each is a separate, named check so a
// failure says which promise broke.

// serve sends one request straight to the handler chain and returns its answer.
func serve(e *env, method, target string, body []byte) response {
	var req = httptest.NewRequest(method, target, nil)
	if body != nil {
		req = httptest.NewRequest(method, target, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	return response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// fieldNamedRE finds a message that names the field at fault ("The field 'properties.x' ...",
// "The property 'x' ...", "The value of 'x' must be ...", "Invalid value for field 'x'").
var fieldNamedRE = regexp.MustCompile(`(?i)\b(?:field|property|value of) '([^']+)'`)

// checkARMAnswer checks the promises every answer of the frontend keeps, whatever came in: it
// matches the spec's schema for the route, it is never a 5xx, and every 4xx is an ARM error
// body with a code and a message, whose every error (details included) that names a field in
// its message carries a target.
func checkARMAnswer(t *testing.T, method, target string, in []byte, resp response) {
	t.Helper()
	validateExchange(t, method, target, resp)
	if resp.code >= 500 {
		t.Fatalf("%s answered %d for %q: %s", method, resp.code, clip(in), resp.body)
	}
	if resp.code < 400 {
		return
	}
	resp.armError(t)
	var b struct {
		Error armdoc.CloudErrorBody `json:"error"`
	}
	if err := json.Unmarshal(resp.body, &b); err != nil {
		t.Fatalf("%s answered %d with a body that is not JSON: %s", method, resp.code, resp.body)
	}
	if msg := untargeted(b.Error); msg != "" {
		t.Fatalf("%s answered %d with an error that names a field but has no target (%s) for %q: %s", method, resp.code, msg, clip(in), resp.body)
	}
}

// untargeted returns the first error in e (details included) that names a field in its message
// and has no target; "" if there is none. Every error must have a code and a message.
func untargeted(e armdoc.CloudErrorBody) string {
	if e.Code == "" || e.Message == "" {
		return fmt.Sprintf("error without code or message: %+v", e)
	}
	// The target first: most errors that name a field have one, and the expression is most of
	// this check's cost.
	if e.Target == "" && fieldNamedRE.MatchString(e.Message) {
		return e.Message
	}
	for _, d := range e.Details {
		if m := untargeted(d); m != "" {
			return m
		}
	}
	return ""
}

// readOnlyPaths are the fields of a cluster body that a client may send but the service sets
// (the specification marks them readOnly): a sent value for them is not what GET shows.
var readOnlyPaths = map[string]bool{
	"id": true, "name": true, "type": true, "systemData": true, "properties.provisioningState": true,
}

// checkRoundTrip checks that a created cluster is shown by GET as it was sent: every leaf value
// of the sent body (other than a read-only field, a null, or an empty object or array, which
// all say "nothing") is in the GET answer at the same path with the same value. Defaults that
// GET adds for what was not sent are allowed. It also checks that GET answers, and not a 5xx.
func checkRoundTrip(t *testing.T, e *env, path, ver string, sent []byte) {
	t.Helper()
	target := path + "?api-version=" + ver
	got := serve(e, "GET", target, nil)
	checkARMAnswer(t, "GET", target, nil, got)
	if got.code != 200 {
		t.Fatalf("GET after a create answered %d: %s", got.code, got.body)
	}
	var in, out map[string]any
	if err := json.Unmarshal(sent, &in); err != nil {
		t.Fatalf("an accepted body is not a JSON object: %v", err)
	}
	if err := json.Unmarshal(got.body, &out); err != nil {
		t.Fatalf("GET body is not a JSON object: %v", err)
	}
	if p, want, have, ok := firstDifference("", in, out); !ok {
		t.Fatalf("PUT %s sent %s=%v but GET shows %v\nsent: %s\nshown: %s", ver, p, want, have, clip(sent), clip(got.body))
	}
}

// firstDifference walks sent and reports the first leaf of it that shown does not hold with the
// same value. Keys are matched exactly, then ignoring case (ARM's keys are case-insensitive on
// the way in; GET answers with the specification's spelling).
func firstDifference(prefix string, sent, shown any) (path string, want, have any, ok bool) {
	if readOnlyPaths[prefix] {
		return "", nil, nil, true
	}
	switch s := sent.(type) {
	case nil:
		return "", nil, nil, true
	case map[string]any:
		m, _ := shown.(map[string]any)
		for k, v := range s {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if isEmpty(v) || readOnlyPaths[p] {
				continue
			}
			sv, found := lookupFold(m, k)
			if !found {
				return p, v, "(absent)", false
			}
			if p, want, have, ok := firstDifference(p, v, sv); !ok {
				return p, want, have, false
			}
		}
		return "", nil, nil, true
	case []any:
		a, _ := shown.([]any)
		if len(a) != len(s) {
			return prefix, s, shown, false
		}
		for i := range s {
			if p, want, have, ok := firstDifference(fmt.Sprintf("%s[%d]", prefix, i), s[i], a[i]); !ok {
				return p, want, have, false
			}
		}
		return "", nil, nil, true
	default:
		if !reflect.DeepEqual(sent, shown) {
			return prefix, sent, shown, false
		}
		return "", nil, nil, true
	}
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func lookupFold(m map[string]any, k string) (any, bool) {
	if v, ok := m[k]; ok {
		return v, true
	}
	for mk, v := range m {
		if strings.EqualFold(mk, k) {
			return v, true
		}
	}
	return nil, false
}
