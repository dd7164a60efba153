package hypershiftsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/atomicfile"
	"github.com/openhcp/openhcp/internal/backoff"
	"github.com/openhcp/openhcp/internal/encryptionconfig"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/procstat"
	"github.com/openhcp/openhcp/internal/sockdir"
)

// HostedAPIServerAnnotation on a HostedCluster records, once, whether the sim serves it: the
// address (<HostedAPIOptions.Address>:<port>, 127.0.0.1 by default) of its kube-apiserver, or
// "capped" for a cluster that came past the --hosted-apiservers cap and stays status-only.
// Decided at the cluster's first reconcile, before its endpoint is first reported, and kept
// across sim restarts (the port is reused), so api.url does not change while the sim's address
// stays the same. A sim restarted on another address (a new pod IP under make deploy) moves its
// clusters there, keeping their ports. Cluster Service applies HostedClusters server-side and does
// not own this annotation.
const HostedAPIServerAnnotation = "hypershift-sim.openhcp.io/hosted-apiserver"

const cappedValue = "capped"

var (
	hostedAPIServersRunning = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hypershift_sim_hosted_apiservers_running",
		Help: "Hosted kube-apiservers the sim runs that answer /readyz.",
	})
	hostedAPIServersCapped = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hypershift_sim_hosted_apiservers_capped",
		Help: "HostedClusters left status-only by --hosted-apiservers.",
	})
	hostedAPIServerStarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hypershift_sim_hosted_apiserver_starts_total",
		Help: "Hosted kube-apiserver starts by result: ok (answered /readyz), error (failed to start or exited first).",
	}, []string{"result"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(hostedAPIServersRunning, hostedAPIServersCapped, hostedAPIServerStarts)
}

// controlPlane is what the HostedCluster status needs to know about a cluster's hosted
// kube-apiserver; the zero value means none is served (disabled or capped).
type controlPlane struct {
	served, capped bool
	host           string // the address the apiserver binds (HostedAPIOptions.Address)
	port           int
	// due: the apiserver should run (the rollout's delay passed or an earlier one completed);
	// started: this reconcile started or checked it; ready: it answered /readyz; starting: it
	// is not running yet in this sim, or its process has not answered yet and started less
	// than startGrace ago; failed: its last start failed (detail says how) and is retried
	// with backoff.
	due, started, ready, starting, failed bool
	detail                                string // why it is not ready
	max                                   int
}

// hostedAPIServers runs one real kube-apiserver and one etcd per served HostedCluster, as
// HyperShift runs them per hosted control plane: the apiserver on its own port of the sim's
// address with the cluster's own PKI, its etcd on a unix socket only the sim's user may reach,
// with a CA and a space quota of its own. Slots are handed out in the order clusters are first
// seen; a cluster past the cap stays status-only for its whole life (a freed slot goes to
// the next new cluster, never to one already reported as capped: its api.url would change).
type hostedAPIServers struct {
	o HostedAPIOptions

	mu sync.Mutex
	// slots are the clusters given an apiserver by this process and not yet gone; the
	// HostedCluster cache may not show their annotation yet.
	slots   map[types.NamespacedName]int
	capped  map[types.NamespacedName]bool
	servers map[string]*hostedAPIServer // by control-plane namespace
	// egress is the proxy every hosted kube-apiserver's egress goes through (egressproxy.go),
	// started with the first apiserver and stopped after the last (stopAll).
	egress *egressProxy
	// oidc serves the apiservers their external auth issuers' discovery documents and keys,
	// fetched through the egress proxy's rules (oidcfront.go); started and stopped with it.
	oidc *oidcFront
}

// hostedAPIServer is one cluster's kube-apiserver and etcd processes and their files.
type hostedAPIServer struct {
	mu    sync.Mutex
	hcpNS string
	dir   string
	host  string
	port  int
	// egressSocket returns the egress proxy's socket, starting the proxy if it is not running.
	egressSocket func(context.Context) (string, error)
	// oidcFront returns the OIDC front, starting it (and the egress proxy) if it is not running.
	oidcFront func(context.Context) (*oidcFront, error)
	// etcd is the cluster's own etcd, started before its apiserver and stopped after it; the
	// apiserver is started again with a new one when it exits (its socket changes).
	etcd    *mgmtcluster.HostedEtcd
	proc    *mgmtcluster.Process
	counted bool // the current process's start is counted in hostedAPIServerStarts (it answered)
	started time.Time
	// ready: the current process answered /readyz at the last check (false with no process).
	// Read without mu (isReady), which a start holds for as long as its etcd takes to answer.
	ready    atomic.Bool
	rbacDone *mgmtcluster.Process // the process RBAC was last created in
	admin    *http.Client         // the sim's own admin identity, trusting the root CA
	adminPEM struct{ cert, key, ca []byte }
	// adminRoot is the root CA the admin client trusts (the serving certificate's issuer).
	adminRoot []byte
	// memoryKill says why the memory limit's check (memlimit.go) killed one of its processes,
	// until the next reconcile takes it; memoryKills counts such kills in a row (begun anew
	// after a minute without one) for the backoff of the next start.
	memoryKill     atomic.Pointer[string]
	memoryKills    int
	lastMemoryKill time.Time
	// failure says why the last start failed (the start error, or the exit status and last log
	// line of a process that exited before it answered); failures counts such starts in a row,
	// and retryAt is when the next may begin (startRetryAfter). All reset once a process
	// answers /readyz.
	failure  string
	failures int
	retryAt  time.Time
}

// startRetryAfter is how long the sim waits before it starts a hosted kube-apiserver again
// after its n-th failed start in a row: 1s, doubling to 30s, as a kubelet restarts a crashing
// container.
func startRetryAfter(n int) time.Duration {
	return backoff.Policy{Initial: time.Second, Max: 30 * time.Second}.After(n)
}

