// Package benchreport writes a benchmark run as one JSON file of docs/perf-data, in the shape
// tooling/cmd/benchplot reads, for the benchmarks of test/e2e and test/scale: the header every
// file starts with (what ran, when, on what machine, under what load), where the file goes, and
// the percentiles the figures are given in.
package benchreport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// Header is the start of every run's JSON; a report embeds it, so its fields come first. LoadEnd
// is the caller's to fill in when the run ends (LoadAvg).
type Header struct {
	Benchmark string `json:"benchmark"`
	Title     string `json:"title"`
	Command   string `json:"command"`
	Date      string `json:"date"`
	Machine   string `json:"machine"`
	LoadStart string `json:"loadAverageAtStart"`
	LoadEnd   string `json:"loadAverageAtEnd"`
}

// NewHeader is the header of a run of benchmark name starting now.
func NewHeader(name, title, command string) Header {
	return Header{Benchmark: name, Title: title, Command: command, Date: time.Now().UTC().Format(time.RFC3339),
		Machine: Machine(), LoadStart: LoadAvg()}
}

// Machine describes this machine: CPUs and their model, memory and the Go version. Two runs'
// CPU times compare only when it is the same.
func Machine() string {
	mem := ""
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(raw), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mem = fmt.Sprintf(", %.1f GiB", kb/1024/1024)
			}
		}
	}
	model := ""
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := cpuModel(string(raw)); m != "" {
			model = " (" + m + ")"
		}
	}
	return fmt.Sprintf("%d CPUs%s%s, %s", runtime.NumCPU(), model, mem, runtime.Version())
}

// cpuModel is the first "model name" of /proc/cpuinfo's text, "" when there is none.
func cpuModel(cpuinfo string) string {
	for _, l := range strings.Split(cpuinfo, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

// LoadAvg is the machine's 1, 5 and 15 minute load averages, or "unknown".
func LoadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Dir is where runs are written: $BENCH_OUT, else the repository's docs/perf-data.
func Dir() (string, error) {
	if dir := os.Getenv("BENCH_OUT"); dir != "" {
		return dir, nil
	}
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("where to write the run: %w", err)
	}
	return filepath.Join(root, "docs", "perf-data"), nil
}

// Write writes run, indented, to Dir()/name and returns the file's path.
func Write(name string, run any) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write the run: %w", err)
	}
	raw, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode the run: %w", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write the run: %w", err)
	}
	return path, nil
}

// Percentile is the p-th percentile of sorted (nearest rank); 0 when there are no samples.
func Percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}
