package procstat

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"testing"
)

func TestParse(t *testing.T) {
	tail := " 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 4242 1000 200"
	tests := []struct {
		name string
		line string
		want Stat
		ok   bool
	}{
		{"plain", "123 (sleep) S 77" + tail, Stat{State: "S", PPID: 77, StartTicks: 4242}, true},
		{"name_with_spaces_and_parentheses", "123 (a) b (c)) Z 9" + tail, Stat{State: "Z", PPID: 9, StartTicks: 4242}, true},
		{"no_parenthesis", "123 sleep S 77" + tail, Stat{}, false},
		{"too_short", "123 (sleep) S 77 1 1", Stat{}, false},
		{"not_a_number", "123 (sleep) S x" + tail, Stat{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Parse([]byte(tc.line))
			if ok != tc.ok || got != tc.want {
				t.Fatalf("Parse = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRead(t *testing.T) {
	self, err := Read(os.Getpid())
	if err != nil || self.PPID != os.Getppid() || self.StartTicks == 0 {
		t.Fatalf("Read(self) = %+v, %v; want parent %d and a start time", self, err, os.Getppid())
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(cmd.Process.Pid); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of a reaped process: %v, want fs.ErrNotExist", err)
	}
}
