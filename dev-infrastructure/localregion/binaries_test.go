package localregion

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompatibleArgs runs a stand-in binary whose --help lists the flags the standard flag
// package would, and checks that a flag it does not list is left out, with its value, and named.
func TestCompatibleArgs(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "old-service")
	help := "Usage of old-service:\n  -db-dsn string\n    \tPostgreSQL DSN\n  -listen string\n    \taddress\n  -v\tverbose\n"
	script := "#!/bin/sh\ncat <<'EOF' >&2\n" + help + "EOF\nexit 2\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		kept, left string
	}{
		{name: "known_flags_pass", args: []string{"--db-dsn", "x", "--listen=127.0.0.1:1", "-v"},
			kept: "--db-dsn x --listen=127.0.0.1:1 -v"},
		{name: "a_flag_the_binary_lacks_is_left_out_with_its_value", args: []string{"--db-dsn", "x", "--sealing-keys-dir", "d", "-v"},
			kept: "--db-dsn x -v", left: "--sealing-keys-dir"},
		{name: "an_unknown_flag_with_equals_and_an_unknown_bool", args: []string{"--new=1", "--listen", "a", "--newbool", "-v"},
			kept: "--listen a -v", left: "--new --newbool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, left, err := compatibleArgs(context.Background(), bin, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(kept, " ") != tc.kept || strings.Join(left, " ") != tc.left {
				t.Fatalf("kept %q left out %q, want %q and %q", kept, left, tc.kept, tc.left)
			}
		})
	}
}
