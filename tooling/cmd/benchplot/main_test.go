package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		report    *report // nil: no JSON in the directory
		wantErr   string
		wantLines int // polylines: a series with two or more points has a p50 and a p99 line
		wantText  []string
		wantNot   []string // text the SVG must not have
	}{
		{name: "empty directory", wantErr: "no *.json"},
		{name: "two series", report: &report{Benchmark: "p1", Title: "P1 <test>", Date: "2026-11-22", Points: []point{
			{Series: "GET", Offered: 100, N: 300, P50ms: 1.2, P99ms: 4},
			{Series: "GET", Offered: 500, N: 1500, P50ms: 2, P99ms: 30},
			{Series: "PUT", Offered: 100, N: 20, Errors: 1, P50ms: 8, P99ms: 90},
			{Series: "PUT", Offered: 500, N: 100, P50ms: 40, P99ms: 900},
		}}, wantLines: 4, wantText: []string{"P1 &lt;test&gt;", "GET p50", "PUT p99", "1000 ms", "PUT 100/s: 8.00 ms (n 20, errors 1)"}},
		{name: "one point per series", report: &report{Benchmark: "p3", Points: []point{{Series: "x", Offered: 5, N: 1, P50ms: 100, P99ms: 100}}},
			wantLines: 0, wantText: []string{"x p50", "offered load (per second"}},
		{name: "throughput bars", report: &report{Benchmark: "p4t", Chart: "throughput", Points: []point{
			{Series: "OpenHCP", N: 120, Achieved: 1.39}, {Series: "bare Maestro", N: 120, Achieved: 0.86}, {Series: "bare Maestro", N: 120, Achieved: 2.65}}},
			wantLines: 0, wantText: []string{"1.39/s", "2.65/s", "bare Maestro: 0.86/s (n 120, errors 0)", "phase, in the order run"}},
		{name: "cost bars", report: &report{Benchmark: "cost", Chart: "bars", Points: []point{
			{Series: "GET", N: 300, Value: 1.9}, {Series: "whole create", N: 100, Value: 41.25}}},
			wantLines: 0, wantText: []string{"1.90 ms", "whole create: 41.25 ms (n 100, errors 0)"}, wantNot: []string{"1.90/s"}},
		{name: "stages rows", report: &report{Benchmark: "fb", Chart: "stages", Points: []point{
			{Series: "fixed: Available → ARM Succeeded", N: 100, P50ms: 46455, P99ms: 61291},
			{Series: "fixed: no figure", N: 100, Errors: 100},
			{Series: "adaptive: CS READY write → ARM Succeeded", N: 100, P50ms: 71, P99ms: 377}}},
			wantLines: 0, wantText: []string{"fixed: Available → ARM Succeeded: p50 46455 ms (n 100, errors 0)", "46.5 s / 61.3 s", "71 ms / 377 ms",
				"adaptive: CS READY write → ARM Succeeded: p99 377 ms", "10 ms", "100000 ms", "p50 (bar) and p99 (tick)"},
			wantNot: []string{"no figure"}},
		{name: "own x label", report: &report{Benchmark: "p4", XLabel: "resource bundles <n>", Points: []point{{Series: "x", Offered: 120, N: 10, P50ms: 30, P99ms: 40}}},
			wantLines: 0, wantText: []string{"resource bundles &lt;n&gt;"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.report != nil {
				raw, _ := json.Marshal(tc.report)
				if err := os.WriteFile(filepath.Join(dir, tc.report.Benchmark+".json"), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := run(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("run: %v; want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			svg, err := os.ReadFile(filepath.Join(dir, tc.report.Benchmark+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			if err := xml.Unmarshal(svg, new(struct{})); err != nil {
				t.Fatalf("not well-formed XML: %v", err)
			}
			if n := strings.Count(string(svg), "<polyline"); n != tc.wantLines {
				t.Errorf("%d polylines, want %d", n, tc.wantLines)
			}
			for _, s := range tc.wantText {
				if !strings.Contains(string(svg), s) {
					t.Errorf("SVG lacks %q", s)
				}
			}
			for _, s := range tc.wantNot {
				if strings.Contains(string(svg), s) {
					t.Errorf("SVG has %q", s)
				}
			}
		})
	}
}
