// Command benchplot draws the whole-path benchmarks' JSON (test/e2e load_bench_test.go, written
// to docs/perf-data/<benchmark>.json) as SVG line charts next to them: latency (p50 solid, p99
// dashed, log scale) against offered load, one colour per series. docs/performance.md shows
// the charts.
//
//	go run ./tooling/cmd/benchplot [-dir docs/perf-data]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// report is the part of a benchmark's JSON that the chart needs.
type report struct {
	Benchmark string `json:"benchmark"`
	Title     string `json:"title"`
	Date      string `json:"date"`
	Machine   string `json:"machine"`
	LoadStart string `json:"loadAverageAtStart"`
	// XLabel names the x axis when it is not the offered load (e.g. P4's watchdog scans, against
	// the number of resource bundles).
	XLabel string `json:"xLabel"`
	// Chart "throughput" draws each point's achieved rate as a bar, in the order of the points
	// (P4: one bar per phase of each round); "stages" one row per series with its p50 as a bar
	// and its p99 as a tick, in the order of the points (BenchmarkFeedbackModes: each mode's
	// stages at one offered load); otherwise latency against offered load.
	Chart string `json:"chart"`
	// YUnit is the unit of the points' values in a Chart "values" (P5: MB of RSS).
	YUnit  string  `json:"yUnit"`
	Points []point `json:"points"`
}

type point struct {
	Series  string  `json:"series"`
	Offered float64 `json:"offeredPerSecond"`
	N       int     `json:"n"`
	Errors  int     `json:"errors"`
	P50ms   float64 `json:"p50Ms"`
	P99ms   float64 `json:"p99Ms"`
	// Achieved is what completed per second (the throughput chart's bar).
	Achieved float64 `json:"achievedPerSecond"`
	// Value is the point's y in a Chart "values".
	Value float64 `json:"value"`
}

