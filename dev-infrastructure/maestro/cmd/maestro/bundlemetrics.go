package main

import (
	"fmt"
	"slices"
	"strings"
	_ "unsafe" // go:linkname

	"github.com/openshift-online/maestro/pkg/services"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The pinned Maestro server (pkg/services, resource.go) labels three metrics by resource bundle
// ID: resource_processed_total{id,action} and the histograms
// resource_first_status_latency_seconds{id,consumer,source} and
// resource_status_event_processing_latency_seconds{id,consumer,source,server_instance_id}. It
// never deletes a series, so every bundle ever written (each ARM requestAdminCredential, each
// cluster create and delete) left about 24 series for good, in the process and in the region's
// Prometheus: any ARM caller could grow both without bound. Nothing reads them by ID; our alert
// rules sum the histograms over it.
//
// Maestro has no option for its labels. Its three vectors are package variables, registered
// with prometheus.DefaultRegisterer by the package's init and read at each observation, so the
// command replaces them (before the server starts) with vectors of the same names, help,
// buckets and labels whose `id` is constrained to "": one child per remaining label set, so the
// process's memory is bounded too. The /metrics handler (upstream's pkg/handlers,
// promhttp.Handler) reads prometheus.DefaultGatherer when the server builds it, after main has
// wrapped it with withoutBundleID, which drops the `id` label from these families and sums what
// then shares a label set.

//go:linkname processedVec github.com/openshift-online/maestro/pkg/services.resourceProcessedCountMetric
var processedVec *prometheus.CounterVec

//go:linkname firstStatusVec github.com/openshift-online/maestro/pkg/services.resourceFirstStatusLatencyMetric
var firstStatusVec *prometheus.HistogramVec

//go:linkname statusProcessingVec github.com/openshift-online/maestro/pkg/services.statusEventProcessingLatencyMetric
var statusProcessingVec *prometheus.HistogramVec

// bundleIDLabel is upstream's label for a resource bundle's ID.
const bundleIDLabel = "id"

// bundleFamilies are the metric families upstream labels by bundleIDLabel.
var bundleFamilies = []string{
	"resource_processed_total",
	"resource_first_status_latency_seconds",
	"resource_status_event_processing_latency_seconds",
}

// noBundleID maps every bundle ID to one value, so a vector keeps one child per remaining labels.
func noBundleID(string) string { return "" }

// installBundleMetrics replaces upstream's three per-bundle vectors with ones whose `id` is
// always "", and wraps prometheus.DefaultGatherer with withoutBundleID. It fails, changing
// nothing, if a replacement would not describe the same metric as upstream's (an upgrade that
// changed a name, help text or label). Buckets are restated from upstream at the pin.
func installBundleMetrics() error {
	processed := prometheus.V2.NewCounterVec(prometheus.CounterVecOpts{
		CounterOpts: prometheus.CounterOpts{
			Subsystem: "resource",
			Name:      "processed_total",
			Help:      "Number of processed resources.",
		},
		VariableLabels: prometheus.ConstrainedLabels{{Name: bundleIDLabel, Constraint: noBundleID}, {Name: "action"}},
	})
	firstStatus := prometheus.V2.NewHistogramVec(prometheus.HistogramVecOpts{
		HistogramOpts: prometheus.HistogramOpts{
			Subsystem: "resource",
			Name:      "first_status_latency_seconds",
			Help:      "Time in seconds from resource creation to when the server first receives a status update from the agent. Represents agent responsiveness and network latency.",
			Buckets:   []float64{5.0, 30.0, 120.0, 600.0},
		},
		VariableLabels: prometheus.ConstrainedLabels{{Name: bundleIDLabel, Constraint: noBundleID}, {Name: "consumer"}, {Name: "source"}},
	})
	statusProcessing := prometheus.V2.NewHistogramVec(prometheus.HistogramVecOpts{
		HistogramOpts: prometheus.HistogramOpts{
			Subsystem: "resource",
			Name:      "status_event_processing_latency_seconds",
			Help:      "Latency in seconds from status event creation to it is processed by a server instance.",
			Buckets:   []float64{0.05, 0.1, 0.5, 1, 5},
		},
		VariableLabels: prometheus.ConstrainedLabels{{Name: bundleIDLabel, Constraint: noBundleID}, {Name: "consumer"}, {Name: "source"}, {Name: "server_instance_id"}},
	})
	pairs := []struct{ upstream, ours prometheus.Collector }{
		{processedVec, processed}, {firstStatusVec, firstStatus}, {statusProcessingVec, statusProcessing},
	}
	for _, p := range pairs {
		// A constrained label is described as c(name).
		up, our := describe(p.upstream), strings.ReplaceAll(describe(p.ours), "c("+bundleIDLabel+")", bundleIDLabel)
		if up != our {
			return fmt.Errorf("upstream's metric is %s, the replacement %s", up, our)
		}
	}
	services.UnregisterResourceMetrics()
	processedVec, firstStatusVec, statusProcessingVec = processed, firstStatus, statusProcessing
	services.RegisterResourceMetrics()
	prometheus.DefaultGatherer = withoutBundleID{prometheus.DefaultGatherer}
	return nil
}

// describe is a collector's one description, as text.
func describe(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc, 1)
	c.Describe(ch)
	return (<-ch).String()
}

