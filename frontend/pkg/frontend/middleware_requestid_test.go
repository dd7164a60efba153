package frontend

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRequestLogsCarryARMIDs(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnv(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	resp := e.do("PUT", clusterPath("rg", "logged"), mustJSON(set(minimalBody(), "properties.bogus", 1)), map[string]string{
		"x-ms-correlation-request-id": "corr-logged", "x-ms-client-request-id": "client-logged",
	})
	if resp.code != 400 {
		t.Fatalf("status %d", resp.code)
	}
	reqID := resp.header.Get("x-ms-request-id")
	var line, rejected string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"request"`) && strings.Contains(l, reqID) {
			line = l
		}
		if strings.Contains(l, `"msg":"request rejected"`) {
			rejected = l
		}
	}
	for _, want := range []string{`"correlationRequestID":"corr-logged"`, `"clientRequestID":"client-logged"`, `"requestID":"` + reqID + `"`, `"status":400`, `"apiVersion":"` + testVersion + `"`} {
		if !strings.Contains(line, want) {
			t.Fatalf("request log line lacks %s:\n%s", want, line)
		}
	}
	// Every line of the request carries the IDs first, right after the message, in one order.
	ids := `"requestID":"` + reqID + `","clientRequestID":"client-logged","correlationRequestID":"corr-logged",`
	if !strings.Contains(line, `"msg":"request",`+ids+`"method":"PUT",`) || !strings.Contains(rejected, `"msg":"request rejected",`+ids) {
		t.Fatalf("the request's lines do not lead with its IDs %s:\n%s\n%s", ids, line, rejected)
	}
}

func TestHealthz(t *testing.T) {
	var fail atomic.Bool
	e := newEnv(t, func(c *Config) {
		c.Ready = func(context.Context) error {
			if fail.Load() {
				return errors.New("database down")
			}
			return nil
		}
	})
	if resp := e.do("GET", "/healthz", nil, nil); resp.code != 200 {
		t.Fatalf("healthy: %d", resp.code)
	}
	fail.Store(true)
	if resp := e.do("GET", "/healthz", nil, nil); resp.code != 503 {
		t.Fatalf("unhealthy: %d", resp.code)
	}
}
