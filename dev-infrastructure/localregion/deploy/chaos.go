package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// What a chaos run (test/chaos, make chaos DEPLOY=1; docs/reliability.md) does to the deployed
// region: a pod deleted without grace, a container's main process SIGKILLed, the node's
// containerd restarted. Each returns what identifies the victim, and a Recovered check says when
// the workload runs and is Ready again without it.

// Workload is one Deployment of the deployed region a chaos run may kill.
type Workload struct{ Namespace, Deployment string }

// ChaosWorkloads are the Deployments a chaos run kills, by component name: the service
// cluster's frontend, backend, Cluster Service and Maestro server, and every management
// cluster's Maestro agent and hypershift-sim ("maestro-agent-<stamp>", "hypershift-sim-<stamp>").
func (d *Region) ChaosWorkloads() map[string]Workload {
	out := map[string]Workload{}
	for _, name := range []string{"frontend", "backend", "cluster-service", "maestro-server"} {
		out[name] = Workload{Namespace: workloads[name].namespace, Deployment: name}
	}
	for _, c := range d.Clusters {
		out["maestro-agent-"+c.Stamp] = Workload{Namespace: c.AgentNamespace(), Deployment: "maestro-agent"}
		out["hypershift-sim-"+c.Stamp] = Workload{Namespace: c.SimNamespace(), Deployment: "hypershift-sim"}
	}
	return out
}

// Victim is one incarnation of a workload's pod a kill ended: the pod, and its restart count at
// the kill (math.MaxInt for a pod deleted: no restart of it counts as a recovery).
type Victim struct {
	Pod, UID string
	Restarts int
	// PID is the process SIGKILLed (0 for a pod deleted).
	PID int
}

