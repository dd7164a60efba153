package frontend

import (
	"net/http"
	"strconv"
	"time"

	"github.com/openhcp/openhcp/internal/httplabel"
)

// statusRecorder remembers the status written, for logs, metrics and the panic handler.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (sr *statusRecorder) WriteHeader(code int) {
	if sr.status == 0 {
		sr.status = code
	}
	sr.ResponseWriter.WriteHeader(code)
}

func (sr *statusRecorder) Write(b []byte) (int, error) {
	if sr.status == 0 {
		sr.status = http.StatusOK
	}
	n, err := sr.ResponseWriter.Write(b)
	sr.bytes += n
	return n, err
}

func (sr *statusRecorder) Unwrap() http.ResponseWriter { return sr.ResponseWriter }

// middlewareLogging logs each request once it is done and records its metrics by route and code.
func (s *Server) middlewareLogging(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	ri := info(r)
	rec := &statusRecorder{ResponseWriter: w}
	next(rec, r)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	elapsed := time.Since(ri.start)
	route := ri.route
	if route == "" {
		route = "unmatched"
	}
	s.metrics.observe(route, httplabel.Method(r.Method), strconv.Itoa(rec.status), elapsed)
	// The request's IDs lead, as in a line of ri.logger(), which is not made for this line alone.
	level := ri.base.Info
	if rec.status >= 500 {
		level = ri.base.Error
	}
	apiVersion := ri.apiVersion // the query as the api-version middleware read it, if it ran
	if apiVersion == "" {
		apiVersion = r.URL.Query().Get("api-version")
	}
	level("request", append(ri.idAttrs(),
		"method", r.Method,
		"path", ri.originalPath,
		"apiVersion", apiVersion,
		"route", route,
		"status", rec.status,
		"bytes", rec.bytes,
		"duration", elapsed,
	)...)
}
