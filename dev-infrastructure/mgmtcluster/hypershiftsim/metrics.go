package hypershiftsim

import (
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics on the controller-runtime registry, served with its reconcile and workqueue metrics on
// the metrics port.
var (
	hostedClusterTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hypershift_sim_hostedcluster_transitions_total",
		Help: "HostedCluster state changes written by the sim, by transition (available, degraded, deleted).",
	}, []string{"transition"})
	nodePoolTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hypershift_sim_nodepool_transitions_total",
		Help: "NodePool state changes written by the sim, by transition (ready, deleted).",
	}, []string{"transition"})
	timeToAvailable = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "hypershift_sim_hostedcluster_time_to_available_seconds",
		Help:    "Time from HostedCluster creation to its first Available=True, as written by the sim.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 12),
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(hostedClusterTransitions, nodePoolTransitions, timeToAvailable)
}

// observeHostedClusterTransition counts the condition changes between two statuses the sim wrote.
func observeHostedClusterTransition(before, after *hyperv1.HostedClusterStatus, created, now time.Time) {
	becameTrue := func(t hyperv1.ConditionType) bool {
		return !meta.IsStatusConditionTrue(before.Conditions, string(t)) && meta.IsStatusConditionTrue(after.Conditions, string(t))
	}
	if becameTrue(hyperv1.HostedClusterAvailable) {
		hostedClusterTransitions.WithLabelValues("available").Inc()
		if !everAvailable(before) {
			timeToAvailable.Observe(now.Sub(created).Seconds())
		}
	}
	if becameTrue(hyperv1.HostedClusterDegraded) {
		hostedClusterTransitions.WithLabelValues("degraded").Inc()
	}
}

func everAvailable(st *hyperv1.HostedClusterStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, string(hyperv1.HostedClusterAvailable))
	return c != nil && (c.Status == metav1.ConditionTrue || (st.Version != nil && lastCompleted(st.Version.History) != ""))
}
