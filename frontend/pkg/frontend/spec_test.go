package frontend

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/openhcp/openhcp/internal/armspec"
)

// The conformance tests validate the RP's answers with internal/armspec, against the official
// specification vendored in the repository. Every response of e.do is validated too
// (validateExchange, from helpers_test.go); the helpers here name the operation explicitly.

// specVersions are the api-versions of the vendored specification; each is served.
var specVersions = armspec.Versions()

// specOperations is one api-version's specification.
type specOperations struct{ *armspec.Spec }

func loadSpecOperations(t *testing.T, apiVersion string) specOperations {
	t.Helper()
	s, err := armspec.Load(apiVersion)
	if err != nil {
		t.Fatal(err)
	}
	return specOperations{s}
}

// checkResponse validates a response against the operation's spec: the status code is one
// the operation declares, the declared headers are there, and the body matches the declared
// schema (or is empty when none is declared).
func (so specOperations) checkResponse(t *testing.T, opID string, resp response) {
	t.Helper()
	if err := so.ValidateResponse(opID, resp.code, resp.header, resp.body); err != nil {
		t.Errorf("%s %d does not match the spec of %s:\n%v\nbody: %s", opID, resp.code, so.APIVersion, err, clip(resp.body))
	}
}

// validateExchange validates any answer of the frontend against the schema its route has
// (armspec.ValidateExchange); a missing required property or an undeclared field fails the test.
func validateExchange(t testing.TB, method, target string, resp response) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	_, err = armspec.ValidateExchange(method, u, resp.code, resp.header, resp.body)
	var vs armspec.Violations
	switch {
	case errors.As(err, &vs):
		t.Errorf("%s %s answered %d, which does not match the spec:\n%v\nbody: %s", method, target, resp.code, vs, clip(resp.body))
	case err != nil:
		t.Fatalf("validate %s %s: %v", method, target, err)
	}
}

// checkingClient is the test server's client with every answer validated like e.do's, for
// clients that make their own requests (the Azure SDK's pipeline and poller).
func (e *env) checkingClient(t *testing.T) *http.Client {
	c := e.http.Client()
	c.Transport = armspec.CheckingTransport{
		Next: c.Transport,
		Report: func(req *http.Request, status int, body []byte, err error) {
			t.Errorf("%s %s answered %d, which does not match the spec:\n%v\nbody: %s", req.Method, req.URL, status, err, clip(body))
		},
	}
	return c
}

// specExample is one example file of the specification.
type specExample struct {
	*armspec.Example
	file string
}

func (x *specExample) param(t *testing.T, name string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(x.Parameters[name], &s); err != nil {
		t.Fatalf("%s: parameter %s: %v", x.file, name, err)
	}
	return s
}

func (x *specExample) body(t *testing.T, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(x.Parameters[name], &m); err != nil || m == nil {
		t.Fatalf("%s: body parameter %s: %v", x.file, name, err)
	}
	return m
}

// loadExamples returns the examples of an api-version whose file starts with prefix; none is a
// test failure.
func loadExamples(t *testing.T, apiVersion, prefix string) []*specExample {
	t.Helper()
	xs, err := armspec.Examples(apiVersion, prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*specExample, len(xs))
	for i, x := range xs {
		out[i] = &specExample{Example: x, file: x.File}
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("status code %q", s)
	}
	return n
}

// clip shortens a body for a failure message.
func clip(b []byte) string {
	const max = 800
	if len(b) <= max {
		return string(b)
	}
	return string(b[:max]) + "…"
}