func newHostedAPIServers(o HostedAPIOptions) *hostedAPIServers {
	if o.HealthInterval == 0 {
		o.HealthInterval = 10 * time.Second
	}
	if o.Address == "" {
		o.Address = DefaultHostedAPIAddress
	}
	if o.LogMaxBytes == 0 {
		o.LogMaxBytes = DefaultHostedLogMaxBytes
	}
	if o.EtcdQuotaBytes == 0 {
		o.EtcdQuotaBytes = DefaultHostedEtcdQuota
	}
	if o.MemoryLimitBytes == 0 {
		o.MemoryLimitBytes = DefaultHostedMemoryLimit
	}
	if o.MemoryCheckInterval == 0 {
		o.MemoryCheckInterval = defaultMemoryCheckInterval
	}
	return &hostedAPIServers{o: o, slots: map[types.NamespacedName]int{}, capped: map[types.NamespacedName]bool{},
		servers: map[string]*hostedAPIServer{}}
}

// sweepSocketDirs removes the socket directories a killed sim of this user left behind, those
// whose owner process is gone (internal/sockdir): its hosted etcds' under o.SocketDir and its
// egress proxy's under the temporary directory. A running sim's, another user's and anything
// else stay.
func sweepSocketDirs(log logr.Logger, o HostedAPIOptions) {
	removed, err := mgmtcluster.SweepSocketDirs(o.SocketDir)
	egress, egressErr := sockdir.Sweep("", egressSocketDirPrefix)
	for _, d := range append(removed, egress...) {
		log.Info("removed a socket directory left by a sim that was killed", "dir", d)
	}
	if err := errors.Join(err, egressErr); err != nil {
		log.Error(err, "sweep socket directories")
	}
}

// Validate reports what is missing for hosted kube-apiservers (with Max > 0).
func (o HostedAPIOptions) Validate() error {
	if o.Max < 0 {
		return fmt.Errorf("hosted kube-apiservers: cap %d is negative", o.Max)
	}
	if o.EtcdQuotaBytes < 0 {
		return fmt.Errorf("hosted kube-apiservers: etcd quota %d is negative", o.EtcdQuotaBytes)
	}
	if o.Max == 0 {
		return nil
	}
	if o.Address != "" {
		if err := ValidHostedAddress(o.Address); err != nil {
			return fmt.Errorf("hosted kube-apiservers: %w", err)
		}
	}
	var missing []string
	for _, f := range []struct{ v, name string }{
		{o.APIServerPath, "kube-apiserver binary"}, {o.EtcdPath, "etcd binary"}, {o.Dir, "state directory"}, {o.LogDir, "log directory"},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("hosted kube-apiservers need: %s", strings.Join(missing, ", "))
	}
	return nil
}

