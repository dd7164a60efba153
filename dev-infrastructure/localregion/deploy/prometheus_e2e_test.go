package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
)

// wantScrapeJobs are the jobs the deployed region's Prometheus must have up, with the number of
// targets each (dev-local's replicas: the gateway, the Monitor and the maintenance service run
// two everywhere).
var wantScrapeJobs = map[string]int{
	"frontend": 1, "backend": 1, "cluster-service": 1, "admin": 1, "gateway": 2, "monitor": 2, "maintenance": 2,
	// One of each per management cluster: mgmt-1 (the node) and mgmt-2.
	"maestro-server": 1, "maestro-agent": 2, "hypershift-sim": 2, "management-kube-apiserver": 2,
}

// wantProbedShards are the management clusters whose kube-apiserver /readyz the Monitor probes.
var wantProbedShards = []string{"mgmt-1", "mgmt-2"}

// checkPrometheus checks make deploy's Prometheus from region.json: it refuses a caller without
// an SRE's certificate; every job of wantScrapeJobs has all its targets up (every scrape over
// verified TLS: a target whose certificate did not verify would be down); every group of every
// shipped rule file is loaded; both Monitor replicas' own metrics are in it; and the Monitor
// probes every shard of wantProbedShards and finds its /readyz answering (feedback age 0: a
// probe that failed since the replica started would make it positive).
func checkPrometheus(ctx context.Context, t *testing.T, info localregion.Info) {
	t.Helper()
	p := info.Prometheus
	if p == nil || !strings.HasPrefix(p.URL, "https://127.0.0.1:") {
		t.Errorf("region.json names no Prometheus host forward: %+v", p)
		return
	}
	client, err := p.HTTPClient(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	anon := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: client.Transport.(*http.Transport).TLSClientConfig.Clone()}}
	anon.Transport.(*http.Transport).TLSClientConfig.Certificates = nil
	anon.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = nil
	if resp, err := anon.Get(p.URL + "/api/v1/targets"); err == nil {
		resp.Body.Close()
		t.Errorf("Prometheus answered a caller without a client certificate: %s", resp.Status)
	}
	get := func(path string, out any) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
		}
		return json.Unmarshal(b, out)
	}

	// Targets: poll until every job is up (the first scrapes follow discovery by seconds).
	begin := time.Now()
	var problems []string
	for {
		var targets struct {
			Data struct {
				ActiveTargets []struct {
					Labels    map[string]string `json:"labels"`
					Health    string            `json:"health"`
					LastError string            `json:"lastError"`
					ScrapeURL string            `json:"scrapeUrl"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		problems = nil
		if err := get("/api/v1/targets?state=active", &targets); err != nil {
			problems = []string{err.Error()}
		} else {
			up := map[string]int{}
			for _, tg := range targets.Data.ActiveTargets {
				job := tg.Labels["job"]
				if tg.Health == "up" {
					up[job]++
					continue
				}
				problems = append(problems, fmt.Sprintf("%s %s: %s %s", job, tg.ScrapeURL, tg.Health, tg.LastError))
			}
			for job, n := range wantScrapeJobs {
				if up[job] != n {
					problems = append(problems, fmt.Sprintf("job %s: %d targets up, want %d", job, up[job], n))
				}
			}
			for job := range up {
				if _, ok := wantScrapeJobs[job]; !ok {
					problems = append(problems, "unexpected job "+job)
				}
			}
		}
		if len(problems) == 0 {
			t.Logf("Prometheus: every job up %s after the deploy", time.Since(begin).Round(time.Millisecond))
			break
		}
		if time.Since(begin) > 3*time.Minute {
			sort.Strings(problems)
			t.Errorf("Prometheus targets after %s:\n%s", time.Since(begin).Round(time.Second), strings.Join(problems, "\n"))
			break
		}
		time.Sleep(2 * time.Second)
	}

	// Rules: every group of every shipped rule file.
	var want []string
	for _, f := range p.RuleFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Groups []struct {
				Name string `json:"name"`
			} `json:"groups"`
		}
		if err := yaml.Unmarshal(raw, &file); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range file.Groups {
			want = append(want, g.Name)
		}
	}
	var rules struct {
		Data struct {
			Groups []struct {
				Name string `json:"name"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := get("/api/v1/rules", &rules); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range rules.Data.Groups {
		got = append(got, g.Name)
	}
	sort.Strings(want)
	sort.Strings(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("rule groups loaded %q, want the shipped files' %q", got, want)
	} else {
		t.Logf("Prometheus: %d rule groups of %d shipped files loaded", len(got), len(p.RuleFiles))
	}

	// The Monitor's own metrics, from both replicas, which share the buckets between them.
	for q, want := range map[string]string{
		`count(monitor_passes_total)`: "2",
		`sum(monitor_buckets_held)`:   "16",
	} {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var res struct {
				Data struct {
					Result []struct {
						Value []any `json:"value"`
					} `json:"result"`
				} `json:"data"`
			}
			val := ""
			err := get("/api/v1/query?query="+url.QueryEscape(q), &res)
			if err == nil && len(res.Data.Result) == 1 && len(res.Data.Result[0].Value) == 2 {
				val, _ = res.Data.Result[0].Value[1].(string)
			}
			if val == want {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("Prometheus %s = %q (%v), want %s", q, val, err, want)
				break
			}
			time.Sleep(2 * time.Second)
		}
	}

	// The shard probes, by shard (only a shard's owner exports its series).
	for q, want := range map[string]string{
		`max by (shard) (monitor_shard_probed)`:               "1",
		`max by (shard) (monitor_shard_feedback_age_seconds)`: "0",
	} {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var res struct {
				Data struct {
					Result []struct {
						Metric map[string]string `json:"metric"`
						Value  []any             `json:"value"`
					} `json:"result"`
				} `json:"data"`
			}
			got := map[string]string{}
			err := get("/api/v1/query?query="+url.QueryEscape(q), &res)
			if err == nil {
				for _, r := range res.Data.Result {
					if len(r.Value) == 2 {
						got[r.Metric["shard"]], _ = r.Value[1].(string)
					}
				}
			}
			var wrong []string
			for _, shard := range wantProbedShards {
				if got[shard] != want {
					wrong = append(wrong, fmt.Sprintf("%s=%q", shard, got[shard]))
				}
			}
			if len(wrong) == 0 && len(got) == len(wantProbedShards) {
				t.Logf("Prometheus: %s is %s for %v", q, want, wantProbedShards)
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("Prometheus %s = %v (%v), want %s for each of %v", q, got, err, want, wantProbedShards)
				break
			}
			time.Sleep(2 * time.Second)
		}
	}
}
