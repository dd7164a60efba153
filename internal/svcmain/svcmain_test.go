package svcmain

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parseErr error
		runErr   error
		want     int
		stderr   string
	}{
		{"runs", nil, nil, 0, ""},
		{"help", flag.ErrHelp, nil, 0, ""},
		{"bad_flag", errors.New("--x: bad"), nil, 2, "svc: --x: bad\n"},
		{"run_fails", nil, errors.New("listen: in use"), 1, "svc: listen: in use\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			ran := false
			got := exitCode(&out, "svc", nil, func(string) string { return "" },
				func([]string, func(string) string) (int, error) { return 1, tc.parseErr },
				func(int) error { ran = true; return tc.runErr })
			if got != tc.want || out.String() != tc.stderr {
				t.Fatalf("exit %d, stderr %q; want %d, %q", got, out.String(), tc.want, tc.stderr)
			}
			if ran != (tc.parseErr == nil) {
				t.Fatalf("run called = %v after parse error %v", ran, tc.parseErr)
			}
		})
	}
}

func TestLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if got, err := Level(in); err != nil || got != want {
			t.Errorf("Level(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "loud", "INFO", "warning"} {
		if _, err := Level(in); err == nil || !strings.Contains(err.Error(), "--log-level") {
			t.Errorf("Level(%q) = %v, want an error naming --log-level", in, err)
		}
	}
}

func TestReplicaID(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name here")
	}
	want := host + "-" + strconv.Itoa(os.Getpid())
	if got := ReplicaID("svc"); got != want {
		t.Fatalf("ReplicaID = %q, want %q (host name and process ID)", got, want)
	}
}
