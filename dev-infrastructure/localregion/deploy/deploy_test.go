package deploy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/dev-infrastructure/images"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestDeployedRegionLifecycleSurvivesAHelmUpgrade is make deploy's end-to-end test: the region
// with the service cluster's charts (Maestro server, Cluster Service, backend, frontend, admin
// API, break-glass gateway) and both management stamps' charts installed by Helm on the real node
// (mgmt-2's control plane beside it), PostgreSQL and the broker on the host. An ARM create sent
// to the Helm-deployed frontend must reach Succeeded with the HostedCluster made by the pods on
// the node; a helm upgrade of every chart to a new
// image revision while that create is in flight must roll the Deployments without failing it;
// the cluster's api.url must answer the customer's admin credential from the node's network,
// as a door that refuses anyone without a certificate; and a delete must remove the
// HostedCluster, its kube-apiserver process and its keys in the hosted etcd again. A second
// cluster, made while the first exists, must be placed on mgmt-2 and Succeed there.
func TestDeployedRegionLifecycleSurvivesAHelmUpgrade(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node needs root")
	}
	for _, bin := range []string{"containerd", "ctr", "runc", "/usr/lib/cni/bridge", "nsenter", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed; run make deps", bin)
		}
	}
	if os.Getenv("OPENHCP_DEPLOY_E2E") != "1" {
		t.Skip("opt-in (make test-deploy, OPENHCP_DEPLOY_E2E=1): builds images and brings up the node and a region, minutes on this machine (docs/deploy.md#make-deploy)")
	}
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Generous: on a loaded machine the two image builds alone have taken 17 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	// Not t.TempDir(): its parent is 0700, and PostgreSQL runs as the postgres user, which must
	// traverse the directory.
	state, err := os.MkdirTemp("", "openhcp-deploy-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(state, 0o755)
	t.Cleanup(func() { _ = os.RemoveAll(state) })
	begin := time.Now()
	d, err := Up(ctx, Config{Root: root, StateDir: state, Progress: testWriter{t},
		// Slow enough that the helm upgrades below (seven charts, one after the other) start while
		// the create is in flight.
		Sim: localregion.SimConfig{AvailableDelay: 45 * time.Second, DeleteDelay: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	nsName := d.Node.Netns.Name
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			d.Stop()
		}
	})
	upTime := time.Since(begin)
	t.Logf("deployed in %s (node: %v)", upTime.Round(time.Millisecond), d.Node.Started)

	// region.json is written in make run's format, with the node's cluster reachable from the host.
	var info localregion.Info
	b, err := os.ReadFile(d.RegionFile())
	// Both stamps of dev-local: the node, and mgmt-2 with its control plane beside the node.
	if err != nil || json.Unmarshal(b, &info) != nil || len(info.ManagementClusters) != 2 {
		t.Fatalf("region.json: %v: %s", err, b)
	}
	mc, mc2 := info.ManagementClusters[0], info.ManagementClusters[1]
	if mc.Kubeconfig != d.Node.HostKubeconfig || !strings.HasPrefix(mc.Server, "https://127.0.0.1:") {
		t.Errorf("management cluster in region.json: %+v", mc)
	}
	if mc2.ProvisionShard != "mgmt-2" || mc2.Kubeconfig == d.Node.HostKubeconfig || !strings.HasPrefix(mc2.Server, "https://127.0.0.1:") {
		t.Errorf("second management cluster in region.json: %+v", mc2)
	}
	client, err := info.Frontend.HTTPClient(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The service cluster runs on the node, not as the launcher's processes: region.json's
	// endpoints are host forwards to the pods' Services.
	for _, name := range []string{"frontend", "backend", "cluster-service", "admin"} {
		if _, err := d.Region.Process(name); err == nil {
			t.Errorf("%s runs as a process of the launcher", name)
		}
	}
	if len(d.Services.Namespaces()) != len(workloads) {
		t.Errorf("installed %v, want every one of %d service charts", d.Services.Namespaces(), len(workloads))
	}
	for _, ep := range []string{info.Frontend.URL, info.Admin.URL, info.Maestro.REST} {
		if !strings.HasPrefix(ep, "https://127.0.0.1:") {
			t.Errorf("endpoint %s is not a host forward", ep)
		}
	}
	// The sim's /metrics is TLS on its pod address, with a certificate of the service CA that
	// names the host forward's 127.0.0.1.
	if !strings.HasPrefix(mc.SimMetricsURL, "https://") {
		t.Errorf("sim metrics %s are not TLS", mc.SimMetricsURL)
	}
	ca, err := os.ReadFile(d.Region.PKI().CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	serviceCA := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	for _, u := range []string{mc.SimMetricsURL, mc2.SimMetricsURL} {
		resp, err := serviceCA.Get(u)
		if err != nil {
			t.Fatalf("%s from the host: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s", u, resp.Status)
		}
	}

	// The region's Prometheus scrapes every workload and evaluates every shipped rule.
	checkPrometheus(ctx, t, info)

	// Every port of the deployed region, in the node's namespace and in its pods, refuses a
	// caller without a client certificate, or the node (or PodDoors, for the charts' TLS
	// metrics) says why it may answer (node.Node.OpenDoors; docs/security.md, "Every listener").
	open, probed, err := d.Node.OpenDoors(ctx, PodDoors()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probed {
		t.Logf("probed %s", p)
	}
	for _, f := range open {
		t.Errorf("open door in the deployed region: %s", f)
	}

	// The charts' NetworkPolicies are enforced: an admitted namespace reaches Cluster Service,
	// the sim's and the agent's pods do not.
	networkPoliciesAreEnforced(ctx, t, d, func(args ...string) (string, error) {
		out, err := d.Node.Kubectl(ctx, args...)
		return strings.TrimSpace(string(out)), err
	})

	// A new image revision of both charts, built and loaded before the create so that the
	// upgrade happens while it is in flight.
	buildStart := time.Now()
	variantDir := filepath.Join(state, "variant-images")
	src, err := images.GitSource(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	src.Variant = "upgrade"
	specs, err := imagesFor()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := images.Build(ctx, images.Options{Root: root, Out: variantDir, Source: src, Specs: specs}); err != nil {
		t.Fatal(err)
	}
	vm, err := d.Node.LoadManifest(ctx, variantDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("variant images built and loaded in %s", time.Since(buildStart).Round(time.Millisecond))

	a := armClient{t: t, base: info.Frontend.URL, http: client, caller: "5d0e8a3c-9b1f-4c2e-8a7d-6f4b3c2a1e09"}
	sub, rg := "2b9e0f5a-6a35-4c62-9f3a-6b0f3c2d1e01", "rg-deploy"
	a.do(http.MethodPut, "/subscriptions/"+sub+"?api-version=2.0", map[string]any{
		"state": "Registered", "registrationDate": time.Now().UTC().Format(time.RFC3339),
		"properties": map[string]any{"tenantId": "7c2a0b8e-1f4d-4e57-9a63-0d2f5e6b7c81"}}, http.StatusOK, http.StatusCreated)
	path := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/deployed", sub, rg)
	created := time.Now()
	put := a.do(http.MethodPut, path+"?api-version="+apiVersion, clusterBody(info.Location, sub, rg), http.StatusCreated)
	async := put.Header.Get("Azure-AsyncOperation")

	// The Maestro agent pod applied the ManifestWork: the HostedCluster is on the node.
	kubectl := func(args ...string) (string, error) {
		out, err := d.Node.Kubectl(ctx, args...)
		return strings.TrimSpace(string(out)), err
	}
	waitFor(t, 3*time.Minute, "the HostedCluster on the node", func() error {
		out, err := kubectl("get", "hostedclusters", "-A", "-o", "name")
		if err != nil || out == "" {
			return fmt.Errorf("none yet (%v)", err)
		}
		return nil
	})
	t.Logf("HostedCluster on the node %s after the PUT", time.Since(created).Round(time.Millisecond))

	upgradeStart := time.Now()
	if st := a.operation(async); armdoc.ProvisioningState(st).Terminal() {
		t.Fatalf("create is %s before the upgrade; the test needs it in flight (raise AvailableDelay)", st)
	}
	// The service charts first: the frontend, backend and Cluster Service carry the operation.
	if err := d.Services.Upgrade(ctx, variantDir); err != nil {
		t.Fatal(err)
	}
	t.Logf("helm upgrade of the service charts took %s; create is %s", time.Since(upgradeStart).Round(time.Millisecond), a.operation(async))
	// Each workload's pods (by namespace and, where two share one, the chart's name label) and
	// the image they must run.
	type pods struct{ namespace, selector, image string }
	var rolled []pods
	for _, c := range d.Clusters {
		if err := c.Upgrade(ctx, variantDir); err != nil {
			t.Fatal(err)
		}
		rolled = append(rolled, pods{c.AgentNamespace(), "", "maestro"}, pods{c.SimNamespace(), "app.kubernetes.io/name=hypershift-sim", "hypershift-sim"})
	}
	shared := map[string]int{}
	for _, ns := range d.Services.Namespaces() {
		shared[ns]++
	}
	for name, ns := range d.Services.Namespaces() {
		p := pods{ns, "", workloads[name].image}
		if shared[ns] > 1 {
			p.selector = "app.kubernetes.io/name=" + name // service-base.selector
		}
		rolled = append(rolled, p)
	}
	for _, p := range rolled {
		want := vm.Images[p.image].DigestRef()
		args := []string{"get", "pods", "-n", p.namespace, "-o", "jsonpath={.items[*].spec.containers[0].image}"}
		if p.selector != "" {
			args = append(args, "-l", p.selector)
		}
		// helm --wait returns once the new pods are ready; the old ones may still be terminating.
		waitFor(t, 2*time.Minute, "only "+want+" in "+p.namespace+" "+p.selector, func() error {
			got, err := kubectl(args...)
			if err != nil || strings.Trim(strings.ReplaceAll(got, want, ""), " ") != "" || got == "" {
				return fmt.Errorf("pods run %q (%v)", got, err)
			}
			return nil
		})
	}
	t.Logf("helm upgrade of every chart to %s rolled out in %s; create is %s", vm.Images["maestro"].Tag, time.Since(upgradeStart).Round(time.Millisecond), a.operation(async))

	final := a.wait(async, 5*time.Minute)
	if final != "Succeeded" {
		t.Fatalf("create ended %s across the helm upgrade", final)
	}
	t.Logf("create Succeeded %s after the PUT", time.Since(created).Round(time.Millisecond))
	if out, err := kubectl("get", "hostedclusters", "-A", "-o", `jsonpath={.items[*].status.conditions[?(@.type=="Available")].status}`); err != nil || out != "True" {
		t.Errorf("HostedCluster Available = %q (%v)", out, err)
	}

	// Cluster Service sealed the cluster's pull secret and etcd key to the management cluster's
	// key and the sim opened them: the Secrets are on the node, and Maestro holds neither in clear.
	maestroHoldsNoSecretInClear(ctx, t, d, kubectl)

	// The cluster's api.url is its real kube-apiserver in the sim's pod, on the pod IP: the
	// customer's admin credential from ARM reaches it from the node's network.
	hosted := customerReachesAPIURL(ctx, t, d, a, path, kubectl)

	// An SRE maintenance write through the deployed admin API is signed and carried out.
	sreMaintenanceWriteIsCarriedOut(ctx, t, info, sub)

	// The second stamp: with one cluster on mgmt-1, the next one is placed on mgmt-2 (least
	// loaded), its HostedCluster lives in mgmt-2's apiserver and its control plane in mgmt-2's
	// sim pod on the node; the admin API sees both shards healthy.
	clusterOnTheSecondStamp(ctx, t, d, a, info, sub, rg, kubectl)

	deleted := time.Now()
	del := a.do(http.MethodDelete, path+"?api-version="+apiVersion, nil, http.StatusAccepted)
	if final := a.wait(del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final != "Succeeded" {
		t.Fatalf("delete ended %s", final)
	}
	waitFor(t, time.Minute, "no HostedCluster on the node", func() error {
		out, err := kubectl("get", "hostedclusters", "-A", "-o", "name")
		if err != nil || out != "" {
			return fmt.Errorf("%q (%v)", out, err)
		}
		return nil
	})
	t.Logf("delete Succeeded and the HostedCluster gone %s after the DELETE", time.Since(deleted).Round(time.Millisecond))
	// Its kube-apiserver and etcd processes went with it (the sim removes their data with them).
	waitFor(t, time.Minute, "no kube-apiserver or etcd process of "+hosted.hcpNS, func() error {
		if pids := hostedControlPlanePIDs(t, hosted.hcpNS); len(pids) > 0 {
			return fmt.Errorf("still running: %v", pids)
		}
		return nil
	})
	t.Logf("the hosted kube-apiserver and etcd of %s are gone", hosted.hcpNS)

	stopBegin := time.Now()
	d.Stop()
	stopped = true
	t.Logf("stopped in %s; whole test %s", time.Since(stopBegin).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
	if _, err := os.Stat("/run/netns/" + nsName); !os.IsNotExist(err) {
		t.Errorf("namespace %s left behind", nsName)
	}
	if _, err := os.Stat(d.RegionFile()); !os.IsNotExist(err) {
		t.Errorf("region.json left behind")
	}
}

const apiVersion = "2024-06-10-preview"

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func waitFor(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// armClient calls the frontend as ARM does (ARM's client certificate, request IDs).
type armClient struct {
	t    *testing.T
	base string
	http *http.Client
	// caller is the ARM caller's object ID (x-ms-client-object-id), who owns a credential.
	caller string
}

type armResponse struct {
	Header http.Header
	Body   map[string]any
}

func (a armClient) do(method, path string, body any, want ...int) armResponse {
	a.t.Helper()
	u := path
	if !strings.HasPrefix(u, "https://") {
		u = a.base + path
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-ms-client-request-id", fmt.Sprint(time.Now().UnixNano()))
	if a.caller != "" {
		req.Header.Set("x-ms-client-object-id", a.caller)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := armResponse{Header: resp.Header}
	_ = json.Unmarshal(raw, &out.Body)
	for _, w := range want {
		if resp.StatusCode == w {
			return out
		}
	}
	a.t.Fatalf("%s %s: %d, want %v: %s", method, u, resp.StatusCode, want, raw)
	return out
}

// operation is an async operation's current status.
func (a armClient) operation(asyncURL string) string {
	a.t.Helper()
	s, _ := a.do(http.MethodGet, asyncURL, nil, http.StatusOK).Body["status"].(string)
	return s
}

// wait follows an async operation until it is terminal, failing the test if it never is.
func (a armClient) wait(asyncURL string, timeout time.Duration) string {
	a.t.Helper()
	var s string
	waitFor(a.t, timeout, "operation "+asyncURL, func() error {
		if s = a.operation(asyncURL); armdoc.ProvisioningState(s).Terminal() {
			return nil
		}
		return fmt.Errorf("still %s", s)
	})
	return s
}

// clusterBody is a valid create body, as test/e2e's.
func clusterBody(location, sub, rg string) map[string]any {
	net := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network"
	mi := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
	return map[string]any{
		"location": location,
		"properties": map[string]any{
			"version": map[string]any{"id": "4.19", "channelGroup": "stable"},
			"network": map[string]any{"networkType": "OVNKubernetes", "podCidr": "10.128.0.0/14", "serviceCidr": "172.30.0.0/16",
				"machineCidr": "10.0.0.0/16", "hostPrefix": 23},
			"api": map[string]any{"visibility": "Public"},
			"platform": map[string]any{
				"managedResourceGroup": "managed-" + rg, "subnetId": net + "/virtualNetworks/vnet/subnets/workers",
				"networkSecurityGroupId": net + "/networkSecurityGroups/nsg", "outboundType": "LoadBalancer",
				"operatorsAuthentication": map[string]any{"userAssignedIdentities": map[string]any{
					"controlPlaneOperators":  map[string]string{"cluster-api-azure": mi + "capz"},
					"dataPlaneOperators":     map[string]string{"disk-csi-driver": mi + "disk"},
					"serviceManagedIdentity": mi + "service",
				}},
			},
		},
		"identity": map[string]any{"type": "UserAssigned",
			"userAssignedIdentities": map[string]any{mi + "service": map[string]any{}, mi + "capz": map[string]any{}}},
	}
}

// maestroHoldsNoSecretInClear reads the hosted cluster's etcd key and pull secret from the
// node (what the sim opened) and fails if Maestro's database or its REST bundle list holds
// either in clear (as test/e2e's TestMaestroHoldsNoSecretInClear does for make run).
func maestroHoldsNoSecretInClear(ctx context.Context, t *testing.T, d *Region, kubectl func(...string) (string, error)) {
	t.Helper()
	nsName, err := kubectl("get", "hostedclusters", "-A", "-o", "jsonpath={.items[0].metadata.namespace} {.items[0].metadata.name}")
	f := strings.Fields(nsName)
	if err != nil || len(f) != 2 {
		t.Fatalf("HostedCluster on the node: %q (%v)", nsName, err)
	}
	ns, hc := f[0], f[1]
	secret := func(name, key string) []byte {
		t.Helper()
		out, err := kubectl("get", "secret", name, "-n", ns, "-o", "go-template={{index .data \""+key+"\"}}")
		if err != nil {
			t.Fatalf("secret %s/%s on the node: %v", ns, name, err)
		}
		b, err := base64.StdEncoding.DecodeString(out)
		if err != nil || len(b) == 0 {
			t.Fatalf("secret %s/%s key %s on the node: %q (%v)", ns, name, key, out, err)
		}
		return b
	}
	etcdKey := secret(manifests.EtcdEncryptionSecretName(hc), "key")
	if len(etcdKey) != 32 {
		t.Fatalf("etcd encryption secret on the node: %d bytes, want 32", len(etcdKey))
	}
	pullSecret := secret(manifests.PullSecretName(hc), ".dockerconfigjson")
	needles := map[string][]byte{
		"etcd key":                 etcdKey,
		"etcd key (base64)":        []byte(base64.StdEncoding.EncodeToString(etcdKey)),
		"etcd key (hex, bytea)":    []byte(fmt.Sprintf("%x", etcdKey)),
		"pull secret (JSON)":       pullSecret,
		"pull secret (base64)":     []byte(base64.StdEncoding.EncodeToString(pullSecret)),
		"pull secret (hex, bytea)": []byte(fmt.Sprintf("%x", pullSecret)),
	}
	for _, s := range d.Region.Secrets() {
		if bytes.Contains(pullSecret, []byte(s)) {
			needles["pull secret credential"] = []byte(s)
		}
	}
	if _, ok := needles["pull secret credential"]; !ok {
		t.Fatalf("the node's pull secret carries none of the region's pull secret credentials: %s", pullSecret)
	}
	find := func(where string, hay []byte) {
		t.Helper()
		for what, n := range needles {
			if bytes.Contains(hay, n) {
				t.Errorf("%s holds the cluster's %s in clear", where, what)
			}
		}
	}

	login, err := d.Region.Info.Postgres.Role("maestro")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(login.DSN + "&passfile=" + login.PassFile)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect as maestro: %v", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	sawWork := false
	for _, table := range tables {
		rows, err := conn.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t`)
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		for _, row := range texts {
			sawWork = sawWork || strings.Contains(row, ns)
			find("Maestro's table "+table, []byte(row))
		}
	}
	if !sawWork {
		t.Fatalf("no row of Maestro's database (%v) names the cluster's namespace %s: the scan read nothing of it", tables, ns)
	}

	info := d.Region.Info
	tlsCfg, err := info.Maestro.Files().Client(strings.TrimPrefix(info.Maestro.REST, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	sawWork = false
	for page := 1; page < 100; page++ {
		q := url.Values{"page": {strconv.Itoa(page)}, "size": {"100"}}
		resp, err := client.Get(info.Maestro.REST + "/api/maestro/v1/resource-bundles?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("list bundles: %d %s", resp.StatusCode, body)
		}
		sawWork = sawWork || bytes.Contains(body, []byte(ns))
		find("Maestro's REST bundle list", body)
		if !bytes.Contains(body, []byte(`"kind":"ResourceBundle"`)) {
			break
		}
	}
	if !sawWork {
		t.Fatalf("no bundle names the cluster's namespace %s: the scan read nothing of it", ns)
	}
	t.Logf("Maestro's database (%d tables) and REST bundles hold neither the etcd key nor the pull secret of %s in clear", len(tables), hc)
}

// hostedControlPlane is what the test learnt of a cluster's hosted kube-apiserver.
type hostedControlPlane struct {
	hcpNS, apiURL string
}

// customerReachesAPIURL asks ARM for the cluster's admin credential, and with its kubeconfig
// asks api.url for /readyz and the namespace list, dialling from the node's network namespace
// (where the pod IP is routed; the host has no route to it). It also checks that api.url
// refuses a caller without a certificate, that the door probe finds the apiserver's port on
// the sim's pod and finds it closed, and that its process and etcd keys exist (so that their
// absence after the delete means something).
func customerReachesAPIURL(ctx context.Context, t *testing.T, d *Region, a armClient, path string, kubectl func(...string) (string, error)) hostedControlPlane {
	t.Helper()
	// api.url is the sim pod's IP, so it moves when the helm upgrade replaces the sim's pod
	// (docs/deploy.md, "What is not built yet"): a cluster that became Available on the old pod
	// shows the new address once the new pod's apiserver runs and its status comes back through
	// Maestro and Cluster Service.
	var apiURL string
	waitFor(t, 3*time.Minute, "api.url on the running sim pod", func() error {
		cluster := a.do(http.MethodGet, path+"?api-version="+apiVersion, nil, http.StatusOK).Body
		props, _ := cluster["properties"].(map[string]any)
		api, _ := props["api"].(map[string]any)
		apiURL, _ = api["url"].(string)
		simPodIP, err := kubectl("get", "pods", "-n", simNamespace, "-l", "app.kubernetes.io/name=hypershift-sim", "--field-selector=status.phase=Running", "-o", "jsonpath={.items[0].status.podIP}")
		if err != nil {
			return err
		}
		u, err := url.Parse(apiURL)
		if err != nil || u.Scheme != "https" || u.Hostname() != simPodIP {
			return fmt.Errorf("api.url %q: want https://<the sim pod's IP %s>:<port> (%v)", apiURL, simPodIP, err)
		}
		return nil
	})
	u, _ := url.Parse(apiURL) // parsed in the wait above
	nsName, err := kubectl("get", "hostedclusters", "-A", "-o", "jsonpath={.items[0].metadata.namespace}-{.items[0].metadata.name}")
	if err != nil {
		t.Fatal(err)
	}
	hcp := hostedControlPlane{hcpNS: nsName, apiURL: apiURL}

	start := time.Now()
	r := a.do(http.MethodPost, path+"/requestAdminCredential?api-version="+apiVersion, nil, http.StatusAccepted)
	if final := a.wait(r.Header.Get("Azure-AsyncOperation"), 2*time.Minute); final != "Succeeded" {
		t.Fatalf("requestAdminCredential ended %s", final)
	}
	kc, _ := a.do(http.MethodGet, r.Header.Get("Location"), nil, http.StatusOK).Body["kubeconfig"].(string)
	cfg, err := clientcmd.Load([]byte(kc))
	if err != nil || cfg.Contexts[cfg.CurrentContext] == nil {
		t.Fatalf("the credential's kubeconfig: %v:\n%s", err, kc)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	server, auth := cfg.Clusters[cur.Cluster], cfg.AuthInfos[cur.AuthInfo]
	if server == nil || auth == nil || server.Server != apiURL {
		t.Fatalf("the kubeconfig names %v, want api.url %s", server, apiURL)
	}
	t.Logf("admin credential issued %s after asking", time.Since(start).Round(time.Millisecond))
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(server.CertificateAuthorityData) {
		t.Fatal("the kubeconfig's CA does not parse")
	}
	cert, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData)
	if err != nil {
		t.Fatal(err)
	}
	inNode := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.Node.Netns.DialContext,
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}}}
	}
	customer := inNode(cert)
	get := func(c *http.Client, p string) (int, string) {
		t.Helper()
		resp, err := c.Get(apiURL + p)
		if err != nil {
			t.Fatalf("GET %s%s from the node's network: %v", apiURL, p, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b)
	}
	// The credential is issued once the apiserver trusts its signer (total-client-ca), which the
	// sim writes to the apiserver's file; allow the apiserver a moment to reload it.
	waitFor(t, time.Minute, "the customer's /readyz at api.url", func() error {
		if code, body := get(customer, "/readyz"); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	if code, body := get(customer, "/api/v1/namespaces"); code != http.StatusOK || !strings.Contains(body, `"kube-system"`) {
		t.Errorf("the customer's namespace list at api.url: %d %s", code, body)
	}
	for _, p := range []string{"/readyz", "/version", "/api/v1/namespaces"} {
		if code, body := get(inNode(), p); code != http.StatusUnauthorized {
			t.Errorf("GET %s%s without a certificate: %d %s, want 401", apiURL, p, code, body)
		}
	}
	t.Logf("api.url %s answered the customer's kubeconfig from the node's network (/readyz, namespaces) and refused a caller without a certificate", apiURL)

	// The door probe sees the hosted apiserver's port on the sim's pod, and it is closed.
	open, probed, err := d.Node.OpenDoors(ctx, PodDoors()...)
	if err != nil {
		t.Fatal(err)
	}
	sawIt := false
	for _, p := range probed {
		sawIt = sawIt || (strings.Contains(p, "(kube-apiserver,") && strings.Contains(p, u.Host))
	}
	if !sawIt {
		t.Errorf("the door probe did not probe the hosted kube-apiserver at %s: %v", u.Host, probed)
	}
	for _, f := range open {
		t.Errorf("open door with a hosted kube-apiserver running: %s", f)
	}
	// One kube-apiserver and one etcd of its own, so that their absence after the delete means
	// something.
	if pids := hostedControlPlanePIDs(t, hcp.hcpNS); len(pids["kube-apiserver"]) != 1 || len(pids["etcd"]) != 1 {
		t.Errorf("processes of %s: %v, want one kube-apiserver and one etcd", hcp.hcpNS, pids)
	}
	return hcp
}

// simHostedDir is where the sim chart keeps each hosted control plane's files (its
// --hosted-dir), as the pod's processes name it in their command lines.
const simHostedDir = "/var/lib/hypershift-sim/hosted/clusters"

// hostedControlPlanePIDs are the processes (seen from the host, which sees the pods' processes)
// of the hosted control plane of control-plane namespace hcpNS, by kind: its kube-apiserver
// (--cert-dir its directory) and its etcd (--data-dir in its directory).
func hostedControlPlanePIDs(t *testing.T, hcpNS string) map[string][]int {
	t.Helper()
	dir := simHostedDir + "/" + hcpNS
	marks := map[string][]byte{
		"kube-apiserver": []byte("--cert-dir=" + dir + "\x00"),
		"etcd":           []byte("--data-dir=" + mgmtcluster.HostedEtcdDataDir(dir+"/etcd") + "\x00"),
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for kind, mark := range marks {
			if bytes.Contains(cmdline, mark) {
				pids[kind] = append(pids[kind], pid)
			}
		}
	}
	return pids
}

// sreMaintenanceWriteIsCarriedOut sets a maintenance window on the cluster through the deployed
// admin API as an sre-admin and follows the request until the maintenance service carried it
// out: the admin API signed it with the statement key of its Secret (without one it answers
// 503) and the maintenance service verified the signature with the public half of its own.
func sreMaintenanceWriteIsCarriedOut(ctx context.Context, t *testing.T, info localregion.Info, sub string) {
	t.Helper()
	sre, err := info.Admin.SRE(access.GroupAdmin)
	if err != nil {
		t.Fatal(err)
	}
	admin := adminClient(t, info)
	list, err := admin.ListClusters(ctx, adminapi.ClusterFilter{Subscription: sub})
	if err != nil || len(list.Clusters) != 1 {
		t.Fatalf("admin API cluster list of %s: %+v (%v)", sub, list, err)
	}
	cluster := list.Clusters[0].ID
	asked := time.Now()
	req, err := admin.SetWindow(ctx, cluster, adminapi.WindowSet{Reason: "make deploy e2e: a signed SRE write", Days: []string{"Sat"}, Start: "02:00", Length: "4h"})
	if err != nil {
		t.Fatalf("set the maintenance window of %s through the deployed admin API: %v", cluster, err)
	}
	waitFor(t, 2*time.Minute, "the maintenance service to carry out request "+req.ID, func() error {
		got, err := admin.GetMaintenanceRequest(ctx, req.ID)
		switch {
		case err != nil:
			return err
		case got.State == maintenance.RequestFailed:
			t.Fatalf("request %s failed: %s", req.ID, got.Message)
		case got.State != maintenance.RequestDone:
			return fmt.Errorf("request is %s", got.State)
		}
		if got.RequestedBy != sre.Person {
			t.Errorf("request carried out for %q, want %q", got.RequestedBy, sre.Person)
		}
		return nil
	})
	win, err := admin.GetWindow(ctx, cluster)
	if err != nil || win.Start != "02:00" {
		t.Errorf("maintenance window of %s after the request: %+v (%v)", cluster, win, err)
	}
	t.Logf("SRE maintenance write signed by the admin API carried out %s after asking", time.Since(asked).Round(time.Millisecond))
}

// adminClient calls the deployed admin API as an sre-admin.
func adminClient(t *testing.T, info localregion.Info) *adminapi.Client {
	t.Helper()
	sre, err := info.Admin.SRE(access.GroupAdmin)
	if err != nil {
		t.Fatal(err)
	}
	c := sre.ClientTLS(info.Admin.CAFile)
	c.ServerName = info.Admin.ServerName
	cfg, err := c.Files().Client(strings.TrimPrefix(info.Admin.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	return &adminapi.Client{BaseURL: info.Admin.URL, HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}}
}

var hostedClusters = schema.GroupVersionResource{Group: "hypershift.openshift.io", Version: "v1beta1", Resource: "hostedclusters"}

// clusterOnTheSecondStamp creates a second cluster while the first one (on mgmt-1) exists, so
// that placement (least loaded) puts it on mgmt-2, and follows it to Succeeded through ARM: its
// HostedCluster must be in mgmt-2's apiserver (and none more on the node), Available, with its
// api.url on mgmt-2's sim pod; the admin API must list both shards healthy (their apiservers'
// /readyz, mgmt-2's through its Service). It then deletes it and sees the HostedCluster go.
func clusterOnTheSecondStamp(ctx context.Context, t *testing.T, d *Region, a armClient, info localregion.Info, sub, rg string, kubectl func(...string) (string, error)) {
	t.Helper()
	second := d.Clusters[1]
	rc, err := clientcmd.BuildConfigFromFlags("", info.ManagementClusters[1].Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	onSecond := func() ([]unstructured.Unstructured, error) {
		l, err := dyn.Resource(hostedClusters).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}

	path := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/deployed-2", sub, rg)
	created := time.Now()
	put := a.do(http.MethodPut, path+"?api-version="+apiVersion, clusterBody(info.Location, sub, rg), http.StatusCreated)
	waitFor(t, 3*time.Minute, "the second HostedCluster in mgmt-2's apiserver", func() error {
		items, err := onSecond()
		if err != nil || len(items) != 1 {
			return fmt.Errorf("%d HostedClusters (%v)", len(items), err)
		}
		return nil
	})
	if final := a.wait(put.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final != "Succeeded" {
		t.Fatalf("create on mgmt-2 ended %s", final)
	}
	t.Logf("create on mgmt-2 Succeeded %s after the PUT", time.Since(created).Round(time.Millisecond))
	if out, err := kubectl("get", "hostedclusters", "-A", "-o", "name"); err != nil || len(strings.Fields(out)) != 1 {
		t.Errorf("HostedClusters on the node: %q (%v), want only the first cluster's", out, err)
	}
	items, err := onSecond()
	if err != nil || len(items) != 1 {
		t.Fatalf("HostedClusters in mgmt-2: %d (%v)", len(items), err)
	}
	conds, _, _ := unstructured.NestedSlice(items[0].Object, "status", "conditions")
	available := ""
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Available" {
			available, _ = m["status"].(string)
		}
	}
	if available != "True" {
		t.Errorf("HostedCluster in mgmt-2 Available = %q", available)
	}
	// Its control plane runs in mgmt-2's sim pod on the node: api.url is that pod's IP.
	waitFor(t, 2*time.Minute, "the second cluster's api.url on mgmt-2's sim pod", func() error {
		cluster := a.do(http.MethodGet, path+"?api-version="+apiVersion, nil, http.StatusOK).Body
		props, _ := cluster["properties"].(map[string]any)
		api, _ := props["api"].(map[string]any)
		apiURL, _ := api["url"].(string)
		ip, err := kubectl("get", "pods", "-n", second.SimNamespace(), "-l", "app.kubernetes.io/name=hypershift-sim", "--field-selector=status.phase=Running", "-o", "jsonpath={.items[0].status.podIP}")
		if err != nil {
			return err
		}
		if u, err := url.Parse(apiURL); err != nil || u.Hostname() != ip || ip == "" {
			return fmt.Errorf("api.url %q, mgmt-2's sim pod %q", apiURL, ip)
		}
		return nil
	})

	// Both shards healthy in the admin API, each holding one cluster.
	admin := adminClient(t, info)
	waitFor(t, 2*time.Minute, "both shards healthy in the admin API", func() error {
		list, err := admin.ListShards(ctx)
		if err != nil {
			return err
		}
		healthy := map[string]int32{}
		for _, sh := range list.Shards {
			if sh.Health != "healthy" {
				return fmt.Errorf("shard %s is %s: %s", sh.Name, sh.Health, sh.HealthMessage)
			}
			healthy[sh.Name] = sh.ClusterCount
		}
		if len(healthy) != 2 || healthy["mgmt-1"] != 1 || healthy["mgmt-2"] != 1 {
			return fmt.Errorf("healthy shards and their clusters: %v, want mgmt-1 and mgmt-2 with one each", healthy)
		}
		return nil
	})
	t.Log("admin API: mgmt-1 and mgmt-2 healthy, one cluster each")

	del := a.do(http.MethodDelete, path+"?api-version="+apiVersion, nil, http.StatusAccepted)
	if final := a.wait(del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final != "Succeeded" {
		t.Fatalf("delete on mgmt-2 ended %s", final)
	}
	waitFor(t, time.Minute, "no HostedCluster in mgmt-2", func() error {
		items, err := onSecond()
		if err != nil || len(items) != 0 {
			return fmt.Errorf("%d HostedClusters (%v)", len(items), err)
		}
		return nil
	})
	t.Log("delete on mgmt-2 Succeeded and its HostedCluster is gone")
}
