// Package reqcount reads what a kube-apiserver has served from its apiserver_request_total
// counter, for the benchmarks that say where a management cluster's load comes from.
package reqcount

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var requestLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// Parse sums the apiserver_request_total series of a kube-apiserver's /metrics text by
// "VERB resource[/subresource]", with the requests answered 409 (a create of something that
// exists, a stale update) counted apart under the same key plus " 409".
func Parse(raw []byte) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, m := range requestLabel.FindAllStringSubmatch(labels, -1) {
			l[m[1]] = m[2]
		}
		key := l["verb"] + " " + l["resource"]
		if l["resource"] == "" {
			key = l["verb"] + " (no resource)"
		}
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if l["code"] == "409" {
			key += " 409"
		}
		out[key] += n
	}
	return out
}

// Since says how many requests were served from before to after, in all and per create, and
// the largest kinds of them (at most top).
func Since(before, after map[string]float64, creates, top int) string {
	type use struct {
		key string
		n   float64
	}
	var uses []use
	var total float64
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			uses = append(uses, use{k, d})
			total += d
		}
	}
	if total == 0 {
		return "not read"
	}
	sort.Slice(uses, func(i, j int) bool {
		return uses[i].n > uses[j].n || uses[i].n == uses[j].n && uses[i].key < uses[j].key
	})
	per := func(n float64) string { return strconv.FormatFloat(n/float64(max(creates, 1)), 'f', 1, 64) }
	parts := []string{fmt.Sprintf("%.0f in all, %s per create", total, per(total))}
	for i, u := range uses {
		if i == top {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.0f (%s per create)", u.key, u.n, per(u.n)))
	}
	return strings.Join(parts, "; ")
}
