package armspec

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// CheckingTransport is an http.RoundTripper for clients that make their own requests (an Azure
// SDK pipeline, its poller included): every answer that passes through it is validated with
// ValidateExchange, and each mismatch (Violations) or broken spec is handed to Report; the answer
// itself goes on unchanged. Report runs on the goroutine of the request.
type CheckingTransport struct {
	Next   http.RoundTripper // http.DefaultTransport when nil
	Report func(req *http.Request, status int, body []byte, err error)
}

// RoundTrip implements http.RoundTripper.
func (c CheckingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := c.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the answer to %s %s: %w", req.Method, req.URL, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	if _, verr := ValidateExchange(req.Method, req.URL, resp.StatusCode, resp.Header, raw); verr != nil {
		c.Report(req, resp.StatusCode, raw, verr)
	}
	return resp, nil
}
