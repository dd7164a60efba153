package logattr

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []string // the spellings reported, in order
	}{
		{"canonical_names_pass", `log.Info("m", "clusterID", id, "correlationRequestID", c)`, nil},
		{"snake_case_cluster_id_is_reported", `log.Info("m", "cluster_id", id)`, []string{"cluster_id"}},
		{"header_name_as_key_is_reported", `l.With("x-ms-correlation-request-id", c)`, []string{"x-ms-correlation-request-id"}},
		{"other_case_is_reported", `s.log.Warn("m", "correlationId", c, "requestId", r)`, []string{"correlationId", "requestId"}},
		{"context_variant_skips_ctx_and_message", `log.InfoContext(ctx, "operation", "operation", op)`, []string{"operation"}},
		{"slog_attr_constructor_is_checked", `log.LogAttrs(ctx, slog.LevelInfo, "m", slog.String("resource", id))`, []string{"resource"}},
		{"message_is_not_a_key", `log.Info("cluster_id")`, nil},
		{"testing_calls_are_not_logs", `t.Error("cluster_id", err)`, nil},
		{"sre_names_have_one_spelling", `log.Info("m", "session_id", s, "sre_person", p, "sre_access", a, "sre_approver", b)`, []string{"session_id", "sre_person", "sre_access", "sre_approver"}},
		{"service_local_names_pass", `log.Info("m", "shard", s, "spec_revision", r)`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package x\nfunc f() {\n"+tc.src+"\n}\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, fd := range CheckFile(fset, f) {
				got = append(got, fd.Got)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("reported %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRepositoryUsesOneSpelling scans every Go file of the repository: a slog call that spells
// a shared attribute another way fails here, naming the file and line and the name to use.
func TestRepositoryUsesOneSpelling(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("repository root %s has no go.work: %v", root, err)
	}
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, fd := range CheckFile(fset, f) {
			rel, _ := filepath.Rel(root, fd.Pos.Filename)
			t.Errorf("%s:%d: log attribute %q: use %q (logattr.Key...)", rel, fd.Pos.Line, fd.Got, fd.Want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned only %d Go files under %s", files, root)
	}
}