func main() {
	dir := flag.String("dir", "docs/perf-data", "directory of the benchmarks' JSON files; each gets an SVG of the same name")
	flag.Parse()
	if err := run(*dir); err != nil {
		slog.Error("benchplot", "error", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no *.json in %s: run the benchmarks first (make bench)", dir)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r report
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if len(r.Points) == 0 {
			continue
		}
		out := strings.TrimSuffix(f, ".json") + ".svg"
		if err := os.WriteFile(out, []byte(chart(r)), 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", out)
	}
	return nil
}

const (
	width, height          = 720, 420
	left, right, top, bott = 70, 200, 50, 60
)

var colours = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// header starts the SVG: background, title and the run's date, machine and load.
func header(b *strings.Builder, r report) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="20" font-size="13" font-weight="bold">%s</text>`+"\n", left-60, html.EscapeString(r.Title))
	fmt.Fprintf(b, `<text x="%d" y="38" fill="#555">%s · %s · load average at start %s</text>`+"\n", left-60, html.EscapeString(r.Date), html.EscapeString(r.Machine), html.EscapeString(r.LoadStart))
}

// throughputChart draws each point's achieved rate as a bar (linear y), coloured by series,
// in the points' order.
func throughputChart(r report) string {
	// Chart "bars" draws each point's Value in r.YUnit the same way (BenchmarkCost: CPU per
	// operation).
	val, unit := func(p point) float64 { return p.Achieved }, "/s"
	if r.Chart == "bars" {
		val, unit = func(p point) float64 { return p.Value }, " ms"
	}
	ymax := 0.0
	for _, p := range r.Points {
		ymax = math.Max(ymax, val(p))
	}
	if ymax == 0 {
		ymax = 1
	}
	ymax *= 1.15
	pw, ph := float64(width-left-right), float64(height-top-bott)
	y := func(v float64) float64 { return top + ph - v/ymax*ph }
	var b strings.Builder
	header(&b, r)
	fmt.Fprintf(&b, `<path d="M%d %d V%g H%g" stroke="black" fill="none"/>`+"\n", left, top, top+ph, left+pw)
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.1f%s</text>`+"\n",
			left, left+pw, y(v), y(v), left-6, y(v)+4, v, unit)
	}
	colour := map[string]string{}
	slot := pw / float64(len(r.Points))
	for i, p := range r.Points {
		col, ok := colour[p.Series]
		if !ok {
			col = colours[len(colour)%len(colours)]
			colour[p.Series] = col
			ly := top + 10 + (len(colour)-1)*18
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", width-right+15, ly-8, col, width-right+35, ly+2, html.EscapeString(p.Series))
		}
		bx := left + float64(i)*slot + slot*0.15
		v := val(p)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %.2f%s (n %d, errors %d)</title></rect>`+"\n",
			bx, y(v), slot*0.7, top+ph-y(v), col, html.EscapeString(p.Series), v, unit, p.N, p.Errors)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.2f%s</text>`+"\n", bx+slot*0.35, y(v)-4, v, unit)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%d</text>`+"\n", bx+slot*0.35, top+ph+16, i+1)
	}
	xLabel := "phase, in the order run"
	if r.XLabel != "" {
		xLabel = r.XLabel
	}
	fmt.Fprintf(&b, `<text x="%g" y="%d" text-anchor="middle">%s</text>`+"\n", left+pw/2, height-20, html.EscapeString(xLabel))
	b.WriteString("</svg>\n")
	return b.String()
}

// chart draws one report: x is offered load (linear), y is latency in ms (log10); or, for
// Chart "throughput", throughputChart.
func chart(r report) string {
	if r.Chart == "throughput" || r.Chart == "bars" {
		return throughputChart(r)
	}
	if r.Chart == "values" {
		return valuesChart(r)
	}
	if r.Chart == "stages" {
		return stagesChart(r)
	}
	series := map[string][]point{}
	var names []string
	xmax, ymin, ymax := 0.0, math.Inf(1), 0.0
	for _, p := range r.Points {
		if _, ok := series[p.Series]; !ok {
			names = append(names, p.Series)
		}
		series[p.Series] = append(series[p.Series], p)
		xmax = math.Max(xmax, p.Offered)
		for _, v := range []float64{p.P50ms, p.P99ms} {
			if v > 0 {
				ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
			}
		}
	}
	if ymax == 0 {
		ymin, ymax = 1, 10
	}
	lo, hi := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	if hi == lo {
		hi++
	}
	pw, ph := float64(width-left-right), float64(height-top-bott)
	x := func(v float64) float64 { return left + v/(xmax*1.05)*pw }
	y := func(v float64) float64 { return top + ph - (math.Log10(v)-lo)/(hi-lo)*ph }

	var b strings.Builder
	header(&b, r)
	// Axes, decades on y, the offered loads on x.
	fmt.Fprintf(&b, `<path d="M%d %d V%g H%g" stroke="black" fill="none"/>`+"\n", left, top, top+ph, left+pw)
	for e := lo; e <= hi; e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%d" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s ms</text>`+"\n",
			left, left+pw, y(v), y(v), left-6, y(v)+4, fmtMs(v))
	}
	var xs []float64
	seen := map[float64]bool{}
	for _, p := range r.Points {
		if !seen[p.Offered] {
			seen[p.Offered] = true
			xs = append(xs, p.Offered)
		}
	}
	sort.Float64s(xs)
	for _, v := range xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%g</text>`+"\n", x(v), top+ph+16, v)
	}
	xLabel := "offered load (per second, open loop)"
	if r.XLabel != "" {
		xLabel = r.XLabel
	}
	fmt.Fprintf(&b, `<text x="%g" y="%d" text-anchor="middle">%s</text>`+"\n", left+pw/2, height-20, html.EscapeString(xLabel))
	// One colour per series; p50 solid, p99 dashed; a point's label says n and errors.
	for i, name := range names {
		ps := series[name]
		sort.Slice(ps, func(a, c int) bool { return ps[a].Offered < ps[c].Offered })
		col := colours[i%len(colours)]
		for _, q := range []struct {
			dash string
			get  func(point) float64
		}{{"", func(p point) float64 { return p.P50ms }}, {"6 4", func(p point) float64 { return p.P99ms }}} {
			var d []string
			for _, p := range ps {
				if v := q.get(p); v > 0 {
					d = append(d, fmt.Sprintf("%.1f,%.1f", x(p.Offered), y(v)))
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s %g/s: %.2f ms (n %d, errors %d)</title></circle>`+"\n",
						x(p.Offered), y(v), col, html.EscapeString(name), p.Offered, v, p.N, p.Errors)
				}
			}
			if len(d) > 1 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", strings.Join(d, " "), col, q.dash)
			}
		}
		ly := top + 10 + i*36
		lx := width - right + 15
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s p50</text>`+"\n", lx, lx+24, ly, ly, col, lx+30, ly+4, html.EscapeString(name))
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/><text x="%d" y="%d">%s p99</text>`+"\n", lx, lx+24, ly+16, ly+16, col, lx+30, ly+20, html.EscapeString(name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func fmtMs(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%g", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// valuesChart draws each series' values (log y, in r.YUnit) against x, one line per series with
// a compact legend (P5: the RSS of every process of the region against the number of clusters).
func valuesChart(r report) string {
	series := map[string][]point{}
	var names []string
	xmax, ymin, ymax := 0.0, math.Inf(1), 0.0
	for _, p := range r.Points {
		if _, ok := series[p.Series]; !ok {
			names = append(names, p.Series)
		}
		series[p.Series] = append(series[p.Series], p)
		xmax = math.Max(xmax, p.Offered)
		if p.Value > 0 {
			ymin, ymax = math.Min(ymin, p.Value), math.Max(ymax, p.Value)
		}
	}
	if ymax == 0 {
		ymin, ymax = 1, 10
	}
	lo, hi := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	if hi == lo {
		hi++
	}
	h := max(height, top+bott+len(names)*14+20)
	pw, ph := float64(width-left-right), float64(h-top-bott)
	x := func(v float64) float64 { return left + v/(xmax*1.05)*pw }
	y := func(v float64) float64 { return top + ph - (math.Log10(v)-lo)/(hi-lo)*ph }
	var b strings.Builder
	header(&b, r)
	if h != height {
		s := b.String()
		b.Reset()
		b.WriteString(strings.Replace(s, fmt.Sprintf(`height="%d"`, height), fmt.Sprintf(`height="%d"`, h), 1)) // room for the legend
	}
	fmt.Fprintf(&b, `<path d="M%d %d V%g H%g" stroke="black" fill="none"/>`+"\n", left, top, top+ph, left+pw)
	for e := lo; e <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v > math.Pow(10, hi) {
				break
			}
			fmt.Fprintf(&b, `<line x1="%d" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g %s</text>`+"\n",
				left, left+pw, y(v), y(v), left-6, y(v)+4, v, html.EscapeString(r.YUnit))
		}
	}
	seen := map[float64]bool{}
	for _, p := range r.Points {
		if !seen[p.Offered] {
			seen[p.Offered] = true
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%g</text>`+"\n", x(p.Offered), top+ph+16, p.Offered)
		}
	}
	fmt.Fprintf(&b, `<text x="%g" y="%d" text-anchor="middle">%s</text>`+"\n", left+pw/2, h-20, html.EscapeString(r.XLabel))
	palette := append(colours, "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
	for i, name := range names {
		ps := series[name]
		sort.Slice(ps, func(a, c int) bool { return ps[a].Offered < ps[c].Offered })
		col := palette[i%len(palette)]
		dash := []string{"", "6 4", "2 3"}[(i/len(palette))%3]
		var d []string
		for _, p := range ps {
			if p.Value > 0 {
				d = append(d, fmt.Sprintf("%.1f,%.1f", x(p.Offered), y(p.Value)))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s at %g: %.1f %s</title></circle>`+"\n",
					x(p.Offered), y(p.Value), col, html.EscapeString(name), p.Offered, p.Value, html.EscapeString(r.YUnit))
			}
		}
		if len(d) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="%s"/>`+"\n", strings.Join(d, " "), col, dash)
		}
		ly, lx := top+6+i*14, width-right+10
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/><text x="%d" y="%d" font-size="10">%s</text>`+"\n", lx, lx+18, ly, ly, col, dash, lx+22, ly+3, html.EscapeString(name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// stagesChart draws one row per series (points without a figure left out), in the points'
// order: its p50 as a bar and its p99 as a tick on a log10 ms axis, coloured by the series'
// name before ": " (the mode), with both figures written at the row's end.
func stagesChart(r report) string {
	const labelW, rowH, chartW = 330, 18, 380
	var rows []point
	lo, hi := math.Inf(1), 0.0
	for _, p := range r.Points {
		if p.N-p.Errors <= 0 || p.P50ms <= 0 {
			continue
		}
		rows = append(rows, p)
		lo, hi = math.Min(lo, p.P50ms), math.Max(hi, math.Max(p.P50ms, p.P99ms))
	}
	if len(rows) == 0 {
		lo, hi = 1, 10
	}
	elo, ehi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if ehi == elo {
		ehi++
	}
	x0 := float64(left - 60 + labelW)
	x := func(v float64) float64 { return x0 + (math.Log10(v)-elo)/(ehi-elo)*chartW }
	h := top + 20 + len(rows)*rowH + 30
	var b strings.Builder
	header(&b, r)
	s := b.String()
	b.Reset()
	s = strings.Replace(s, fmt.Sprintf(`width="%d" height="%d"`, width, height), fmt.Sprintf(`width="%d" height="%d"`, labelW+chartW+150, h), 1)
	b.WriteString(s)
	axisY := float64(top + 10 + len(rows)*rowH)
	for e := elo; e <= ehi; e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="middle">%s ms</text>`+"\n",
			x(v), x(v), top, axisY, x(v), axisY+14, fmtMs(v))
	}
	colour := map[string]string{}
	for i, p := range rows {
		mode, _, _ := strings.Cut(p.Series, ": ")
		col, ok := colour[mode]
		if !ok {
			col = colours[len(colour)%len(colours)]
			colour[mode] = col
		}
		y := float64(top + 10 + i*rowH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="11">%s</text>`+"\n", x0-6, y+11, html.EscapeString(p.Series))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s: p50 %.0f ms (n %d, errors %d)</title></rect>`+"\n",
			x0, y+3, x(p.P50ms)-x0, rowH-6, col, html.EscapeString(p.Series), p.P50ms, p.N, p.Errors)
		end := x(p.P50ms)
		if p.P99ms > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="black" stroke-width="2"><title>%s: p99 %.0f ms</title></line>`+"\n",
				x(p.P99ms), x(p.P99ms), y+1, y+rowH-1, html.EscapeString(p.Series), p.P99ms)
			end = math.Max(end, x(p.P99ms))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#333">%s / %s</text>`+"\n", end+6, y+11, fmtSeconds(p.P50ms), fmtSeconds(p.P99ms))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">p50 (bar) and p99 (tick), log scale</text>`+"\n", x0+chartW/2, h-8)
	b.WriteString("</svg>\n")
	return b.String()
}

// fmtSeconds writes a latency in ms as ms below a second, else as seconds.
func fmtSeconds(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}
