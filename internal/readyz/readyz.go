// Package readyz serves a service's /readyz: whether it is ready, and if not, the name of the
// check that failed. The check's error stays in the service's log: /readyz is read by whoever
// reaches the metrics listener, and a database error names hosts, logins and databases.
package readyz

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// Check is one readiness condition; Name is what /readyz says when it fails.
type Check struct {
	Name string
	Func func(ctx context.Context) error
}

// Timeout bounds each check.
const Timeout = 2 * time.Second

// Handler answers 200 "ready", or 503 "not ready: <name>" for the first check that fails,
// logging its error.
func Handler(log *slog.Logger, checks ...Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		for _, c := range checks {
			ctx, cancel := context.WithTimeout(r.Context(), Timeout)
			err := c.Func(ctx)
			cancel()
			if err != nil {
				log.Warn("readiness check failed", "check", c.Name, "error", err)
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("not ready: " + c.Name + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	})
}
