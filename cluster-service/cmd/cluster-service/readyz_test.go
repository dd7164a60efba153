package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestReadyzNamesTheCheckOnly: /readyz says ready, or not ready and which check failed; the
// database's error (its address, login, database name) goes to the log only, as anyone who
// reaches the metrics listener reads /readyz.
func TestReadyzNamesTheCheckOnly(t *testing.T) {
	ctx := context.Background()
	up, err := pgxpool.New(ctx, pgservertest.NewDatabase(t, pgservertest.Start(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	// A database that does not answer: nothing listens on port 1.
	down, err := pgxpool.New(ctx, "postgres://secretlogin@127.0.0.1:1/secretdb?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	for _, tc := range []struct {
		name string
		db   *pgxpool.Pool
		code int
		body string
	}{
		{"database_answers", up, http.StatusOK, "ready\n"},
		{"database_down_is_named_without_its_error", down, http.StatusServiceUnavailable, "not ready: database\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			mux := metricsMux(prometheus.NewRegistry(), tc.db, slog.New(slog.NewTextHandler(&logs, nil)), "")
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if w.Code != tc.code || w.Body.String() != tc.body {
				t.Fatalf("%d %q, want %d %q", w.Code, w.Body.String(), tc.code, tc.body)
			}
			if tc.code != http.StatusOK && !strings.Contains(logs.String(), "secretlogin") {
				t.Fatalf("the log lacks the failing check's error:\n%s", logs.String())
			}
		})
	}
}
