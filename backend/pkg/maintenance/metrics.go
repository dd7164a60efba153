package maintenance

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descTasks = prometheus.NewDesc("maintenance_tasks",
		"Maintenance tasks stored, by task type and state.", []string{"type", "state"}, nil)
	descCampaignClusters = prometheus.NewDesc("maintenance_campaign_clusters",
		"Clusters of a campaign by outcome: succeeded, failed, or remaining (not finished yet).", []string{"campaign", "outcome"}, nil)
	descCampaignState = prometheus.NewDesc("maintenance_campaign_state",
		"1 for the state a campaign is in.", []string{"campaign", "state"}, nil)
	descCampaignWave = prometheus.NewDesc("maintenance_campaign_wave",
		"The wave a campaign is at (1-based) and, under total, how many it has.", []string{"campaign", "of"}, nil)
	descRequests = prometheus.NewDesc("maintenance_requests",
		"SREs' maintenance requests stored, by action and state (Pending ones wait for the lease holder).", []string{"action", "state"}, nil)
	descReplaysRefused = prometheus.NewDesc("maintenance_request_replays_refused",
		"Maintenance requests found Pending again after they were carried out, refused rather than carried out twice, by action (over the records of the last 31 days). Any is someone writing the request store.",
		[]string{"action"}, nil)
)

// Collector exposes tasks and campaigns as gauges read from the store at each scrape, so every
// replica reports the same region-wide numbers.
type Collector struct {
	tasks     *Tasks
	campaigns *Campaigns
	requests  *Requests
	timeout   time.Duration
}

// NewCollector returns the metrics collector of the tasks, campaigns and requests (nil: none)
// in the store.
func NewCollector(tasks *Tasks, campaigns *Campaigns, requests *Requests) *Collector {
	return &Collector{tasks: tasks, campaigns: campaigns, requests: requests, timeout: 5 * time.Second}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descTasks
	ch <- descCampaignClusters
	ch <- descCampaignState
	ch <- descCampaignWave
	ch <- descRequests
	ch <- descReplaysRefused
}

// Collect implements prometheus.Collector; a store that does not answer leaves the series out.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if ts, err := c.tasks.List(ctx); err == nil {
		type key struct{ typ, state string }
		n := map[key]int{}
		for _, t := range ts {
			n[key{t.Type, string(t.State)}]++
		}
		for k, v := range n {
			ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, float64(v), k.typ, k.state)
		}
	}
	if c.requests != nil {
		if rs, err := c.requests.List(ctx); err == nil {
			type key struct{ action, state string }
			n := map[key]int{}
			for _, r := range rs {
				n[key{string(r.Action), string(r.State)}]++
			}
			for k, v := range n {
				ch <- prometheus.MustNewConstMetric(descRequests, prometheus.GaugeValue, float64(v), k.action, k.state)
			}
		}
		if n, err := c.requests.replaysRefused(ctx); err == nil {
			for _, a := range actions {
				ch <- prometheus.MustNewConstMetric(descReplaysRefused, prometheus.GaugeValue, float64(n[a]), string(a))
			}
		}
	}
	cs, err := c.campaigns.List(ctx)
	if err != nil {
		return
	}
	for _, cp := range cs {
		var ok, failed int
		for _, w := range cp.Waves {
			ok += w.Succeeded
			failed += w.Failed
		}
		ch <- prometheus.MustNewConstMetric(descCampaignClusters, prometheus.GaugeValue, float64(ok), cp.ID, "succeeded")
		ch <- prometheus.MustNewConstMetric(descCampaignClusters, prometheus.GaugeValue, float64(failed), cp.ID, "failed")
		ch <- prometheus.MustNewConstMetric(descCampaignClusters, prometheus.GaugeValue, float64(cp.Clusters()-ok-failed), cp.ID, "remaining")
		for _, s := range []CampaignState{CampaignRunning, CampaignHalted, CampaignSucceeded, CampaignCancelled} {
			v := 0.0
			if cp.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descCampaignState, prometheus.GaugeValue, v, cp.ID, string(s))
		}
		ch <- prometheus.MustNewConstMetric(descCampaignWave, prometheus.GaugeValue, float64(cp.Current+1), cp.ID, "current")
		ch <- prometheus.MustNewConstMetric(descCampaignWave, prometheus.GaugeValue, float64(len(cp.Waves)), cp.ID, "total")
	}
}
