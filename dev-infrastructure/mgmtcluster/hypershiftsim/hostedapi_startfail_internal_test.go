package hypershiftsim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestLastLineOfAFailedStartsLog(t *testing.T) {
	// "é" is two bytes: after one "x" the cut at maxFailureLine falls inside one.
	long := "x" + strings.Repeat("é", maxFailureLine)
	tests := []struct {
		name, tail, want string
	}{
		{name: "last_non_empty_line_without_trailing_newlines", tail: "I1126 starting\nE1126 bind: address already in use\n\n", want: "E1126 bind: address already in use"},
		{name: "empty_log_says_so", tail: "\n", want: "(empty log)"},
		{name: "long_line_is_cut_on_a_rune_boundary", tail: "x\n" + long, want: "x" + strings.Repeat("é", (maxFailureLine-1)/2) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lastLine(tt.tail)
			if got != tt.want {
				t.Errorf("lastLine = %q, want %q", got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("lastLine %q is not valid UTF-8", got)
			}
		})
	}
}

// A failed start is tried again only once its backoff has passed, and each failure in a row
// waits longer.
func TestFailedStartIsRetriedAfterItsBackoff(t *testing.T) {
	dir := t.TempDir()
	// The etcd is started first, so a missing etcd binary is the failed start here (a missing
	// kube-apiserver after a running etcd: TestHostedAPIServerThatCannotStartSaysWhy).
	h := newHostedAPIServers(HostedAPIOptions{Max: 1, APIServerPath: filepath.Join(dir, "no-such-kube-apiserver"),
		EtcdPath: filepath.Join(dir, "no-such-etcd"), Dir: filepath.Join(dir, "hosted"), LogDir: dir})
	rootCert, rootKey, err := newCA("root-ca.retry", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := hostedPKI{rootCert: rootCert, rootKey: rootKey, clientCABundle: rootCert}
	s := h.server("retry", 1)
	steps := []struct {
		name         string
		retryAt      time.Time // set before the call; zero: left as the last call set it
		wantFailures int
	}{
		{name: "first_start_fails_and_says_how", wantFailures: 1},
		{name: "no_new_start_before_the_backoff_has_passed", retryAt: time.Now().Add(time.Hour), wantFailures: 1},
		{name: "a_new_start_once_it_has_passed", retryAt: time.Now().Add(-time.Second), wantFailures: 2},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if !step.retryAt.IsZero() {
				s.mu.Lock()
				s.retryAt = step.retryAt
				s.mu.Unlock()
			}
			st, err := h.ensure(context.Background(), "retry", 1, p)
			if err != nil {
				t.Fatal(err)
			}
			if st.ready || st.starting || !st.failed || !strings.Contains(st.detail, "no-such-etcd") {
				t.Errorf("state %+v, want failed naming the binary", st)
			}
			s.mu.Lock()
			failures := s.failures
			s.mu.Unlock()
			if failures != step.wantFailures {
				t.Errorf("%d failed starts, want %d", failures, step.wantFailures)
			}
		})
	}
	if a, b := startRetryAfter(1), startRetryAfter(4); a < time.Second || b <= a || startRetryAfter(20) > 30*time.Second {
		t.Errorf("backoff after 1, 4, 20 failures: %s, %s, %s; want from 1s, growing, at most 30s", a, b, startRetryAfter(20))
	}
}
