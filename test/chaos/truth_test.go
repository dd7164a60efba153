package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/test/chaos/invariant"
)

var (
	hostedClusterGVR       = schema.GroupVersionResource{Group: "hypershift.openshift.io", Version: "v1beta1", Resource: "hostedclusters"}
	nodePoolGVR            = schema.GroupVersionResource{Group: "hypershift.openshift.io", Version: "v1beta1", Resource: "nodepools"}
	appliedManifestWorkGVR = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "appliedmanifestworks"}
	namespaceGVR           = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// truth reads what the region holds, from every source the invariants name.
type truth struct {
	arm      *armClient
	clusters csv1.ClustersClient
	pools    csv1.NodePoolsClient
	kube     map[string]dynamic.Interface // by management cluster
	maestro  *http.Client
}

func newTruth(arm *armClient) (*truth, error) {
	conn, err := region.DialClusterServiceAs(pki.SRE)
	if err != nil {
		return nil, fmt.Errorf("dial cluster service: %w", err)
	}
	fconn, err := region.DialClusterServiceAs(pki.Frontend)
	if err != nil {
		return nil, fmt.Errorf("dial cluster service as the frontend: %w", err)
	}
	tr := &truth{arm: arm, clusters: csv1.NewClustersClient(conn), pools: csv1.NewNodePoolsClient(fconn), kube: map[string]dynamic.Interface{}}
	for _, mc := range region.Info.ManagementClusters {
		cfg, err := clientcmd.BuildConfigFromFlags("", mc.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig of %s: %w", mc.Name, err)
		}
		cfg.Timeout = 15 * time.Second
		if tr.kube[mc.Name], err = dynamic.NewForConfig(cfg); err != nil {
			return nil, err
		}
	}
	tlsCfg, err := region.Info.Maestro.ClientTLS.Files().Client(strings.TrimPrefix(region.Info.Maestro.REST, "https://"))
	if err != nil {
		return nil, err
	}
	tr.maestro = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	return tr, nil
}

// snapshot is one read of every management cluster and of Maestro.
type snapshot struct {
	hosted, pools, namespaces, applied map[string][]unstructured.Unstructured // by management cluster
	bundles                            []string                               // each bundle's JSON
}

func (tr *truth) snapshot(ctx context.Context) (*snapshot, error) {
	s := &snapshot{hosted: map[string][]unstructured.Unstructured{}, pools: map[string][]unstructured.Unstructured{},
		namespaces: map[string][]unstructured.Unstructured{}, applied: map[string][]unstructured.Unstructured{}}
	for name, k := range tr.kube {
		for _, l := range []struct {
			gvr  schema.GroupVersionResource
			into map[string][]unstructured.Unstructured
		}{{hostedClusterGVR, s.hosted}, {nodePoolGVR, s.pools}, {namespaceGVR, s.namespaces}, {appliedManifestWorkGVR, s.applied}} {
			list, err := k.Resource(l.gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("list %s on %s: %w", l.gvr.Resource, name, err)
			}
			l.into[name] = list.Items
		}
	}
	resp, err := tr.maestro.Get(region.Info.Maestro.REST + "/api/maestro/v1/resource-bundles?size=10000")
	if err != nil {
		return nil, fmt.Errorf("list maestro resource bundles: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list maestro resource bundles: %d %s", resp.StatusCode, b)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("decode maestro resource bundles: %w", err)
	}
	for _, it := range list.Items {
		s.bundles = append(s.bundles, string(it))
	}
	return s, nil
}

// resource is one ARM resource of the workload and the Cluster Service ID of its cluster.
type resource struct {
	path string
	// csID is the Cluster Service ID of the cluster (of the pool's cluster for a node pool),
	// learnt once its create Succeeded; empty before.
	csID     string
	poolName string // set for a node pool
}

// observe reads what the region holds for r now; reads that fail are retried until ctx ends
// (a component may be down).
func (tr *truth) observe(ctx context.Context, r resource) (invariant.Observed, error) {
	for {
		o, err := tr.observeOnce(ctx, r, nil)
		if err == nil || ctx.Err() != nil {
			return o, err
		}
		sleep(ctx, time.Second)
	}
}

func (tr *truth) observeOnce(ctx context.Context, r resource, snap *snapshot) (invariant.Observed, error) {
	var o invariant.Observed
	path := r.path
	api := clusterAPIVersion
	if r.poolName != "" {
		api = nodePoolAPIVersion
	}
	a := tr.arm.do(ctx, http.MethodGet, path+"?api-version="+api, nil)
	switch a.Status {
	case http.StatusOK:
		o.ARMExists = true
	case http.StatusNotFound:
	default:
		return o, fmt.Errorf("GET %s: %d %v", path, a.Status, a.Err)
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if r.poolName == "" {
		resp, err := tr.clusters.ListClusters(cctx, &csv1.ListClustersRequest{ArmResourceIdPrefix: path, PageSize: 100})
		if err != nil {
			return o, fmt.Errorf("list clusters in cluster service: %w", err)
		}
		for _, c := range resp.GetClusters() {
			if strings.EqualFold(c.GetArmResourceId(), path) {
				o.Records++
				if r.csID == "" {
					r.csID = c.GetId()
				}
			}
		}
	} else if r.csID != "" {
		resp, err := tr.pools.ListNodePools(cctx, &csv1.ListNodePoolsRequest{ClusterId: r.csID})
		if err != nil && !strings.Contains(err.Error(), "NotFound") {
			return o, fmt.Errorf("list node pools in cluster service: %w", err)
		}
		for _, p := range resp.GetNodePools() {
			if strings.EqualFold(p.GetArmResourceId(), path) {
				o.Records++
			}
		}
	}
	if r.csID == "" {
		return o, nil // nothing of it can be on a management cluster without an ID
	}
	if snap == nil {
		var err error
		if snap, err = tr.snapshot(ctx); err != nil {
			return o, err
		}
	}
	for mc := range tr.kube {
		if r.poolName == "" {
			for _, hc := range snap.hosted[mc] {
				if strings.HasSuffix(hc.GetNamespace(), r.csID) {
					o.Placements = append(o.Placements, mc)
				}
			}
			for _, ns := range snap.namespaces[mc] {
				if strings.Contains(ns.GetName(), r.csID) {
					o.Namespaces++
				}
			}
			for _, w := range snap.applied[mc] {
				b, _ := json.Marshal(w.Object)
				if strings.Contains(string(b), r.csID) {
					o.AppliedWorks++
				}
			}
		} else {
			for _, np := range snap.pools[mc] {
				if strings.HasSuffix(np.GetNamespace(), r.csID) && np.GetName() == r.poolName {
					o.Placements = append(o.Placements, mc)
				}
			}
		}
	}
	if r.poolName == "" {
		for _, b := range snap.bundles {
			if strings.Contains(b, r.csID) {
				o.Bundles++
			}
		}
	}
	return o, nil
}

// clusterID is the Cluster Service ID of an ARM cluster, read until ctx ends.
func (tr *truth) clusterID(ctx context.Context, path string) (string, error) {
	for {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		resp, err := tr.clusters.ListClusters(cctx, &csv1.ListClustersRequest{ArmResourceIdPrefix: path, PageSize: 100})
		cancel()
		if err == nil {
			for _, c := range resp.GetClusters() {
				if strings.EqualFold(c.GetArmResourceId(), path) {
					return c.GetId(), nil
				}
			}
			return "", nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("cluster ID of %s: %w", path, err)
		}
		sleep(ctx, time.Second)
	}
}
