package benchreport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteEmbedsTheHeaderFirst writes a run that embeds the header into $BENCH_OUT: the file is
// where it was asked to be, its header fields come first and flat, as benchplot reads them.
func TestWriteEmbedsTheHeaderFirst(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BENCH_OUT", dir)
	run := struct {
		Header
		Points []int `json:"points"`
	}{Header: NewHeader("p0", "a title", "go test"), Points: []int{1, 2}}
	run.LoadEnd = LoadAvg()
	path, err := Write(run.Benchmark+".json", &run)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "p0.json") {
		t.Fatalf("wrote %s, want %s", path, filepath.Join(dir, "p0.json"))
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), "{\n  \"benchmark\": \"p0\",\n  \"title\": \"a title\",") {
		t.Fatalf("the file does not start with the header:\n%s", raw)
	}
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back["loadAverageAtEnd"] == "" || back["loadAverageAtStart"] == "" || !strings.Contains(back["machine"].(string), "CPUs") || back["points"] == nil {
		t.Fatalf("run %v: want the loads, the machine and the points", back)
	}
}

func TestPercentile(t *testing.T) {
	var samples []time.Duration
	for i := 1; i <= 100; i++ {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		p       int
		want    time.Duration
	}{
		{"none", nil, 50, 0},
		{"median_of_a_hundred", samples, 50, 50 * time.Millisecond},
		{"p99_of_a_hundred", samples, 99, 99 * time.Millisecond},
		{"max_of_a_hundred", samples, 100, 100 * time.Millisecond},
		{"p99_of_one", samples[:1], 99, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.samples, tc.p); got != tc.want {
				t.Fatalf("Percentile(p%d) = %s, want %s", tc.p, got, tc.want)
			}
		})
	}
}

func TestCPUModel(t *testing.T) {
	for _, tc := range []struct {
		name, cpuinfo, want string
	}{
		{"first_of_two", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)  Processor\n\nprocessor\t: 1\nmodel name\t: Other\n", "Intel(R) Xeon(R) Processor"},
		{"amd", "model name\t: AMD EPYC 7763 64-Core Processor\n", "AMD EPYC 7763 64-Core Processor"},
		{"none", "processor\t: 0\nvendor_id\t: ARM\n", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cpuModel(tc.cpuinfo); got != tc.want {
				t.Fatalf("cpuModel = %q, want %q", got, tc.want)
			}
		})
	}
}