// assign returns the cluster's slot, deciding it (and recording it in HostedAPIServerAnnotation)
// if this is the first time the cluster is seen.
func (h *hostedAPIServers) assign(ctx context.Context, c client.Client, hc *hyperv1.HostedCluster) (controlPlane, error) {
	cp := controlPlane{max: h.o.Max}
	key := client.ObjectKeyFromObject(hc)
	v, ok := hc.Annotations[HostedAPIServerAnnotation]
	if ok {
		port, moved := h.movedSlot(v)
		if !moved {
			return h.fromAnnotation(key, v, cp)
		}
		// Served at another address by an earlier sim (its pod IP changed): the same port here.
		return h.record(ctx, c, hc, net.JoinHostPort(h.o.Address, strconv.Itoa(port)), cp)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	list := &hyperv1.HostedClusterList{}
	if err := c.List(ctx, list); err != nil {
		return cp, fmt.Errorf("list HostedClusters to count hosted kube-apiservers: %w", err)
	}
	taken := map[types.NamespacedName]bool{}
	usedPorts := map[int]bool{}
	for k, port := range h.slots {
		taken[k], usedPorts[port] = true, true
	}
	for i := range list.Items {
		v := list.Items[i].Annotations[HostedAPIServerAnnotation]
		if v != "" && v != cappedValue {
			taken[client.ObjectKeyFromObject(&list.Items[i])] = true
			if _, p, err := net.SplitHostPort(v); err == nil {
				n, _ := strconv.Atoi(p)
				usedPorts[n] = true
			}
		}
	}
	value := cappedValue
	if len(taken) < h.o.Max {
		port, err := freePortNotIn(h.o.Address, usedPorts)
		if err != nil {
			return cp, err
		}
		value = net.JoinHostPort(h.o.Address, strconv.Itoa(port))
	}
	return h.recordLocked(ctx, c, hc, value, cp)
}

// movedSlot reports whether annotation v names a slot at an address other than this sim's, and
// its port.
func (h *hostedAPIServers) movedSlot(v string) (int, bool) {
	host, p, err := net.SplitHostPort(v)
	if err != nil || host == h.o.Address || net.ParseIP(host) == nil {
		return 0, false
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return 0, false
	}
	return port, true
}

func (h *hostedAPIServers) record(ctx context.Context, c client.Client, hc *hyperv1.HostedCluster, value string, cp controlPlane) (controlPlane, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.recordLocked(ctx, c, hc, value, cp)
}

// recordLocked writes the cluster's slot into HostedAPIServerAnnotation (a conditional patch)
// and takes it.
func (h *hostedAPIServers) recordLocked(ctx context.Context, c client.Client, hc *hyperv1.HostedCluster, value string, cp controlPlane) (controlPlane, error) {
	key := client.ObjectKeyFromObject(hc)
	patch := client.MergeFromWithOptions(hc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if hc.Annotations == nil {
		hc.Annotations = map[string]string{}
	}
	hc.Annotations[HostedAPIServerAnnotation] = value
	if err := c.Patch(ctx, hc, patch); err != nil {
		return cp, fmt.Errorf("record hosted kube-apiserver slot of HostedCluster %s: %w", key, err)
	}
	ctrl.LoggerFrom(ctx).Info("hosted kube-apiserver slot decided", "slot", value, "cap", h.o.Max)
	return h.fromAnnotationLocked(key, value, cp)
}

func (h *hostedAPIServers) fromAnnotation(key types.NamespacedName, v string, cp controlPlane) (controlPlane, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fromAnnotationLocked(key, v, cp)
}

func (h *hostedAPIServers) fromAnnotationLocked(key types.NamespacedName, v string, cp controlPlane) (controlPlane, error) {
	if v == cappedValue {
		if !h.capped[key] {
			h.capped[key] = true
			hostedAPIServersCapped.Set(float64(len(h.capped)))
		}
		cp.capped = true
		return cp, nil
	}
	host, p, err := net.SplitHostPort(v)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || host != h.o.Address || port <= 0 || port > 65535 {
		return cp, fmt.Errorf("annotation %s=%q of HostedCluster %s is not %s:<port> or %q", HostedAPIServerAnnotation, v, key, h.o.Address, cappedValue)
	}
	h.slots[key] = port
	cp.served, cp.host, cp.port = true, host, port
	return cp, nil
}

// release forgets a cluster whose finalizer is gone.
func (h *hostedAPIServers) release(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.slots, key)
	if h.capped[key] {
		delete(h.capped, key)
		hostedAPIServersCapped.Set(float64(len(h.capped)))
	}
}

// DefaultHostedAPIAddress is where hosted kube-apiservers bind when HostedAPIOptions.Address is
// empty: loopback, where make run's processes reach them.
const DefaultHostedAPIAddress = "127.0.0.1"

// ValidHostedAddress says why addr cannot be HostedAPIOptions.Address: it must be one IP
// address, which an apiserver can bind, advertise and name in its certificate (not 0.0.0.0).
func ValidHostedAddress(addr string) error {
	if ip := net.ParseIP(addr); ip == nil || ip.IsUnspecified() {
		return fmt.Errorf("%q is not one IP address the hosted kube-apiservers can bind and advertise", addr)
	}
	return nil
}

// freePortNotIn returns a port free on addr, not in used, and outside the kernel's ephemeral
// range: a hosted kube-apiserver's port is pinned for the cluster's life (its annotation, the
// api.url), and the apiserver binds it again at every start. A port of the ephemeral range is
// what a bind to port 0 and every outgoing connection take: another cluster's etcd, started on
// ports asked of the kernel while this apiserver was down (a sim restart, a crash's backoff),
// took it, and this cluster's apiserver could not start for as long as that etcd ran (a review).
func freePortNotIn(addr string, used map[int]bool) (int, error) {
	lo, hi, err := pinnablePorts()
	if err != nil {
		return 0, err
	}
	start := lo + mrand.IntN(hi-lo+1)
	for i := range hi - lo + 1 {
		p := lo + (start-lo+i)%(hi-lo+1)
		if used[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(p)))
		if err != nil {
			continue // taken, or not ours to bind
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port on %s in %d-%d for a hosted kube-apiserver", addr, lo, hi)
}

// ephemeralPortRange is the file that holds the kernel's ephemeral port range, in the network
// namespace of the process that reads it.
const ephemeralPortRange = "/proc/sys/net/ipv4/ip_local_port_range"

// pinnablePorts is the range a hosted kube-apiserver's port is pinned in: the ports from 10000
// up to the kernel's ephemeral range, or above it if that starts too low (Linux's default,
// 32768-60999, leaves 10000-32767).
func pinnablePorts() (lo, hi int, err error) {
	b, err := os.ReadFile(ephemeralPortRange)
	if err != nil {
		return 0, 0, fmt.Errorf("read the ephemeral port range: %w", err)
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil {
		return 0, 0, fmt.Errorf("read the ephemeral port range %q: %w", strings.TrimSpace(string(b)), err)
	}
	return PinnablePortRange(first, last)
}

// PinnablePortRange is the range hosted kube-apiservers' ports are pinned in, for the ephemeral
// port range first-last: from 10000 up to it, or above it if that leaves fewer than 1000 ports.
// Linux's default, 32768-60999, gives 10000-32767, the range the sim chart's NetworkPolicy admits.
func PinnablePortRange(first, last int) (lo, hi int, err error) {
	const floor, enough = 10000, 1000
	switch {
	case first-floor >= enough:
		return floor, first - 1, nil
	case 65535-last >= enough:
		return last + 1, 65535, nil
	}
	return 0, 0, fmt.Errorf("the ephemeral port range %d-%d leaves no %d ports above %d for the hosted kube-apiservers", first, last, enough, floor)
}

func (h *hostedAPIServers) server(hcpNS string, port int) *hostedAPIServer {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.servers[hcpNS]
	if !ok {
		s = &hostedAPIServer{hcpNS: hcpNS, dir: filepath.Join(h.o.Dir, hcpNS), host: h.o.Address, port: port, egressSocket: h.egressSocket, oidcFront: h.oidcFrontRunning}
		h.servers[hcpNS] = s
	}
	return s
}

// egressSocket returns the socket of the hosted kube-apiservers' egress proxy, starting it if
// it is not running.
func (h *hostedAPIServers) egressSocket(ctx context.Context) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.egress == nil {
		p, err := startEgressProxy(ctrl.LoggerFrom(ctx).WithName("egress"), h.o.Dir, h.o.EgressAllowedCIDRs)
		if err != nil {
			return "", err
		}
		h.egress = p
	}
	return h.egress.Socket, nil
}

// oidcFrontRunning returns the hosted kube-apiservers' OIDC front, starting it (and the egress
// proxy it fetches through) if it is not running.
func (h *hostedAPIServers) oidcFrontRunning(ctx context.Context) (*oidcFront, error) {
	if _, err := h.egressSocket(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.oidc == nil {
		f, err := startOIDCFront(ctrl.LoggerFrom(ctx).WithName("oidc-front"), h.egress)
		if err != nil {
			return nil, err
		}
		h.oidc = f
	}
	return h.oidc, nil
}

func (h *hostedAPIServers) lookup(hcpNS string) *hostedAPIServer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.servers[hcpNS]
}

func (h *hostedAPIServers) updateRunningGauge() {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.servers {
		if s.isReady() {
			n++
		}
	}
	hostedAPIServersRunning.Set(float64(n))
}

// isReady takes no lock: updateRunningGauge calls it for every cluster under h.mu, and a
// cluster whose start waits on its etcd holds its own lock meanwhile, which would hold every
// other cluster's reconcile (TestOneClusterStartingHoldsNoOtherCluster).
func (s *hostedAPIServer) isReady() bool { return s.ready.Load() }

// pki is what a hosted kube-apiserver is started from, read from the control-plane namespace.
type hostedPKI struct {
	rootCert, rootKey []byte // Secret root-ca
	clientCABundle    []byte // ConfigMap total-client-ca
	// oidc is the external auth the apiserver honours (from the HostedCluster).
	oidc hostedOIDC
}

// hostedOIDC is a cluster's OIDC provider (nil for none) and its issuer's CA bundle (empty: the
// system's roots).
type hostedOIDC struct {
	provider *configv1.OIDCProvider
	caPEM    []byte
}

// readHostedPKI reads the cluster's root CA and client CA bundle; ok is false until the PKI
// controller has made them.
func readHostedPKI(ctx context.Context, c client.Client, hcpNS string) (hostedPKI, bool, error) {
	var p hostedPKI
	root := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: hcpNS, Name: RootCASecret}, root); err != nil {
		return p, false, client.IgnoreNotFound(err)
	}
	bundle := &corev1.ConfigMap{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: hcpNS, Name: ClientCABundleConfigMap}, bundle); err != nil {
		return p, false, client.IgnoreNotFound(err)
	}
	p.rootCert, p.rootKey, p.clientCABundle = root.Data["ca.crt"], root.Data["ca.key"], []byte(bundle.Data[CABundleKey])
	if len(p.rootKey) == 0 || len(p.clientCABundle) == 0 {
		return p, false, nil
	}
	return p, true, nil
}

