// Package mgmtclusters is the admin API's read-only view of the management clusters (provision
// shards) themselves: whether a shard's kube-apiserver answers ready, and a hosted cluster's
// HostedCluster, NodePools and events as they are on the shard now. It never writes; the
// identity its kubeconfigs carry needs get and list on those kinds only (docs/sre.md).
package mgmtclusters

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// Health values of a shard's apiserver.
const (
	Healthy     = "healthy"     // GET /readyz answered 200
	Unhealthy   = "unhealthy"   // it answered, but not ready
	Unreachable = "unreachable" // no answer within the probe timeout
	Unknown     = "unknown"     // the admin API has no kubeconfig for the shard
)

// probeTimeout bounds one /readyz probe, so one dead shard cannot slow a shard list down to
// the admin API's whole call timeout; readTimeout bounds reading a cluster's objects, so a
// must-gather of a cluster on a dead shard still answers, with the rest, in seconds.
const (
	probeTimeout = 5 * time.Second
	readTimeout  = 10 * time.Second
)

var (
	hostedClusters = schema.GroupVersionResource{Group: "hypershift.openshift.io", Version: "v1beta1", Resource: "hostedclusters"}
	nodePools      = schema.GroupVersionResource{Group: "hypershift.openshift.io", Version: "v1beta1", Resource: "nodepools"}
	events         = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// Reader reads the management clusters it has a kubeconfig for, by shard name.
type Reader struct {
	shards map[string]*shard
}

type shard struct {
	http   *http.Client // the kubeconfig's credentials, for /readyz
	readyz string
	dyn    dynamic.Interface
}

// ParseKubeconfigs reads the --management-kubeconfigs flag: "shard=path,shard=path". An error
// names the entry at fault.
func ParseKubeconfigs(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, path, ok := strings.Cut(entry, "=")
		name, path = strings.TrimSpace(name), strings.TrimSpace(path)
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("entry %q is not shard=kubeconfig-path", entry)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("shard %s is named twice", name)
		}
		out[name] = path
	}
	return out, nil
}

// New builds a Reader from kubeconfig paths by shard name; an error names the shard whose
// kubeconfig does not load.
func New(kubeconfigs map[string]string) (*Reader, error) {
	r := &Reader{shards: map[string]*shard{}}
	for name, path := range kubeconfigs {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig of shard %s (%s): %w", name, path, err)
		}
		cfg.UserAgent = "openhcp-admin"
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("client of shard %s: %w", name, err)
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("client of shard %s: %w", name, err)
		}
		hc.Timeout = probeTimeout
		r.shards[name] = &shard{http: hc, readyz: strings.TrimRight(cfg.Host, "/") + "/readyz", dyn: dyn}
	}
	return r, nil
}

// Health probes the shard's kube-apiserver (GET /readyz): its status and a message saying what
// was seen. A nil Reader knows no shard.
func (r *Reader) Health(ctx context.Context, name string) (status, message string) {
	sh := r.shard(name)
	if sh == nil {
		return Unknown, "the admin API has no kubeconfig for this management cluster (--management-kubeconfigs)"
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sh.readyz, nil)
	if err != nil {
		return Unreachable, fmt.Sprintf("kube-apiserver /readyz: %v", err)
	}
	resp, err := sh.http.Do(req)
	if err != nil {
		return Unreachable, fmt.Sprintf("kube-apiserver /readyz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusOK {
		return Healthy, "kube-apiserver /readyz: ok"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	return Unhealthy, fmt.Sprintf("kube-apiserver /readyz answered %d: %s", resp.StatusCode, line)
}

// Objects are a hosted cluster's objects on its management cluster, as the apiserver returns
// them (managedFields left out).
type Objects struct {
	HostedClusters []json.RawMessage `json:"hostedClusters"`
	NodePools      []json.RawMessage `json:"nodePools"`
	// Events are the Kubernetes events of the HostedCluster's namespace and of its control
	// plane's namespace, oldest first.
	Events []json.RawMessage `json:"events"`
}

// ClusterObjects lists the HostedCluster and NodePools Cluster Service's ManifestWorks put on
// the shard for cluster id (by their openhcp.io/cluster-id label), and the events of their
// namespaces.
func (r *Reader) ClusterObjects(ctx context.Context, shardName, id string) (Objects, error) {
	sh := r.shard(shardName)
	if sh == nil {
		return Objects{}, fmt.Errorf("no kubeconfig for management cluster %s (--management-kubeconfigs)", shardName)
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: manifests.LabelClusterID + "=" + id}
	var out Objects
	hcs, err := sh.dyn.Resource(hostedClusters).Namespace(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return Objects{}, fmt.Errorf("list HostedClusters of %s on %s: %w", id, shardName, err)
	}
	nps, err := sh.dyn.Resource(nodePools).Namespace(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return Objects{}, fmt.Errorf("list NodePools of %s on %s: %w", id, shardName, err)
	}
	namespaces := map[string]bool{}
	for _, hc := range hcs.Items {
		namespaces[hc.GetNamespace()] = true
		// HyperShift's control-plane namespace: <namespace>-<name>.
		namespaces[hc.GetNamespace()+"-"+hc.GetName()] = true
	}
	if out.HostedClusters, err = raw(hcs.Items); err != nil {
		return Objects{}, err
	}
	if out.NodePools, err = raw(nps.Items); err != nil {
		return Objects{}, err
	}
	var evs []unstructured.Unstructured
	for ns := range namespaces {
		l, err := sh.dyn.Resource(events).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return Objects{}, fmt.Errorf("list events of namespace %s on %s: %w", ns, shardName, err)
		}
		evs = append(evs, l.Items...)
	}
	sort.SliceStable(evs, func(i, j int) bool {
		return evs[i].GetCreationTimestamp().Time.Before(evs[j].GetCreationTimestamp().Time)
	})
	if out.Events, err = raw(evs); err != nil {
		return Objects{}, err
	}
	return out, nil
}

func (r *Reader) shard(name string) *shard {
	if r == nil {
		return nil
	}
	return r.shards[name]
}

func raw(items []unstructured.Unstructured) ([]json.RawMessage, error) {
	out := []json.RawMessage{}
	for _, it := range items {
		it.SetManagedFields(nil)
		b, err := json.Marshal(it.Object)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s/%s: %w", it.GetKind(), it.GetNamespace(), it.GetName(), err)
		}
		out = append(out, b)
	}
	return out, nil
}
