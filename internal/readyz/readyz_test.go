package readyz

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandlerNamesTheFirstFailingCheckOnly(t *testing.T) {
	ok := func(context.Context) error { return nil }
	fail := func(msg string) func(context.Context) error {
		return func(context.Context) error { return errors.New(msg) }
	}
	for _, tc := range []struct {
		name   string
		checks []Check
		code   int
		body   string
		logged string
	}{
		{"no_checks_is_ready", nil, 200, "ready\n", ""},
		{"all_pass_is_ready", []Check{{"database", ok}, {"broker", ok}}, 200, "ready\n", ""},
		{"failing_check_is_named_its_error_logged", []Check{{"database", ok}, {"broker", fail("dial tcp 10.0.0.9:8883: user=secret")}}, 503, "not ready: broker\n", "user=secret"},
		{"first_failure_wins", []Check{{"database", fail("db down")}, {"broker", fail("broker down")}}, 503, "not ready: database\n", "db down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			w := httptest.NewRecorder()
			Handler(slog.New(slog.NewTextHandler(&logs, nil)), tc.checks...).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if w.Code != tc.code || w.Body.String() != tc.body {
				t.Fatalf("%d %q, want %d %q", w.Code, w.Body.String(), tc.code, tc.body)
			}
			if !strings.Contains(logs.String(), tc.logged) {
				t.Fatalf("log %q lacks %q", logs.String(), tc.logged)
			}
		})
	}
}