// startGrace is how long a (re)started kube-apiserver may take to answer before a cluster that
// was Available is reported unavailable: the process restarts with the sim (HyperShift's keep
// running when its operator restarts), and that alone should not flap Available.
const startGrace = 2 * time.Minute

// starting reports whether the current process has not answered yet and started less than
// startGrace ago.
func (s *hostedAPIServer) startingLocked() bool {
	return s.proc != nil && !s.counted && time.Since(s.started) < startGrace
}

// ensure writes the cluster's files (the client CA bundle again when it changed), starts its
// kube-apiserver unless one runs, checks /readyz and, the first time a process answers, creates
// the SRE RBAC in it. It reports whether the apiserver answers, whether it is still starting,
// whether its last start failed (then detail says how), and if not ready why.
func (h *hostedAPIServers) ensure(ctx context.Context, hcpNS string, port int, p hostedPKI) (st apiServerState, err error) {
	st.ready, st.detail, err = h.ensureLocked(ctx, hcpNS, port, p)
	s := h.server(hcpNS, port)
	s.mu.Lock()
	if !st.ready && s.failure != "" {
		st.failed, st.detail = true, s.failure
	}
	st.starting = !st.ready && !st.failed && s.startingLocked()
	s.mu.Unlock()
	return st, err
}

// apiServerState is what ensure observed of a hosted kube-apiserver.
type apiServerState struct {
	ready, starting, failed bool
	detail                  string
}

func (h *hostedAPIServers) ensureLocked(ctx context.Context, hcpNS string, port int, p hostedPKI) (bool, string, error) {
	s := h.server(hcpNS, port)
	defer h.updateRunningGauge()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeFiles(p); err != nil {
		return false, "", err
	}
	if err := s.syncAuthenticationLocked(ctx, p.oidc); err != nil {
		return false, "", err
	}
	s.reapExitedLocked(ctx)
	s.reapEtcdLocked(ctx)
	if why := s.memoryKill.Swap(nil); why != nil {
		s.memoryKilledLocked(*why)
	}
	if s.proc == nil {
		if time.Now().Before(s.retryAt) {
			return false, s.failure, nil
		}
		if err := s.start(ctx, h.o); err != nil {
			s.failedLocked(ctx, err.Error())
			return false, s.failure, nil
		}
	}
	err := mgmtcluster.HTTPReady(s.admin, s.url()+"/readyz")(ctx)
	s.ready.Store(err == nil)
	if err != nil {
		// A process that exits at once (a bad flag, its port taken) is a failed start now,
		// not one more reconcile later.
		if s.reapExitedLocked(ctx) {
			return false, s.failure, nil
		}
		return false, err.Error(), nil
	}
	if !s.counted {
		s.counted = true
		s.failure, s.failures, s.retryAt = "", 0, time.Time{}
		hostedAPIServerStarts.WithLabelValues("ok").Inc()
	}
	if s.rbacDone != s.proc {
		if err := createSRERBAC(ctx, s.restConfig()); err != nil {
			return false, "creating RBAC: " + err.Error(), nil
		}
		s.rbacDone = s.proc
	}
	return true, "", nil
}

// reapExitedLocked forgets a process that has exited, so the next ensure starts another, and
// reports whether it did. One that exited before it ever answered is a failed start.
func (s *hostedAPIServer) reapExitedLocked(ctx context.Context) bool {
	if s.proc == nil {
		return false
	}
	exited, err := s.proc.Exited()
	if !exited {
		return false
	}
	how := "exited"
	if err != nil {
		how = "exited (" + err.Error() + ")"
	}
	if !s.counted {
		s.failedLocked(ctx, fmt.Sprintf("kube-apiserver %s before it answered /readyz; last log line: %s", how, lastLine(s.proc.LogTail(4096))))
	} else {
		ctrl.LoggerFrom(ctx).Info("hosted kube-apiserver exited; starting it again", "err", err, "log", s.proc.LogPath)
	}
	s.proc = nil
	s.ready.Store(false)
	return true
}

