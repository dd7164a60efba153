package armspec

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckingTransportReportsAndPassesTheAnswerOn(t *testing.T) {
	const body = `{"location":"x","properties":{"api":{}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	defer srv.Close()
	var reported []error
	c := &http.Client{Transport: CheckingTransport{Report: func(_ *http.Request, _ int, _ []byte, err error) { reported = append(reported, err) }}}
	resp, err := c.Get(srv.URL + "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c?api-version=2026-09-01-preview")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if string(got) != body {
		t.Fatalf("the answer changed on its way: %s", got)
	}
	var vs Violations
	if len(reported) != 1 || !errors.As(reported[0], &vs) || !strings.Contains(vs.Error(), "properties.api.url: required property missing") {
		t.Fatalf("reported %v", reported)
	}
	// A route without a schema is not reported.
	reported = nil
	if _, err := c.Get(srv.URL + "/healthz"); err != nil || len(reported) != 0 {
		t.Fatalf("healthz: %v, reported %v", err, reported)
	}
}
