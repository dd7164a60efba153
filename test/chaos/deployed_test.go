package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion/deploy"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// deployed is the make deploy region when the run is CHAOS_DEPLOY=1 (make chaos DEPLOY=1); nil
// for a make run one. region is then its launcher's region (endpoints, PKI, region.json).
var deployed *deploy.Region

// deployMode says whether the run is against a make deploy region: CHAOS_DEPLOY=1.
func deployMode() bool { return os.Getenv("CHAOS_DEPLOY") == "1" }

// upDeployed brings up a make deploy region (deploy.Up) with state under dir. The images are
// built into <repository>/.run/deploy-images, which make deploy uses too, so a second run
// reuses every archive whose inputs did not change.
func upDeployed(ctx context.Context, dir string) (*deploy.Region, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("CHAOS_DEPLOY=1 needs root: the node runs containerd and a kubelet")
	}
	for _, bin := range []string{"containerd", "ctr", "runc", "/usr/lib/cni/bridge", "nsenter", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%s is not installed; run make deps", bin)
		}
	}
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	return deploy.Up(ctx, deploy.Config{Root: root, StateDir: dir, ImagesDir: filepath.Join(root, ".run", "deploy-images"),
		Sim: localregion.SimConfig{AvailableDelay: 2 * time.Second, DeleteDelay: time.Second}, Progress: os.Stderr})
}

// Kinds of kill of a deployed region: a component's pod deleted without grace, its first
// container's main process SIGKILLed, or the node's containerd restarted.
const (
	podKill       = "pod/"
	containerKill = "sigkill/"
	containerd    = "containerd"
)

// deployedTarget kills the deployed region's pods, containers and containerd (deploy.Region's
// DeletePod, KillContainer and Node.RestartContainerd).
type deployedTarget struct{ d *deploy.Region }

// components are "pod/<c>" and "sigkill/<c>" for every chaos workload c
// (deploy.Region.ChaosWorkloads), and "containerd".
func (t deployedTarget) components() []string {
	var out []string
	for c := range t.d.ChaosWorkloads() {
		out = append(out, podKill+c, containerKill+c)
	}
	sort.Strings(out)
	return append(out, containerd)
}

func (t deployedTarget) workload(name string) (deploy.Workload, error) {
	c := strings.TrimPrefix(strings.TrimPrefix(name, podKill), containerKill)
	w, ok := t.d.ChaosWorkloads()[c]
	if !ok {
		return w, fmt.Errorf("no chaos workload %q in the deployed region", c)
	}
	return w, nil
}

func (t deployedTarget) kill(ctx context.Context, name string) (victim, error) {
	if name == containerd {
		pid, err := t.d.Node.RestartContainerd(ctx)
		return victim{pid: pid}, err
	}
	w, err := t.workload(name)
	if err != nil {
		return victim{}, err
	}
	var v deploy.Victim
	if strings.HasPrefix(name, podKill) {
		v, err = t.d.DeletePod(ctx, w)
	} else {
		v, err = t.d.KillContainer(ctx, w)
	}
	return victim{pid: v.PID, what: v}, err
}

// recover waits until the workload has Ready pods again without the victim; after a containerd
// restart, until the node is Ready and every chaos workload's pods are.
func (t deployedTarget) recover(ctx context.Context, name string, v victim) error {
	check := func() (bool, error) {
		if name != containerd {
			w, err := t.workload(name)
			if err != nil {
				return false, err
			}
			return t.d.Recovered(ctx, w, v.what.(deploy.Victim))
		}
		if ok, err := t.d.NodeReady(ctx); !ok || err != nil {
			return false, err
		}
		for _, w := range t.d.ChaosWorkloads() {
			if ok, err := t.d.Recovered(ctx, w, deploy.Victim{}); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	var last error
	for {
		ok, err := check()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not recovered: %w (last error: %v)", name, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// downs: a kill of the frontend's pod or container takes the frontend down; a containerd
// restart takes nothing down (the containers keep running), so a 5xx read during it counts.
func (deployedTarget) downs(name string) string {
	return strings.TrimPrefix(strings.TrimPrefix(name, podKill), containerKill)
}

// restarts are the container restarts the kubelet made, by kill name: a SIGKILLed container's
// pod restarts it, a deleted pod's replacement starts at 0.
func (t deployedTarget) restarts(ctx context.Context) (map[string]int, error) {
	by, err := t.d.Restarts(ctx)
	out := map[string]int{}
	for c, n := range by {
		out[containerKill+c] = n
	}
	return out, err
}

// TestChaosDeployed is TestChaos against a make deploy region (make chaos DEPLOY=1,
// CHAOS_DEPLOY=1): the same workload and invariants while the chaos loop deletes pods without
// grace, SIGKILLs containers' main processes and restarts the node's containerd: each of these
// on each component at least once. Opt-in: without CHAOS_DEPLOY=1 it skips (make test runs the make run one).
func TestChaosDeployed(t *testing.T) {
	if deployed == nil {
		t.Skip("opt-in (make chaos DEPLOY=1, CHAOS_DEPLOY=1): brings up the node and a make deploy region")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	var want []string
	for _, c := range []string{"frontend", "backend", "cluster-service", "maestro-server"} {
		want = append(want, podKill+c, containerKill+c)
	}
	for _, mc := range region.Info.ManagementClusters {
		for _, c := range []string{"maestro-agent-", "hypershift-sim-"} {
			want = append(want, podKill+c+mc.Name, containerKill+c+mc.Name)
		}
	}
	want = append(want, containerd)
	runChaos(ctx, t, deployedTarget{deployed}, want, want...)
}