// failedLocked records a failed start and when the next may begin.
func (s *hostedAPIServer) failedLocked(ctx context.Context, why string) {
	hostedAPIServerStarts.WithLabelValues("error").Inc()
	s.failures++
	wait := startRetryAfter(s.failures)
	s.failure, s.retryAt = why, time.Now().Add(wait)
	ctrl.LoggerFrom(ctx).Info("hosted kube-apiserver failed to start; trying again", "err", why, "failures", s.failures, "after", wait)
}

// memoryKilledLocked records a kill by the memory limit's check as why the plane is down, and
// holds its next start back as a crash loop's (1 s doubling to 30 s, begun anew after a minute
// without a kill), so a customer who keeps filling their plane's memory costs the sim one start
// per backoff, not one per reconcile. It is not a failed start: hostedAPIServerStarts does not
// count it (hypershift_sim_hosted_memory_kills_total does).
func (s *hostedAPIServer) memoryKilledLocked(why string) {
	now := time.Now()
	if now.Sub(s.lastMemoryKill) > time.Minute {
		s.memoryKills = 0
	}
	s.memoryKills++
	s.lastMemoryKill = now
	s.failure, s.retryAt = why, now.Add(startRetryAfter(s.memoryKills))
}

// maxFailureLine bounds the log line a StartFailed message carries.
const maxFailureLine = 300

// lastLine is the last non-empty line of a log tail, cut to maxFailureLine bytes.
func lastLine(tail string) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if line == "" {
		return "(empty log)"
	}
	if len(line) > maxFailureLine {
		line = strings.ToValidUTF8(line[:maxFailureLine], "") + "…"
	}
	return line
}

func (s *hostedAPIServer) url() string {
	return "https://" + net.JoinHostPort(s.host, strconv.Itoa(s.port))
}

// Files in a hosted kube-apiserver's directory.
const (
	servingCertFile = "serving.crt"
	servingKeyFile  = "serving.key"
	clientCAFile    = "client-ca.crt"
	adminCAFile     = "sim-admin-ca.crt"
	adminCAKeyFile  = "sim-admin-ca.key"
	saKeyFile       = "sa.key"
	pidFile         = "kube-apiserver.pid"
	etcdPIDFile     = "etcd.pid"
	// etcdDir holds the cluster's etcd: its PKI (pki/) and its data (data/).
	etcdDir = "etcd"
)

// writeFiles makes the cluster's directory: a serving certificate of its root CA (its address
// and localhost), the sim's own admin CA and certificate (a CA in no signer's hands), a
// service-account key, an encryption config, and the client CA bundle (total-client-ca plus the
// sim's admin CA), rewritten atomically whenever it differs, which kube-apiserver reloads by
// itself.
func (s *hostedAPIServer) writeFiles(p hostedPKI) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.dir, err)
	}
	root, err := pki.LoadAuthority(p.rootCert, p.rootKey)
	if err != nil {
		return fmt.Errorf("root CA of %s: %w", s.hcpNS, err)
	}
	ip := net.ParseIP(s.host)
	if !signedByCert(filepath.Join(s.dir, servingCertFile), root.Cert, ip) {
		serving, err := root.Issue(pki.Spec{CommonName: "kube-apiserver", Usage: pki.Server, NoOrganization: true,
			DNSNames: []string{"localhost"}, IPs: []net.IP{ip}, Lifetime: caValidity})
		if err != nil {
			return fmt.Errorf("serving certificate of %s: %w", s.hcpNS, err)
		}
		if err := atomicfile.Write(filepath.Join(s.dir, servingKeyFile), serving.KeyPEM, 0o600); err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(s.dir, servingCertFile), serving.CertPEM, 0o600); err != nil {
			return err
		}
	}
	if s.admin == nil {
		if err := s.loadOrCreateAdmin(p.rootCert); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, saKeyFile)); err != nil {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(s.dir, saKeyFile), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			return err
		}
	}
	if _, err := encryptionconfig.LoadOrCreate(s.dir); err != nil {
		return err
	}
	return s.writeClientCA(p.clientCABundle)
}

func (s *hostedAPIServer) writeClientCA(bundle []byte) error {
	want := append(append(bytes.TrimSpace(append([]byte{}, bundle...)), '\n'), s.adminPEM.ca...)
	path := filepath.Join(s.dir, clientCAFile)
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, want) {
		return nil
	}
	return atomicfile.Write(path, want, 0o600)
}

// loadOrCreateAdmin keeps the sim's admin identity of this hosted apiserver: a CA of its own
// (not a break-glass signer, so no revocation touches it) and a system:masters certificate.
func (s *hostedAPIServer) loadOrCreateAdmin(rootCertPEM []byte) error {
	caPath, caKeyPath := filepath.Join(s.dir, adminCAFile), filepath.Join(s.dir, adminCAKeyFile)
	caPEM, err1 := os.ReadFile(caPath)
	caKeyPEM, err2 := os.ReadFile(caKeyPath)
	if err1 != nil || err2 != nil {
		var err error
		caPEM, caKeyPEM, err = newCA("hypershift-sim-admin."+s.hcpNS, time.Now())
		if err != nil {
			return err
		}
		if err := atomicfile.Write(caKeyPath, caKeyPEM, 0o600); err != nil {
			return err
		}
		if err := atomicfile.Write(caPath, caPEM, 0o600); err != nil {
			return err
		}
	}
	ca, err := pki.LoadAuthority(caPEM, caKeyPEM)
	if err != nil {
		return fmt.Errorf("sim admin CA of %s: %w", s.hcpNS, err)
	}
	admin, err := ca.Issue(pki.Spec{CommonName: "system:hypershift-sim", Organization: []string{"system:masters"}, Usage: pki.Client, Lifetime: caValidity})
	if err != nil {
		return err
	}
	certPEM, keyPEM := admin.CertPEM, admin.KeyPEM
	s.adminPEM.cert, s.adminPEM.key, s.adminPEM.ca = certPEM, keyPEM, caPEM
	cert, err := tls.X509KeyPair(s.adminPEM.cert, s.adminPEM.key)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootCertPEM) {
		return fmt.Errorf("root CA of %s does not parse", s.hcpNS)
	}
	s.admin = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
	s.adminRoot = rootCertPEM
	return nil
}

