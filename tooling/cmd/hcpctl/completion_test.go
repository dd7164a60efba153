package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBashCompletion sources the printed script in a real bash and asks _hcpctl what it offers.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH")
	}
	var script bytes.Buffer
	if code := run([]string{"completion", "bash"}, func(string) string { return "" }, &script, os.Stderr); code != 0 {
		t.Fatalf("completion bash: exit %d", code)
	}
	file := filepath.Join(t.TempDir(), "hcpctl.bash")
	if err := os.WriteFile(file, script.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		words []string
		want  []string
	}{
		{"nouns", []string{"hcpctl", ""}, []string{"cluster", "shard", "audit", "completion"}},
		{"shard_verbs", []string{"hcpctl", "shard", ""}, []string{"cordon", "uncordon", "drain-status"}},
		{"cordon_flags", []string{"hcpctl", "shard", "cordon", "--"}, []string{"--reason", "--if-match", "--as"}},
		{"audit_flags", []string{"hcpctl", "audit", "--p"}, []string{"--person"}},
		{"shells", []string{"hcpctl", "completion", ""}, []string{"bash", "zsh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			words := make([]string, len(tc.words))
			for i, w := range tc.words {
				words[i] = "'" + w + "'"
			}
			prog := "source " + file + "\nCOMP_WORDS=(" + strings.Join(words, " ") + ")\nCOMP_CWORD=" +
				strconv.Itoa(len(tc.words)-1) + "\n_hcpctl\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
			out, err := exec.Command(bash, "--norc", "-c", prog).CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			got := strings.Fields(string(out))
			for _, w := range tc.want {
				if !contains(got, w) {
					t.Errorf("completion of %q offers %v, want %s among them", tc.words, got, w)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