// withoutBundleID is a Gatherer whose bundleFamilies carry no bundleIDLabel: the metrics that
// differ only by it are summed (counter values; histogram counts, sums and buckets).
type withoutBundleID struct{ prometheus.Gatherer }

func (g withoutBundleID) Gather() ([]*dto.MetricFamily, error) {
	families, err := g.Gatherer.Gather()
	for _, f := range families {
		if slices.Contains(bundleFamilies, f.GetName()) {
			f.Metric = foldBundleID(f.Metric)
		}
	}
	return families, err
}

// foldBundleID drops bundleIDLabel from each metric and sums the metrics that then share their
// labels, keeping the order in which each label set first appears.
func foldBundleID(metrics []*dto.Metric) []*dto.Metric {
	var out []*dto.Metric
	byLabels := map[string]*dto.Metric{}
	for _, m := range metrics {
		// A new slice: the collector's metric shares its own label pairs with what it wrote.
		labels := make([]*dto.LabelPair, 0, len(m.Label))
		for _, l := range m.Label {
			if l.GetName() != bundleIDLabel {
				labels = append(labels, l)
			}
		}
		m.Label = labels
		key := labelsKey(m.Label)
		into, ok := byLabels[key]
		if !ok {
			byLabels[key] = m
			out = append(out, m)
			continue
		}
		addMetric(into, m)
	}
	return out
}

func labelsKey(labels []*dto.LabelPair) string {
	var b strings.Builder
	for _, l := range labels {
		fmt.Fprintf(&b, "%q=%q,", l.GetName(), l.GetValue())
	}
	return b.String()
}

// addMetric adds m's counter or histogram into into. Histograms of one family share buckets.
func addMetric(into, m *dto.Metric) {
	if c := m.GetCounter(); c != nil && into.Counter != nil {
		into.Counter.Value = proto(into.Counter.GetValue() + c.GetValue())
	}
	if h := m.GetHistogram(); h != nil && into.Histogram != nil {
		into.Histogram.SampleCount = proto(into.Histogram.GetSampleCount() + h.GetSampleCount())
		into.Histogram.SampleSum = proto(into.Histogram.GetSampleSum() + h.GetSampleSum())
		for i, b := range h.GetBucket() {
			if i < len(into.Histogram.Bucket) {
				into.Histogram.Bucket[i].CumulativeCount = proto(into.Histogram.Bucket[i].GetCumulativeCount() + b.GetCumulativeCount())
			}
		}
	}
}

func proto[T any](v T) *T { return &v }
