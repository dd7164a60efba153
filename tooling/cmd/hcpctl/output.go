package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// print writes v as JSON or YAML (the admin API's own document, which scripts parse), or
// calls human for the table; human checks a.wide() for the wide table's extra columns.
func (a *app) print(v any, human func(io.Writer)) error {
	switch a.output {
	case outputJSON:
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case outputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = a.out.Write(b)
		return err
	}
	human(a.out)
	return nil
}

// wide says whether the table shows its extra columns (-o wide).
func (a *app) wide() bool { return a.output == outputWide }

type tw struct{ w *tabwriter.Writer }

// table starts aligned columns with an optional header row.
func table(w io.Writer, header ...string) tw {
	t := tw{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t tw) row(cells ...string) { fmt.Fprintln(t.w, strings.Join(cells, "\t")) }
func (t tw) flush()              { t.w.Flush() }

// ifWide appends extra to cells when wide is set: a wide table's extra columns, last as in
// kubectl.
func ifWide(wide bool, cells []string, extra ...string) []string {
	if wide {
		return append(cells, extra...)
	}
	return cells
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func statusText(s int) string {
	if s == 0 {
		return "-"
	}
	return fmt.Sprint(s)
}

func lastSegment(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// age is a duration as kubectl shows it: 45s, 12m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// bar is a ten-character capacity bar.
func bar(load float64) string {
	n := int(load*10 + 0.5)
	n = max(0, min(n, 10))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 10-n) + "]"
}