// start runs the cluster's etcd (unless it runs) and then its kube-apiserver. A process left by
// an earlier sim that was killed (its pid file names it and it still runs this directory's
// apiserver or etcd) is ended first.
func (s *hostedAPIServer) start(ctx context.Context, o HostedAPIOptions) error {
	killOrphan(filepath.Join(s.dir, pidFile), apiserverMark(s.dir))
	if s.etcd == nil {
		if err := s.startEtcd(ctx, o); err != nil {
			return err
		}
	}
	encryption, err := encryptionconfig.LoadOrCreate(s.dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dir, auditPolicyFile), []byte(auditPolicy), 0o600); err != nil {
		return fmt.Errorf("write the audit policy of %s: %w", s.hcpNS, err)
	}
	socket, err := s.egressSocket(ctx)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dir, egressSelectorFile), []byte(egressSelection(socket)), 0o600); err != nil {
		return fmt.Errorf("write the egress selector configuration of %s: %w", s.hcpNS, err)
	}
	// ensure writes the cluster's authentication configuration before a start; a start without
	// one (nothing synced yet) gets none, with no external auth.
	if _, err := os.Stat(filepath.Join(s.dir, authenticationConfigFile)); errors.Is(err, os.ErrNotExist) {
		none, err := authenticationConfig(nil, "", nil)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(s.dir, authenticationConfigFile), none, 0o600); err != nil {
			return fmt.Errorf("write the authentication configuration of %s: %w", s.hcpNS, err)
		}
	}
	proc, err := mgmtcluster.StartProcess(ctx, mgmtcluster.ProcSpec{
		Name: s.hcpNS + "-kube-apiserver", Path: o.APIServerPath, LogDir: o.LogDir, LogMaxBytes: o.LogMaxBytes,
		Env: []string{"GOMEMLIMIT=" + strconv.FormatInt(apiserverGoMemLimit(o.MemoryLimitBytes), 10)},
		Args: append(hostedAPIServerArgs(s.dir, s.host, s.port, encryption, s.etcd, AuditLogPath(o.LogDir, s.hcpNS)),
			// The cluster's egress (aggregator, webhooks, kubelet and proxy paths) through
			// the sim's egress proxy, which never reaches the host's own network.
			"--egress-selector-config-file="+filepath.Join(s.dir, egressSelectorFile),
			// The cluster's external auth, if any (authconfig.go), reloaded when it changes;
			// its issuer is fetched by the sim's OIDC front, never by the apiserver.
			"--authentication-config="+filepath.Join(s.dir, authenticationConfigFile)),
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dir, pidFile), []byte(strconv.Itoa(proc.PID())), 0o600); err != nil {
		proc.Stop(10 * time.Second)
		return fmt.Errorf("write pid file of %s: %w", s.hcpNS, err)
	}
	s.proc, s.counted, s.started = proc, false, time.Now()
	s.ready.Store(false)
	ctrl.LoggerFrom(ctx).Info("hosted kube-apiserver started", "pid", proc.PID(), "address", s.host, "port", s.port, "log", proc.LogPath)
	return nil
}

// startEtcd runs the cluster's own etcd: TLS only, on a unix socket in a directory of its own
// under o.SocketDir (no TCP port), a CA of its own made in its
// directory on first start (no other cluster's apiserver holds a certificate it admits), its
// data kept across restarts of it and of the sim, and the space quota o.EtcdQuotaBytes, which
// only this cluster's objects count against.
func (s *hostedAPIServer) startEtcd(ctx context.Context, o HostedAPIOptions) error {
	dir := filepath.Join(s.dir, etcdDir)
	killOrphanEtcd(s.dir)
	e, err := mgmtcluster.StartHostedEtcd(ctx, mgmtcluster.HostedEtcdOptions{
		Name: s.hcpNS + "-etcd", Dir: dir, LogDir: o.LogDir, EtcdPath: o.EtcdPath,
		QuotaBytes: o.EtcdQuotaBytes, SocketParent: o.SocketDir, LogMaxBytes: o.LogMaxBytes, ReadyTimeout: etcdReadyTimeout,
		GoMemLimit: etcdGoMemLimit(o.MemoryLimitBytes)})
	if err != nil {
		return fmt.Errorf("etcd of %s: %w", s.hcpNS, err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, etcdPIDFile), []byte(strconv.Itoa(e.Proc.PID())), 0o600); err != nil {
		e.Stop()
		return fmt.Errorf("write the etcd pid file of %s: %w", s.hcpNS, err)
	}
	s.etcd = e
	ctrl.LoggerFrom(ctx).Info("hosted etcd started", "pid", e.Proc.PID(), "endpoint", e.Endpoint, "quotaBytes", o.EtcdQuotaBytes, "log", e.Proc.LogPath)
	return nil
}

// etcdReadyTimeout bounds the wait for a hosted etcd's /health (a reconcile waits on it).
const etcdReadyTimeout = 60 * time.Second

