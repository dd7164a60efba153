package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

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

// row writes one line of cells, each through printable: a cell holds a caller's string (an audit
// record's path or reason comes from whoever called, a certificate not needed).
func (t tw) row(cells ...string) {
	p := make([]string, len(cells))
	for i, c := range cells {
		p[i] = printable(c)
	}
	fmt.Fprintln(t.w, strings.Join(p, "\t"))
}

func (t tw) flush() { t.w.Flush() }

// ifWide appends extra to cells when wide is set: a wide table's extra columns, last as in
// kubectl.
func ifWide(wide bool, cells []string, extra ...string) []string {
	if wide {
		return append(cells, extra...)
	}
	return cells
}

// printable is s for a person's terminal: every control character (C0 with newline and tab,
// DEL, C1), bidirectional-text control and byte that is not UTF-8 is written as its Go escape
// (\n, \x1b, \u202e, \xff), so that a string from the admin API (an audit record's path, target
// or reason, a condition's message) can neither start a line that looks like a record of its
// own nor reach the terminal as an escape sequence. -o json and -o yaml keep the value as sent.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if unprintable(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unprintable(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unprintable(r rune) bool {
	return r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
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
