package localregion

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckServiceFlags runs a stand-in binary whose --help lists the flags the standard flag
// package would, and checks that a flag it does not list is named in the error.
func TestCheckServiceFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "old-service")
	help := "Usage of old-service:\n  -db-dsn string\n    \tPostgreSQL DSN\n  -listen string\n    \taddress\n  -v\tverbose\n"
	script := "#!/bin/sh\ncat <<'EOF' >&2\n" + help + "EOF\nexit 2\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		missing string
	}{
		{name: "known_flags_pass", args: []string{"--db-dsn", "x", "--listen=127.0.0.1:1", "-v"}},
		{name: "a_flag_the_binary_lacks_is_named", args: []string{"--db-dsn", "x", "--pprof-token-file", "f"}, missing: "--pprof-token-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkServiceFlags(context.Background(), bin, tc.args)
			switch {
			case tc.missing == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.missing != "" && (err == nil || !strings.Contains(err.Error(), tc.missing)):
				t.Fatalf("error %v, want one naming %s", err, tc.missing)
			}
		})
	}
}
