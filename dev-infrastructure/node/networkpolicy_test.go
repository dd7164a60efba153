package node

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
)

// networkPolicyServer is a web probe server (probeServer) in np-server answering "admitted",
// and a NetworkPolicy admitting only pods of namespace np-allowed to its port. (The agent
// accepts connections the node's root user opens, so the kubelet's probes and the host's
// forwards are not judged.)
const networkPolicyServer = `apiVersion: v1
kind: Namespace
metadata: {name: np-server}
---
apiVersion: v1
kind: Namespace
metadata: {name: np-allowed}
---
apiVersion: v1
kind: Namespace
metadata: {name: np-denied}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: np-server}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
  - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: np-allowed}}}]
    ports: [{protocol: TCP, port: http}]
`

// checkNetworkPolicyIsEnforced proves the node's NetworkPolicy agent: with only the CNI bridge,
// a pod of a namespace the web pod's policy does not admit still reaches the web Service (the
// bridge enforces nothing); with the agent running, a pod of that namespace cannot connect
// within 10 s, and a pod of the admitted namespace is answered.
func checkNetworkPolicyIsEnforced(t *testing.T, ctx context.Context, n *Node, probe images.Image) {
	start := time.Now()
	if err := n.Apply(ctx, "np-server", manifests(networkPolicyServer, probeServer(probe, "np-server", "web", 1, "admitted"))); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Waited for: the door check that follows probes every listener of the node, and the web
		// pod (which answers "admitted" on every path) must be gone by then. Not waiting, a busy
		// CI run found it still Terminating there and counted its port as an open door.
		if _, err := n.Kubectl(ctx, "delete", "namespace", "np-server", "np-allowed", "np-denied", "--timeout=180s"); err != nil {
			t.Error(err)
		}
	}()
	if _, err := n.Kubectl(ctx, "rollout", "status", "deployment/web", "-n", "np-server", "--timeout=120s"); err != nil {
		t.Fatal(err)
	}
	// clients starts one client pod per entry (name -> namespace, timeout) at once and returns
	// each one's final phase and output.
	type result struct{ phase, logs string }
	clients := func(pods map[string][2]string) map[string]result {
		t.Helper()
		for name, p := range pods {
			if err := n.Apply(ctx, name, manifests(probeClient(probe, p[0], name, "http://web.np-server/", p[1]))); err != nil {
				t.Fatal(err)
			}
		}
		out := map[string]result{}
		deadline := time.Now().Add(3 * time.Minute)
		for name, p := range pods {
			phase := ""
			for phase != "Succeeded" && phase != "Failed" {
				if time.Now().After(deadline) {
					t.Fatalf("pod %s/%s still %q after 3 minutes", p[0], name, phase)
				}
				time.Sleep(500 * time.Millisecond)
				b, err := n.Kubectl(ctx, "get", "pod", name, "-n", p[0], "-o", "jsonpath={.status.phase}")
				if err != nil {
					t.Fatal(err)
				}
				phase = string(b)
			}
			logs, _ := n.Kubectl(ctx, "logs", name, "-n", p[0])
			out[name] = result{phase, string(logs)}
		}
		return out
	}

	if r := clients(map[string][2]string{"before-agent": {"np-denied", "60s"}})["before-agent"]; r.phase != "Succeeded" || r.logs != "admitted" {
		t.Fatalf("without the agent, the np-denied pod: %s %q; want it answered (the bridge enforces nothing)", r.phase, r.logs)
	}

	bin, err := NetworkPolicyAgentBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.EnforceNetworkPolicies(ctx, bin); err != nil {
		t.Fatal(err)
	}
	// The agent judges a pod's connections once the pod's address is in its set.
	webIP, err := n.Kubectl(ctx, "get", "pods", "-n", "np-server", "-l", "app=web", "-o", "jsonpath={.items[0].status.podIP}")
	if err != nil || len(webIP) == 0 {
		t.Fatalf("web pod IP %q: %v", webIP, err)
	}
	if err := n.waitFor(ctx, "the web pod in the agent's set", 60*time.Second, func() error {
		out, err := n.Netns.Command(ctx, "nft", "list", "set", "inet", NetworkPolicyTable, "podips-v4").CombinedOutput()
		if err != nil || !strings.Contains(string(out), string(webIP)) {
			return fmt.Errorf("podips-v4 does not hold %s (%v): %s", webIP, err, out)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	got := clients(map[string][2]string{"denied": {"np-denied", "10s"}, "allowed": {"np-allowed", "60s"}})
	if r := got["denied"]; r.phase != "Failed" || strings.Contains(r.logs, "admitted") {
		t.Errorf("with the agent, the np-denied pod: %s %q; want it refused", r.phase, r.logs)
	}
	if r := got["allowed"]; r.phase != "Succeeded" || r.logs != "admitted" {
		t.Errorf("with the agent, the np-allowed pod: %s %q; want it answered", r.phase, r.logs)
	}
	t.Logf("NetworkPolicy enforced by the agent: denied and admitted pods checked in %s", time.Since(start).Round(time.Millisecond))

	checkAgentExitsWhenItsControllerEnds(t, ctx, n, bin)

	// A crash of the agent (SIGKILL to its process group, as the kernel's OOM killer or a stray
	// kill would) leaves its table and queue without a reader: every new connection to the web
	// pod drops until an agent reads the queue again. The node restarts it; the admitted pod is
	// answered again within a generous deadline, and the denied one still is not.
	crashed := time.Now()
	pid := agentPID(t, n)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the agent's process group %d: %v", pid, err)
	}
	if r := clients(map[string][2]string{"allowed-again": {"np-allowed", "120s"}})["allowed-again"]; r.phase != "Succeeded" || r.logs != "admitted" {
		t.Fatalf("after the agent was killed, the np-allowed pod: %s %q; want it answered once the node restarted the agent\nagent log:\n%s", r.phase, r.logs, n.logTail("kube-network-policies"))
	}
	if r := clients(map[string][2]string{"denied-again": {"np-denied", "10s"}})["denied-again"]; r.phase != "Failed" || strings.Contains(r.logs, "admitted") {
		t.Errorf("after the agent's restart, the np-denied pod: %s %q; want it refused", r.phase, r.logs)
	}
	if now := agentPID(t, n); now == pid || n.Restarts("kube-network-policies") < 1 {
		t.Errorf("after its crash the agent's PID is %d (was %d), restarts %d; want a new process and the restart counted", now, pid, n.Restarts("kube-network-policies"))
	}
	t.Logf("the agent, killed, was restarted: admitted pod answered and denied pod refused again in %s", time.Since(crashed).Round(time.Millisecond))
}

// checkAgentExitsWhenItsControllerEnds proves the agent's patch: when its controller ends with an
// error, the process exits (so the node restarts it) rather than living on enforcing nothing.
// A second agent in the namespace cannot bind the queue the node's agent reads, so its
// controller ends at once; it must exit, non-zero, with the reason in its output. (On its way
// out the controller removes the table, the node's agent's too: the restart check that follows
// sees the restarted agent write it again.)
func checkAgentExitsWhenItsControllerEnds(t *testing.T, ctx context.Context, n *Node, bin string) {
	second := n.Netns.Command(ctx, bin, "--kubeconfig="+n.Kubeconfig, "--hostname-override="+NodeName,
		"--disable-nri", "--metrics-bind-address=")
	var out bytes.Buffer
	second.Stdout, second.Stderr = &out, &out
	second.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	began := time.Now()
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- second.Wait() }()
	select {
	case err := <-exited:
		if err == nil || !strings.Contains(out.String(), "could not bind to requested queue") {
			t.Fatalf("a second agent exited with %v; want an error exit after failing to bind the queue:\n%s", err, tail(out.String(), 3000))
		}
		t.Logf("a second agent, unable to bind the queue, exited (%v) after %s", err, time.Since(began).Round(time.Millisecond))
	case <-time.After(90 * time.Second):
		_ = syscall.Kill(-second.Process.Pid, syscall.SIGKILL)
		<-exited
		t.Fatalf("a second agent, whose controller could not bind the queue, still ran after 90 s:\n%s", tail(out.String(), 3000))
	}
}

// agentPID is the PID of the node's NetworkPolicy agent process (the leader of its group).
func agentPID(t *testing.T, n *Node) int {
	t.Helper()
	for _, p := range n.procs {
		if p.name == "kube-network-policies" {
			return p.pid()
		}
	}
	t.Fatal("the node runs no NetworkPolicy agent")
	return 0
}