// apiserverMark and etcdMark are the arguments that tell a cluster's kube-apiserver and etcd
// processes, under its directory dir, apart from any other (killOrphan).
func apiserverMark(dir string) string { return "--cert-dir=" + dir }
func etcdMark(dir string) string {
	return "--data-dir=" + mgmtcluster.HostedEtcdDataDir(filepath.Join(dir, etcdDir))
}

// reapEtcdLocked notices an etcd that has exited: its apiserver is stopped too, so that the
// next start runs both again (a new etcd listens on a new socket, which the apiserver is
// started with); the old socket directory is removed.
func (s *hostedAPIServer) reapEtcdLocked(ctx context.Context) {
	if s.etcd == nil {
		return
	}
	exited, err := s.etcd.Proc.Exited()
	if !exited {
		return
	}
	ctrl.LoggerFrom(ctx).Info("hosted etcd exited; starting it and its kube-apiserver again", "err", err, "log", s.etcd.Proc.LogPath)
	s.etcd.Stop()
	s.etcd = nil
	_ = os.Remove(filepath.Join(s.dir, etcdPIDFile))
	s.stopAPIServerLocked()
}

// stopAPIServerLocked ends the cluster's kube-apiserver, if one runs.
func (s *hostedAPIServer) stopAPIServerLocked() {
	if s.proc != nil {
		s.proc.Stop(10 * time.Second)
		_ = os.Remove(filepath.Join(s.dir, pidFile))
		s.proc = nil
		s.ready.Store(false)
	}
}

