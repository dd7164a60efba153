package svcmain

import (
	"strings"
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
		want    string
		wantDur time.Duration
	}{
		{name: "default", want: "def", wantDur: time.Second},
		{name: "environment overrides the default", env: map[string]string{"X_NAME": "env", "X_WAIT": "2s"}, want: "env", wantDur: 2 * time.Second},
		{name: "flag overrides the environment", env: map[string]string{"X_NAME": "env"}, args: []string{"--name=flag", "--wait=3s"}, want: "flag", wantDur: 3 * time.Second},
		{name: "a bad duration in the environment names flag and variable", env: map[string]string{"X_WAIT": "soon"}, wantErr: `invalid value "soon" for --wait from X_WAIT`},
		{name: "positional arguments are refused", args: []string{"extra"}, wantErr: "unexpected arguments: extra"},
		{name: "unknown flags are refused", args: []string{"--nope"}, wantErr: "flag provided but not defined: -nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFlags("x", func(k string) string { return tc.env[k] })
			f.SetOutput(&strings.Builder{})
			var s string
			var d time.Duration
			f.String(&s, "name", "X_NAME", "def", "a name")
			f.Duration(&d, "wait", "X_WAIT", time.Second, "a wait")
			err := f.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if s != tc.want || d != tc.wantDur {
				t.Fatalf("got %q, %s; want %q, %s", s, d, tc.want, tc.wantDur)
			}
		})
	}
}

func TestRequireAndHostPorts(t *testing.T) {
	if err := Require(Required{"a", "one", "ONE"}, Required{"", "two", "TWO"}); err == nil || err.Error() != "--two is required (or set TWO)" {
		t.Fatalf("Require = %v", err)
	}
	if err := Require(Required{"a", "one", "ONE"}); err != nil {
		t.Fatalf("Require with every value set = %v", err)
	}
	if err := HostPorts(Address{"127.0.0.1:1", "listen"}, Address{"nope", "metrics-listen"}); err == nil || !strings.Contains(err.Error(), `invalid value "nope" for --metrics-listen`) {
		t.Fatalf("HostPorts = %v", err)
	}
}

func TestIntAndBoolFlags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		wantErr  string
		wantN    int
		wantBool bool
	}{
		{name: "defaults", wantN: 4, wantBool: true},
		{name: "environment overrides the defaults", env: map[string]string{"X_N": "8", "X_ON": "false"}, wantN: 8, wantBool: false},
		{name: "flags override the environment", env: map[string]string{"X_N": "8", "X_ON": "false"}, args: []string{"--n=2", "--on"}, wantN: 2, wantBool: true},
		{name: "a bad integer in the environment names flag and variable", env: map[string]string{"X_N": "many"}, wantErr: `invalid value "many" for --n from X_N`},
		{name: "a bad boolean in the environment names flag and variable", env: map[string]string{"X_ON": "yes please"}, wantErr: `invalid value "yes please" for --on from X_ON`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFlags("x", func(k string) string { return tc.env[k] })
			f.SetOutput(&strings.Builder{})
			var n int
			var on bool
			f.Int(&n, "n", "X_N", 4, "a count")
			f.Bool(&on, "on", "X_ON", true, "a switch")
			err := f.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if n != tc.wantN || on != tc.wantBool {
				t.Fatalf("got %d, %v; want %d, %v", n, on, tc.wantN, tc.wantBool)
			}
		})
	}
}
