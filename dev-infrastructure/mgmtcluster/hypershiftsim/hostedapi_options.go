package hypershiftsim

import "time"

// HostedAPIOptions makes the sim run a real kube-apiserver for each HostedCluster, up to a cap
// (hostedapi.go).
type HostedAPIOptions struct {
	// Max is how many HostedClusters get a kube-apiserver; the others stay status-only (their
	// HostedAPIServer condition says CapReached). 0 disables hosted kube-apiservers entirely.
	Max int
	// APIServerPath is the pinned kube-apiserver binary.
	APIServerPath string
	// Dir holds one directory per control-plane namespace (certificates, client CA bundle,
	// service-account key, encryption config, pid file); LogDir receives
	// <control-plane namespace>-kube-apiserver.log.
	Dir, LogDir string
	// Address is the IP the hosted kube-apiservers bind and advertise, name in their serving
	// certificates and record in HostedAPIServerAnnotation (so status.controlPlaneEndpoint and
	// api.url name it); empty means 127.0.0.1. Under make deploy it is the sim pod's IP.
	Address string
	// Etcd is the shared hosted etcd of this management cluster.
	Etcd EtcdClient
	// HealthInterval is how often a served cluster's /readyz is checked again once it answers
	// (its Available condition follows it); zero means 10s.
	HealthInterval time.Duration
}

// EtcdClient is how a hosted kube-apiserver (and the sim, to remove a deleted cluster's keys)
// reaches the hosted etcd: its https endpoint, the CA that verifies it, and a client
// certificate it admits.
type EtcdClient struct {
	Endpoint, CAFile, CertFile, KeyFile string
}

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
