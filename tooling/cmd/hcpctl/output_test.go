package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// hostile is what a caller without a certificate can put into an audit record (its path, and
// so the target taken from it) and an SRE into a reason: a line of its own that looks like a
// record, and terminal escapes (erase the line, move up, set the window title; a C1 CSI; a
// right-to-left override).
const hostile = "x\x1b[2K\x1b[1A\r\n2026-11-29T17:00:00Z  carol  sre-admin  completed  200  forged\x1b]0;pwned\a\u009b31m\u202e"

// TestHumanOutputEscapesControlCharacters: what hcpctl prints for a person (tables, describe's
// lines) shows a caller's control characters as escapes: no string from the admin API starts a
// line of its own or reaches the SRE's terminal as an escape sequence. -o json keeps the value.
func TestHumanOutputEscapesControlCharacters(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/v1/audit", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(adminapi.AuditList{Entries: []adminapi.AuditEntry{{
			Time: time.Now(), RequestID: "r1", CorrelationID: "c1", Method: "GET", Route: "GET /admin/v1/clusters/{id...}",
			Path: "/admin/v1/clusters/" + hostile, Target: hostile, Reason: hostile, Outcome: "unauthenticated", Status: 401}}})
	})
	mux.HandleFunc("GET /admin/v1/clusters/{id}", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(adminapi.ClusterDescription{Summary: adminapi.ClusterSummary{ID: "c1", State: "error"},
			Diagnosis: []string{"HyperShift: Available=False: " + hostile}, Unavailable: []string{"maestro: " + hostile}})
	})
	api, _, _, _ := adminAPI(t, mux)
	for _, tc := range []struct {
		name  string
		args  []string
		lines int // what the output has without the hostile strings
	}{
		{"audit", []string{"audit"}, 2},
		{"audit_wide", []string{"audit", "-o", "wide"}, 2},
		{"describe", []string{"cluster", "describe", "c1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(append(append([]string{}, api...), tc.args...), noEnv, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			s := out.String()
			for _, c := range []string{"\x1b", "\r", "\a", "\u009b", "\u202e"} {
				if strings.Contains(s, c) {
					t.Errorf("the output holds %q raw:\n%q", c, s)
				}
			}
			if strings.Contains(s, "\n2026-11-29T17:00:00Z") {
				t.Errorf("a caller's string starts a line of its own:\n%s", s)
			}
			if tc.lines > 0 && strings.Count(s, "\n") != tc.lines {
				t.Errorf("%d lines, want %d:\n%s", strings.Count(s, "\n"), tc.lines, s)
			}
			if !strings.Contains(s, `\x1b[2K`) {
				t.Errorf("the escape is not shown as \\x1b:\n%s", s)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run(append(append([]string{}, api...), "audit", "-o", "json"), noEnv, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var l adminapi.AuditList
	if err := json.Unmarshal(out.Bytes(), &l); err != nil || len(l.Entries) != 1 || l.Entries[0].Reason != hostile {
		t.Fatalf("-o json changed the value (%v): %s", err, out.String())
	}
}

// TestAPIErrorMessageIsEscaped: the message of an admin API error (which may relay Cluster
// Service's, or a proxy's page when the body is no JSON) reaches the SRE's terminal with its
// control characters escaped, as a table's cells do.
func TestAPIErrorMessageIsEscaped(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/v1/clusters/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(adminapi.Error{Code: "Conflict", Message: "upstream: " + hostile})
	})
	mux.HandleFunc("GET /admin/v1/audit", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>bad gateway " + hostile + "</html>"))
	})
	api, _, _, _ := adminAPI(t, mux)
	for _, args := range [][]string{{"cluster", "describe", "c1"}, {"audit"}} {
		var out, errb bytes.Buffer
		if code := run(append(append([]string{}, api...), args...), noEnv, &out, &errb); code == 0 {
			t.Fatalf("%v: exit 0, want a failure", args)
		}
		s := errb.String()
		for _, c := range []string{"\x1b", "\r", "\a", "\u009b", "\u202e"} {
			if strings.Contains(s, c) {
				t.Errorf("%v: stderr holds %q raw:\n%q", args, c, s)
			}
		}
		if strings.Contains(s, "\n2026-11-29T17:00:00Z") {
			t.Errorf("%v: the message starts a line of its own:\n%s", args, s)
		}
	}
}
