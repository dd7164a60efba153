package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// errorBodiesGolden records, for each mutated body below, a hash of the error it gets (code,
// message and target of the error and of each detail, details as a set). It was written by the
// hand-written types and validation that the generated ones (zz_generated_*.go) replaced, so
// the generated layer answers every one of these bodies as they did. Rewrite it only for an
// intended change: UPDATE_ERROR_BODIES=1 go test ./frontend/pkg/api -run TestErrorBodiesAreUnchanged
const errorBodiesGolden = "testdata/errorbodies.golden"

// bodyMutations of a valid body: every key removed, set to "", null or -5, and each spec rule's
// bad value (and "") one at a time and all at once.
func bodyMutations(t *testing.T, body string, rules []specRule) map[string][]byte {
	out := map[string][]byte{}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(v map[string]any, at string)
	walk = func(v map[string]any, at string) {
		for k, x := range v {
			if strings.Contains(k, "/") { // a map key that is a resource ID
				continue
			}
			p := k
			if at != "" {
				p = at + "." + k
			}
			paths = append(paths, p)
			if sub, ok := x.(map[string]any); ok {
				walk(sub, p)
			}
		}
	}
	walk(m, "")
	for _, p := range paths {
		out["del:"+p] = withoutKey(t, body, p)
		out["empty:"+p] = withValue(t, body, p, "")
		out["null:"+p] = withValue(t, body, p, nil)
		out["num:"+p] = withValue(t, body, p, -5)
	}
	all := []byte(body)
	for _, r := range rules {
		out["rule:"+r.path+" "+r.what] = withValue(t, body, r.path, r.bad)
		out["rule-empty:"+r.path] = withValue(t, body, r.path, "")
		all = withValue(t, string(all), r.path, r.bad)
	}
	out["all-rules"] = all
	return out
}

func withoutKey(t *testing.T, body, dotted string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(dotted, ".")
	cur := m
	for _, p := range parts[:len(parts)-1] {
		cur = cur[p].(map[string]any)
	}
	delete(cur, parts[len(parts)-1])
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errorDigest is err as its code, message and target, details sorted, and a short hash of that.
func errorDigest(err error) (string, string) {
	if err == nil {
		return "ok", "ok"
	}
	ce, ok := arm.AsCloudError(err)
	if !ok {
		return err.Error(), "not-a-cloud-error"
	}
	var details []string
	for _, d := range ce.Details {
		details = append(details, fmt.Sprintf("%s|%s|%s", d.Code, d.Target, d.Message))
	}
	slices.Sort(details)
	text := fmt.Sprintf("%d %s|%s|%s [%s]", ce.StatusCode, ce.Code, ce.Target, ce.Message, strings.Join(details, "; "))
	sum := sha256.Sum256([]byte(text))
	return text, hex.EncodeToString(sum[:8])
}

func TestErrorBodiesAreUnchanged(t *testing.T) {
	type result struct{ key, text, hash string }
	var results []result
	add := func(key string, err error) {
		text, hash := errorDigest(err)
		results = append(results, result{key, text, hash})
	}
	sortedKeys := func(m map[string][]byte) []string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	}
	for _, name := range api.Versions() {
		cv, _ := api.Lookup(name)
		body := clusterBodyFor(name)
		stored, err := cv.DecodeCluster([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		muts := bodyMutations(t, body, specRules(t, name, "HcpOpenShiftCluster"))
		for _, k := range sortedKeys(muts) {
			_, err := cv.DecodeCluster(muts[k])
			add(name+" cluster "+k, err)
			_, err = cv.DecodeClusterUpdate(muts[k], stored)
			add(name+" cluster-update "+k, err)
		}
		nv := npVersion(t, name)
		muts = bodyMutations(t, nodePoolBody, specRules(t, name, "NodePool"))
		for _, k := range sortedKeys(muts) {
			_, err := nv.DecodeNodePool(muts[k], nil)
			add(name+" nodepool "+k, err)
		}
	}
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "%s\t%s\n", r.key, r.hash)
	}
	if os.Getenv("UPDATE_ERROR_BODIES") != "" {
		if err := os.WriteFile(errorBodiesGolden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(errorBodiesGolden)
	if err != nil {
		t.Fatal(err)
	}
	wantHash := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		k, h, _ := strings.Cut(line, "\t")
		wantHash[k] = h
	}
	if len(wantHash) != len(results) {
		t.Errorf("%d cases, the golden file has %d", len(results), len(wantHash))
	}
	for _, r := range results {
		if wantHash[r.key] != r.hash {
			t.Errorf("%s: the error changed (golden %s, now %s): %s", r.key, wantHash[r.key], r.hash, r.text)
		}
	}
}
