package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNodeTurnsReadyInItsNamespaceAndStopLeavesTheHostAsFound(t *testing.T) {
	requireNetns(t)
	for _, bin := range []string{"containerd", "ctr", "runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed; run make deps", bin)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bins, err := BuildBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	simImage, simImageDir := buildServiceImage(t, ctx)
	before := hostLinks(t)
	netfilterBefore := hostNetfilter(t)
	existed := map[string]bool{}
	for _, p := range append(hostPaths, "/usr/libexec/kubernetes") {
		_, err := os.Stat(p)
		existed[p] = err == nil
	}
	sysctlsBefore := map[string]string{}
	for _, k := range globalSysctls {
		sysctlsBefore[k], _ = readSysctl(k)
	}
	dir, err := os.MkdirTemp("", "ohcp-node-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	n, err := Start(ctx, bins, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	t.Logf("start times: %v", n.Started)

	out, err := n.Kubectl(ctx, "get", "node", NodeName, "-o", "jsonpath={.status.addresses[0].address}")
	if err != nil || strings.TrimSpace(string(out)) != DefaultNodeIP.String() {
		t.Fatalf("node address %q (%v), want %s", out, err, DefaultNodeIP)
	}
	// Host processes reach the apiserver only through the loopback forward.
	if out, err := exec.CommandContext(ctx, bins.Kubectl, "--kubeconfig="+n.HostKubeconfig, "get", "node", NodeName, "-o", "name").CombinedOutput(); err != nil {
		t.Fatalf("kubectl from the host: %v: %s", err, out)
	}
	// A pod on the pod network proves runc, the CNI bridge and restrict_oom_score_adj work (without
	// the latter, every sandbox fails on this machine).
	if _, err := n.Kubectl(ctx, "run", "probe", "--image="+n.SandboxImage, "--image-pull-policy=Never", "--restart=Never"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Kubectl(ctx, "wait", "pod/probe", "--for=condition=Ready", "--timeout=90s"); err != nil {
		t.Fatal(err)
	}
	podIP, err := n.Kubectl(ctx, "get", "pod", "probe", "-o", "jsonpath={.status.podIP}")
	if err != nil || !strings.HasPrefix(string(podIP), "10.244.0.") {
		t.Fatalf("pod IP %q (%v), want one in %s", podIP, err, PodCIDR)
	}
	if got := hostLinks(t); got != before {
		t.Fatalf("host links changed while the node runs:\n%s\n---\n%s", before, got)
	}
	for k, v := range sysctlsBefore {
		if got, _ := readSysctl(k); got != v {
			t.Errorf("sysctl %s is %s with the node up, host had %s", k, got, v)
		}
	}
	probe := checkServicesAndOutside(t, ctx, n)
	checkNetworkPolicyIsEnforced(t, ctx, n, probe)
	checkServiceImageRunsAsNonRoot(t, ctx, n, simImage, simImageDir)
	checkSecretsAreSealedInEtcd(t, ctx, n)
	checkEveryDoorOfTheNamespaceIsShut(t, ctx, n)
	if got := hostNetfilter(t); got != netfilterBefore {
		t.Errorf("the host's netfilter rules changed while the node runs (kube-proxy must write only in its namespace):\n%s\n---\n%s", netfilterBefore, got)
	}
	ns := n.Netns.Name
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/netns/" + ns); !os.IsNotExist(err) {
		t.Errorf("namespace %s left behind", ns)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dir) {
		t.Errorf("mounts left under %s", dir)
	}
	if got := hostLinks(t); got != before {
		t.Errorf("host links differ after Stop")
	}
	if got := hostNetfilter(t); got != netfilterBefore {
		t.Errorf("the host's netfilter rules differ after Stop")
	}
	for p, was := range existed {
		if _, err := os.Stat(p); (err == nil) != was {
			t.Errorf("%s existed before: %v, after Stop: %v", p, was, err == nil)
		}
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods"); len(left) > 0 {
		t.Errorf("kubelet cgroups left after Stop: %v", left)
	}
}
