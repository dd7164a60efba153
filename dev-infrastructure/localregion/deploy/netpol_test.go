package deploy

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// networkPoliciesAreEnforced proves that the deployed region's NetworkPolicies are enforced by
// the node's agent: from inside a pod's network namespace, Cluster Service's gRPC port answers
// a connection from the frontend's pod (a namespace its policy admits), and drops one from the
// hypershift-sim's pod (where customers' control planes run) and from the Maestro agent's pod
// (namespaces it does not admit). The node's own test holds the negative control (the bridge
// alone enforces nothing: node.checkNetworkPolicyIsEnforced).
func networkPoliciesAreEnforced(ctx context.Context, t *testing.T, d *Region, kubectl func(...string) (string, error)) {
	t.Helper()
	ns := d.Services.Namespaces()
	csIP, err := kubectl("get", "pods", "-n", ns["cluster-service"], "-l", "app.kubernetes.io/name=cluster-service",
		"-o", "jsonpath={.items[0].status.podIP}")
	if err != nil || csIP == "" {
		t.Fatalf("Cluster Service's pod IP %q: %v", csIP, err)
	}
	csPort, err := kubectl("get", "pods", "-n", ns["cluster-service"], "-l", "app.kubernetes.io/name=cluster-service",
		"-o", `jsonpath={.items[0].spec.containers[0].ports[?(@.name=="grpc")].containerPort}`)
	if err != nil || csPort == "" {
		t.Fatalf("Cluster Service's grpc port %q: %v", csPort, err)
	}
	// connects reports whether a TCP connection from the first pod of namespace (with selector)
	// to Cluster Service's gRPC port completes within 10 s. The node's root user's connections
	// are not judged by the agent, but these leave the pod's own network namespace through the
	// node's bridge, where they are.
	connects := func(namespace, selector string) bool {
		t.Helper()
		args := []string{"get", "pods", "-n", namespace, "-o", "jsonpath={.items[0].status.containerStatuses[0].containerID}"}
		if selector != "" {
			args = append(args, "-l", selector)
		}
		id, err := kubectl(args...)
		if err != nil || id == "" {
			t.Fatalf("a pod of %s %s: %q: %v", namespace, selector, id, err)
		}
		pid, err := d.Node.ContainerPID(ctx, id)
		if err != nil {
			t.Fatalf("the PID of %s: %v", id, err)
		}
		dial := fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", csIP, csPort)
		out, err := exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(pid), "-n", "--",
			"timeout", "10", "bash", "-c", dial).CombinedOutput()
		t.Logf("connect from %s %s to Cluster Service %s:%s: %v %s", namespace, selector, csIP, csPort, err, strings.TrimSpace(string(out)))
		return err == nil
	}
	// The admitted caller first: a policy that dropped it too would pass the refusals below.
	// Retried for a while: the agent adds a new pod's address to its sets once it sees it.
	deadline := time.Now().Add(2 * time.Minute)
	for !connects(ns["frontend"], "app.kubernetes.io/name=frontend") {
		if time.Now().After(deadline) {
			t.Fatal("the frontend's pod, which Cluster Service's policy admits, cannot connect to it")
		}
		time.Sleep(2 * time.Second)
	}
	for _, c := range d.Clusters {
		for _, stranger := range [][2]string{{c.SimNamespace(), "app.kubernetes.io/name=hypershift-sim"}, {c.AgentNamespace(), ""}} {
			if connects(stranger[0], stranger[1]) {
				t.Errorf("a pod of %s reached Cluster Service's gRPC port, which its policy does not admit from there", stranger[0])
			}
		}
	}
}