// pod is what a chaos run reads of a pod.
type pod struct {
	Metadata struct {
		Name              string  `json:"name"`
		UID               string  `json:"uid"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
		OwnerReferences   []struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Name string `json:"name"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase             string `json:"phase"`
		ContainerStatuses []struct {
			Name         string `json:"name"`
			ContainerID  string `json:"containerID"`
			Ready        bool   `json:"ready"`
			RestartCount int    `json:"restartCount"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func (p pod) ready() bool {
	if p.Metadata.DeletionTimestamp != nil || p.Status.Phase != "Running" || len(p.Status.ContainerStatuses) < len(p.Spec.Containers) {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready {
			return false
		}
	}
	return true
}

func (p pod) restarts() int {
	n := 0
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// pods are the workload's pods (those of its Deployment's ReplicaSets), by name.
func (d *Region) pods(ctx context.Context, w Workload) ([]pod, error) {
	out, err := d.Node.Kubectl(ctx, "get", "pods", "-n", w.Namespace, "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("list pods of %s/%s: %w", w.Namespace, w.Deployment, err)
	}
	var list struct {
		Items []pod `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("decode pods of %s/%s: %w", w.Namespace, w.Deployment, err)
	}
	return ownedBy(list.Items, w.Deployment), nil
}

// ownedBy are the pods of a Deployment's ReplicaSets ("<deployment>-<hash>"), by name.
func ownedBy(all []pod, deployment string) []pod {
	var pods []pod
	for _, p := range all {
		for _, o := range p.Metadata.OwnerReferences {
			if o.Kind == "ReplicaSet" && strings.HasPrefix(o.Name, deployment+"-") && !strings.Contains(strings.TrimPrefix(o.Name, deployment+"-"), "-") {
				pods = append(pods, p)
			}
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Metadata.Name < pods[j].Metadata.Name })
	return pods
}

// running is the workload's first Ready pod.
func (d *Region) running(ctx context.Context, w Workload) (pod, error) {
	pods, err := d.pods(ctx, w)
	if err != nil {
		return pod{}, err
	}
	for _, p := range pods {
		if p.ready() {
			return p, nil
		}
	}
	return pod{}, fmt.Errorf("%s/%s has no Ready pod", w.Namespace, w.Deployment)
}

// DeletePod deletes the workload's running pod without grace (--grace-period=0 --force): its
// containers are killed and its ReplicaSet makes a new pod.
func (d *Region) DeletePod(ctx context.Context, w Workload) (Victim, error) {
	p, err := d.running(ctx, w)
	if err != nil {
		return Victim{}, err
	}
	v := Victim{Pod: p.Metadata.Name, UID: p.Metadata.UID, Restarts: math.MaxInt}
	if _, err := d.Node.Kubectl(ctx, "delete", "pod", "-n", w.Namespace, p.Metadata.Name, "--grace-period=0", "--force", "--wait=false"); err != nil {
		return v, fmt.Errorf("delete pod %s/%s: %w", w.Namespace, p.Metadata.Name, err)
	}
	return v, nil
}

// KillContainer SIGKILLs the main process of the running pod's first container: the task our
// node's containerd runs for its container ID, checked to sit in that container's cgroup. The
// kubelet restarts the container in the same pod.
func (d *Region) KillContainer(ctx context.Context, w Workload) (Victim, error) {
	p, err := d.running(ctx, w)
	if err != nil {
		return Victim{}, err
	}
	v := Victim{Pod: p.Metadata.Name, UID: p.Metadata.UID, Restarts: p.restarts()}
	main := p.Spec.Containers[0].Name
	var id string
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == main {
			id = strings.TrimPrefix(c.ContainerID, "containerd://")
		}
	}
	if id == "" {
		return v, fmt.Errorf("pod %s/%s: container %s has no ID", w.Namespace, p.Metadata.Name, main)
	}
	pid, err := d.Node.ContainerPID(ctx, id)
	if err != nil {
		return v, err
	}
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil || !strings.Contains(string(cg), id) {
		return v, fmt.Errorf("pid %d is not in container %s's cgroup (%v): refusing to kill it", pid, id, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return v, fmt.Errorf("kill pid %d of %s/%s: %w", pid, w.Namespace, p.Metadata.Name, err)
	}
	v.PID = pid
	return v, nil
}

// Recovered says whether the workload runs again without the victim: it has a pod, every pod
// not being deleted is Ready, and none is the victim's incarnation (its pod with at most its
// restarts at the kill). An empty victim asks only for the Ready pods (after a containerd
// restart).
func (d *Region) Recovered(ctx context.Context, w Workload, v Victim) (bool, error) {
	pods, err := d.pods(ctx, w)
	if err != nil {
		return false, err
	}
	return recovered(pods, v), nil
}

// recovered: some pod is not being deleted, every such pod is Ready, and none is v's
// incarnation.
func recovered(pods []pod, v Victim) bool {
	live := 0
	for _, p := range pods {
		if p.Metadata.DeletionTimestamp != nil {
			continue
		}
		live++
		if !p.ready() || v.UID != "" && p.Metadata.UID == v.UID && p.restarts() <= v.Restarts {
			return false
		}
	}
	return live > 0
}

// Restarts are the restart counts of each chaos workload's pods now, by component.
func (d *Region) Restarts(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for name, w := range d.ChaosWorkloads() {
		pods, err := d.pods(ctx, w)
		if err != nil {
			return out, err
		}
		for _, p := range pods {
			out[name] += p.restarts()
		}
	}
	return out, nil
}

// NodeReady says whether the node reports Ready (after a containerd restart, the kubelet's
// runtime check passes again).
func (d *Region) NodeReady(ctx context.Context) (bool, error) {
	out, err := d.Node.Kubectl(ctx, "get", "nodes", "-o", `jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}`)
	if err != nil {
		return false, fmt.Errorf("read the node's Ready condition: %w", err)
	}
	return strings.TrimSpace(string(out)) == "True", nil
}

// SaveLogs writes every chaos workload's pods' logs (all containers, and the previous
// incarnation of each restarted one) under dir as pod-<component>.log, before Stop removes them
// with the node.
func (d *Region) SaveLogs(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	var errs []error
	for name, w := range d.ChaosWorkloads() {
		pods, err := d.pods(ctx, w)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var b strings.Builder
		for _, p := range pods {
			for _, prev := range []bool{true, false} {
				out, err := d.Node.Kubectl(ctx, "logs", "-n", w.Namespace, p.Metadata.Name, "--all-containers", "--prefix", "--timestamps", "--previous="+strconv.FormatBool(prev))
				if err != nil && !prev {
					errs = append(errs, err)
				}
				if err == nil {
					fmt.Fprintf(&b, "=== pod %s (previous=%v)\n%s", p.Metadata.Name, prev, out)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "pod-"+name+".log"), []byte(b.String()), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
