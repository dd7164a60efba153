package hypershiftsim

import (
	"net/netip"
	"time"
)

// HostedAPIOptions makes the sim run a real kube-apiserver for each HostedCluster, up to a cap
// (hostedapi.go).
type HostedAPIOptions struct {
	// Max is how many HostedClusters get a kube-apiserver; the others stay status-only (their
	// HostedAPIServer condition says CapReached). 0 disables hosted kube-apiservers entirely.
	Max int
	// APIServerPath is the pinned kube-apiserver binary.
	APIServerPath string
	// Dir holds one directory per control-plane namespace (certificates, client CA bundle,
	// service-account key, encryption config, pid files, and its etcd's PKI and data under
	// etcd/); LogDir receives <control-plane namespace>-kube-apiserver.log and
	// <control-plane namespace>-etcd.log.
	Dir, LogDir string
	// Address is the IP the hosted kube-apiservers bind and advertise, name in their serving
	// certificates and record in HostedAPIServerAnnotation (so status.controlPlaneEndpoint and
	// api.url name it); empty means 127.0.0.1. Under make deploy it is the sim pod's IP.
	Address string
	// EtcdPath is the pinned etcd binary. Each served cluster gets an etcd of its own, as
	// HyperShift runs one per hosted control plane, so no cluster's objects share a store, a
	// space quota or a client certificate with another's.
	EtcdPath string
	// EtcdQuotaBytes is each hosted cluster's etcd space quota (--quota-backend-bytes): what
	// one customer may fill, for their own cluster alone. Zero means DefaultHostedEtcdQuota.
	EtcdQuotaBytes int64
	// SocketDir is where each hosted etcd gets a short directory of its own (0700) for its unix
	// sockets: etcd serves no TCP port (mgmtcluster/etcdsocket.go). Empty means os.TempDir();
	// the sim's pod, whose root filesystem is read-only, names one in its emptyDir.
	SocketDir string
	// EgressAllowedCIDRs are addresses the hosted kube-apiservers' egress proxy reaches even
	// though they are not public (egressproxy.go): a test knob standing in for a hosted
	// cluster's own network, which the sim does not have. Empty in make run and make deploy.
	EgressAllowedCIDRs []netip.Prefix
	// HealthInterval is how often a served cluster's /readyz is checked again once it answers
	// (its Available condition follows it); zero means 10s.
	HealthInterval time.Duration
	// MemoryLimitBytes bounds each served control plane's memory: the anonymous resident memory
	// of its kube-apiserver and etcd together, over which the sim kills the larger of the two
	// (memlimit.go), as a pod's memory limit bounds each of HyperShift's. Zero means
	// DefaultHostedMemoryLimit.
	MemoryLimitBytes int64
	// MemoryCheckInterval is how often the control planes' memory is read; zero means 250ms.
	MemoryCheckInterval time.Duration
	// LogMaxBytes bounds each hosted kube-apiserver's and etcd's process log (with one
	// predecessor, twice this): their output is the customer's to drive (about 700 bytes for
	// each failed call of a webhook). Zero means DefaultHostedLogMaxBytes.
	LogMaxBytes int64
}

// DefaultHostedLogMaxBytes bounds a hosted kube-apiserver's and etcd's process log: 16 MiB,
// and as much again in the predecessor, so 64 MiB for a served cluster's two, inside the
// 512Mi per cluster the chart's hosted emptyDir allows beside the etcd quota.
const DefaultHostedLogMaxBytes = 16 << 20

// DefaultHostedEtcdQuota is a hosted cluster's etcd space quota when HostedAPIOptions does not
// set one: 256 MiB, a dev hosted cluster's room (HyperShift sizes etcd's volume per cluster, 8 GiB by
// default; the sim's etcds share one machine's memory and disk).
const DefaultHostedEtcdQuota = 256 << 20

// The HostedAPIServer condition on a HostedCluster says whether the sim serves a real
// kube-apiserver for it (not written when hosted kube-apiservers are disabled).
const (
	HostedAPIServerCondition = "HostedAPIServer"
	// True: the kube-apiserver answers /readyz at status.controlPlaneEndpoint.
	ReasonHostedAPIServerRunning = "Running"
	// False: the cluster is past the --hosted-apiservers cap and stays status-only.
	ReasonHostedAPIServerCapReached = "CapReached"
	// False: waiting for the rollout, or for a started apiserver to answer.
	ReasonHostedAPIServerWaiting  = "WaitingForRollout"
	ReasonHostedAPIServerNotReady = "NotReady"
	// False: the apiserver could not be started, or exited before it answered; the message
	// says how (the start error, or the exit status and the last line of its log). The sim
	// tries again with backoff.
	ReasonHostedAPIServerStartFailed = "StartFailed"
)