// auditPolicy records every request at Metadata level (who, impersonated by whom, verb,
// resource, response code; never a body), from the moment the response starts: the hosted
// cluster's own record of what a customer or an SRE through the gateway did.
const (
	egressSelectorFile = "egress-selector.yaml"
	auditPolicyFile    = "audit-policy.yaml"
	auditPolicy        = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`
)

// AuditLogPath is the hosted kube-apiserver's audit log (JSON lines, one event per request) of
// a control plane, beside its process log.
func AuditLogPath(logDir, hcpNS string) string {
	return filepath.Join(logDir, hcpNS+"-kube-apiserver-audit.log")
}

func hostedAPIServerArgs(dir, host string, port int, encryptionConfig string, etcd *mgmtcluster.HostedEtcd, auditLog string) []string {
	return []string{
		"--audit-policy-file=" + filepath.Join(dir, auditPolicyFile),
		"--audit-log-path=" + auditLog,
		"--audit-log-maxsize=20", "--audit-log-maxbackup=1",
		"--etcd-servers=" + etcd.Endpoint,
		"--etcd-cafile=" + etcd.CAFile, "--etcd-certfile=" + etcd.CertFile, "--etcd-keyfile=" + etcd.KeyFile,
		"--encryption-provider-config=" + encryptionConfig,
		"--bind-address=" + host,
		"--advertise-address=" + host,
		"--secure-port=" + strconv.Itoa(port),
		// A door of its own on the pod's address under make deploy: every request needs a client
		// certificate of the cluster's client CA bundle, the health paths and /version too.
		"--anonymous-auth=false",
		"--cert-dir=" + dir,
		"--tls-cert-file=" + filepath.Join(dir, servingCertFile),
		"--tls-private-key-file=" + filepath.Join(dir, servingKeyFile),
		"--client-ca-file=" + filepath.Join(dir, clientCAFile),
		"--service-account-key-file=" + filepath.Join(dir, saKeyFile),
		"--service-account-signing-key-file=" + filepath.Join(dir, saKeyFile),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		// No controller-manager creates ServiceAccounts, as in a management cluster.
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	}
}

// killOrphanEtcd ends an etcd of the cluster in dir that a killed sim left running (killOrphan)
// and removes the socket directory its record names (mgmtcluster), which only its Stop would
// have: also when that etcd is long gone (a killed sim took it along) and the cluster is being
// removed, so no etcd starts there again to remove it.
func killOrphanEtcd(dir string) {
	killOrphan(filepath.Join(dir, etcdPIDFile), etcdMark(dir))
	mgmtcluster.RemoveRecordedEtcdSocketDir(filepath.Join(dir, etcdDir))
}

// killOrphan ends the process a pid file names if its command line still has arg (a
// kube-apiserver's --cert-dir or an etcd's --data-dir of this cluster: a sim killed with
// SIGKILL whose child outlived it), so its port and data are free again.
func killOrphan(pidPath, arg string) {
	pid, ok := markedPID(pidPath, arg)
	if !ok {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	// SIGKILL cannot be caught, but on a busy machine the exit can take a while: wait for it
	// against a generous deadline, so the port is free when the caller starts another.
	deadline := time.Now().Add(orphanExitWait)
	for processRunning(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

// ownProcess reports whether pid runs as this process's user (real and effective user IDs):
// the only user the sim's children run as.
func ownProcess(pid int) bool {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			ids := strings.Fields(rest) // real, effective, saved, file system
			me := strconv.Itoa(os.Geteuid())
			return len(ids) >= 2 && ids[0] == me && ids[1] == me
		}
	}
	return false
}

// orphanExitWait bounds how long killOrphan waits for the process it killed to be gone.
const orphanExitWait = 30 * time.Second

// processRunning reports whether pid runs (a zombie waiting to be reaped does not: it holds no
// port any more).
func processRunning(pid int) bool {
	st, err := procstat.Read(pid)
	return err == nil && st.State != "Z" && st.State != "X"
}

// stop ends the cluster's kube-apiserver and then its etcd (those that run).
func (s *hostedAPIServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopAPIServerLocked()
	if s.etcd != nil {
		s.etcd.Stop()
		_ = os.Remove(filepath.Join(s.dir, etcdPIDFile))
		s.etcd = nil
	}
}

// stopAll ends every hosted kube-apiserver, in parallel, when the sim stops.
func (h *hostedAPIServers) stopAll() {
	h.mu.Lock()
	servers := make([]*hostedAPIServer, 0, len(h.servers))
	for _, s := range h.servers {
		servers = append(servers, s)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.stop() }()
	}
	wg.Wait()
	h.mu.Lock()
	if h.oidc != nil {
		h.oidc.Stop()
		h.oidc = nil
	}
	if h.egress != nil {
		h.egress.Stop()
		h.egress = nil
	}
	h.mu.Unlock()
	hostedAPIServersRunning.Set(0)
}

// Start implements manager.Runnable: it waits for the manager to stop and then stops every
// hosted kube-apiserver, so none outlives a sim that ends normally (SIGTERM).
func (h *hostedAPIServers) Start(ctx context.Context) error {
	go h.watchMemory(ctx)
	<-ctx.Done()
	h.stopAll()
	return nil
}

// remove stops a deleted cluster's kube-apiserver and etcd and removes its data: its directory,
// which holds its etcd's. A process a killed sim left there (whose pid file names it) is ended
// first. Safe to call again.
func (h *hostedAPIServers) remove(hcpNS string) error {
	if s := h.lookup(hcpNS); s != nil {
		s.stop()
	}
	h.mu.Lock()
	if h.oidc != nil {
		_ = h.oidc.Set(hcpNS, "", nil)
	}
	h.mu.Unlock()
	dir := filepath.Join(h.o.Dir, hcpNS)
	killOrphan(filepath.Join(dir, pidFile), apiserverMark(dir))
	killOrphanEtcd(dir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the files of %s: %w", hcpNS, err)
	}
	h.mu.Lock()
	delete(h.servers, hcpNS)
	hostedMemoryBytes.DeleteLabelValues(hcpNS)
	h.mu.Unlock()
	h.updateRunningGauge()
	return nil
}

// syncClientCA writes a control plane's client CA file again from bundle (a revocation changed
// total-client-ca); it reports whether a kube-apiserver runs there.
func (h *hostedAPIServers) syncClientCA(hcpNS string, bundle []byte) (bool, error) {
	s := h.lookup(hcpNS)
	if s == nil {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.admin == nil {
		return false, nil
	}
	if exited, _ := s.proc.Exited(); exited {
		return false, nil
	}
	return true, s.writeClientCA(bundle)
}

// refuses mints a throwaway client certificate with a signer (the previous one of a revoked
// class, whose key the sim holds) and reports whether the control plane's running
// kube-apiserver refuses it (401). running is false when no apiserver runs there, so there is
// nothing to ask.
func (h *hostedAPIServers) refuses(ctx context.Context, hcpNS string, signerCert, signerKey []byte, cn string) (refused, running bool, err error) {
	s := h.lookup(hcpNS)
	if s == nil {
		return false, false, nil
	}
	s.mu.Lock()
	proc, rootPEM, url := s.proc, s.adminRoot, s.url()
	s.mu.Unlock()
	if proc == nil || rootPEM == nil {
		return false, false, nil
	}
	if exited, _ := proc.Exited(); exited {
		return false, false, nil
	}
	signer, err := pki.LoadAuthority(signerCert, signerKey)
	if err != nil {
		return false, true, err
	}
	probe, err := signer.Issue(pki.Spec{CommonName: cn, Usage: pki.Client, NoOrganization: true, Lifetime: caValidity})
	if err != nil {
		return false, true, err
	}
	cert, err := tls.X509KeyPair(probe.CertPEM, probe.KeyPEM)
	if err != nil {
		return false, true, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(rootPEM)
	// The certificate is sent whatever CAs the server names as acceptable, as kubectl and
	// client-go send theirs: with tls.Config.Certificates Go's client would silently send none
	// for a signer the server no longer names, and the request would pass as anonymous (403),
	// proving nothing about the certificate.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{
		RootCAs: roots, MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api", nil)
	if err != nil {
		return false, true, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		// The apiserver requests but does not require a client certificate, so a handshake
		// error is not a refusal of this certificate: ask again.
		return false, true, fmt.Errorf("probe %s with a certificate of the previous signer: %w", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusUnauthorized, true, nil
}

// signedByCert reports whether the PEM certificate at path verifies against ca, names ip and
// is not about to expire.
func signedByCert(path string, ca *x509.Certificate, ip net.IP) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false
	}
	return cert.CheckSignatureFrom(ca) == nil && time.Until(cert.NotAfter) > 24*time.Hour && cert.VerifyHostname(ip.String()) == nil
}

// syncAuthenticationLocked makes the OIDC front answer for the cluster's issuer and writes the
// apiserver's authentication configuration for it (none without one), atomically and only when
// it differs: a running apiserver reloads it by itself.
func (s *hostedAPIServer) syncAuthenticationLocked(ctx context.Context, o hostedOIDC) error {
	front, err := s.oidcFront(ctx)
	if err != nil {
		return err
	}
	issuer := ""
	if o.provider != nil {
		issuer = o.provider.Issuer.URL
	}
	if err := front.Set(s.hcpNS, issuer, o.caPEM); err != nil {
		ctrl.LoggerFrom(ctx).Info("external auth not honoured", "issuer", issuer, "err", err.Error())
		o.provider = nil
		_ = front.Set(s.hcpNS, "", nil)
	}
	want, err := authenticationConfig(o.provider, front.DiscoveryURL(s.hcpNS), front.CAPEM)
	if err != nil {
		return fmt.Errorf("authentication configuration of %s: %w", s.hcpNS, err)
	}
	path := filepath.Join(s.dir, authenticationConfigFile)
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, want) {
		return nil
	}
	if err := atomicfile.Write(path, want, 0o600); err != nil {
		return fmt.Errorf("write the authentication configuration of %s: %w", s.hcpNS, err)
	}
	ctrl.LoggerFrom(ctx).Info("hosted kube-apiserver authentication configuration written", "issuer", issuer)
	return nil
}
