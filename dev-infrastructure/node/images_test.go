package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
)

// buildServiceImage builds the hypershift-sim image (the smallest service that talks to the
// apiserver) from the repository's current revision into a temporary directory.
func buildServiceImage(t *testing.T, ctx context.Context) (images.Image, string) {
	t.Helper()
	specs, err := images.Select("hypershift-sim")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// The sim alone: the kube-apiserver its image also carries (for hosted control planes)
	// plays no part here and would only slow the build.
	spec := specs[0]
	spec.Extras = nil
	img, dir := buildTestImage(t, ctx, spec)
	t.Logf("built %s in %s", img.DigestRef(), time.Since(start).Round(time.Millisecond))
	return img, dir
}

// buildTestImage builds spec's image from the repository's current revision into a temporary
// directory (its images.json lists just it).
func buildTestImage(t *testing.T, ctx context.Context, spec images.Spec) (images.Image, string) {
	t.Helper()
	root, err := moduleDirOrRoot()
	if err != nil {
		t.Fatal(err)
	}
	src, err := images.GitSource(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := images.Build(ctx, images.Options{Root: root, Out: dir, Source: src, Specs: []images.Spec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	return m.Images[spec.Name], dir
}

// checkServiceImageRunsAsNonRoot loads the hypershift-sim image into the node through
// LoadManifest and runs it as a pod named by its digest reference, with imagePullPolicy Never and
// runAsNonRoot but no runAsUser (so the image's own USER must be a numeric non-root user, or the
// kubelet refuses to start it). The pod must turn Ready: its readiness probe passes once the sim's
// informers synced against the apiserver with the pod's ServiceAccount token. Then the container
// process's UID and GID are read from /proc on the host.
func checkServiceImageRunsAsNonRoot(t *testing.T, ctx context.Context, n *Node, img images.Image, dir string) {
	start := time.Now()
	m, err := n.LoadManifest(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Images["hypershift-sim"].Digest; got != img.Digest {
		t.Fatalf("manifest digest %s, built %s", got, img.Digest)
	}
	t.Logf("loaded %v in %s", m.Names(), time.Since(start).Round(time.Millisecond))
	// Loading again is harmless (a deployer re-runs it); a missing archive is an error.
	if _, err := n.LoadManifest(ctx, dir); err != nil {
		t.Fatalf("second load: %v", err)
	}
	if err := n.LoadImages(ctx, filepath.Join(dir, "missing.oci.tar")); err == nil {
		t.Fatal("loading a missing archive succeeded")
	}
	root, err := moduleDirOrRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The CRDs the sim watches, and a ServiceAccount allowed to read them.
	if _, err := n.Kubectl(ctx, "apply", "-f", filepath.Join(root, "dev-infrastructure", "mgmtcluster", "crds", "manifests")); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: sim, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: image-test-sim}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: sim, namespace: default}]
---
apiVersion: v1
kind: Pod
metadata: {name: sim, namespace: default}
spec:
  serviceAccountName: sim
  terminationGracePeriodSeconds: 5
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: sim
    image: %s
    imagePullPolicy: Never
    # Metrics stay on the pod's loopback (the sim's default): this pod only shows the image runs;
    # the door probe (checkEveryDoorOfTheNamespaceIsShut) would rightly report plaintext metrics
    # on the pod address.
    args: [--metrics-addr=127.0.0.1:8080, --health-addr=:8081, --hosted-apiservers=0]
    # The in-cluster config reaches the apiserver through the kubernetes Service (kube-proxy).
    readinessProbe:
      httpGet: {path: /readyz, port: 8081}
      periodSeconds: 1
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
`, img.DigestRef())
	file := filepath.Join(n.Dir, "image-test.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := n.Kubectl(ctx, "apply", "-f", file); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Kubectl(ctx, "wait", "pod/sim", "--for=condition=Ready", "--timeout=90s"); err != nil {
		out, _ := n.Kubectl(ctx, "get", "pod", "sim", "-o", "yaml")
		logs, _ := n.Kubectl(ctx, "logs", "sim")
		t.Fatalf("%v\n%s\nlogs:\n%s", err, out, logs)
	}
	t.Logf("hypershift-sim pod Ready %s after apply", time.Since(start).Round(time.Millisecond))
	imageID, err := n.Kubectl(ctx, "get", "pod", "sim", "-o", "jsonpath={.status.containerStatuses[0].imageID}")
	if err != nil || !strings.HasSuffix(string(imageID), img.Digest) {
		t.Errorf("container imageID %q (%v), want one ending in %s", imageID, err, img.Digest)
	}
	// Every container containerd runs is ours: the pods' sandboxes are our pause image.
	containers, err := n.containerd.Ctr(ctx, "-n", criNamespace, "containers", "ls")
	if err != nil {
		t.Fatal(err)
	}
	sandboxes := 0
	for _, line := range strings.Split(strings.TrimSpace(string(containers)), "\n")[1:] {
		f := strings.Fields(line)
		switch {
		case len(f) < 2:
			t.Errorf("containers ls: %q", line)
		case f[1] == n.SandboxImage:
			sandboxes++
		case !strings.HasPrefix(f[1], images.Registry+"/"): // CoreDNS, the probes and the sim: all built here
			t.Errorf("container %s runs %s, not one of our images", f[0], f[1])
		}
	}
	if sandboxes < 2 { // the probe pod's and the sim's
		t.Errorf("%d sandboxes of %s, want at least 2:\n%s", sandboxes, n.SandboxImage, containers)
	}
	cid, err := n.Kubectl(ctx, "get", "pod", "sim", "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	if err != nil {
		t.Fatal(err)
	}
	out, err := n.containerd.Ctr(ctx, "-n", criNamespace, "tasks", "ls")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimPrefix(string(cid), "containerd://")
	var pid string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			pid = f[1]
		}
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatalf("container %s's process %q: %v\n%s", id, pid, err, out)
	}
	want := map[string]string{"Uid:": fmt.Sprint(images.UID), "Gid:": fmt.Sprint(images.GID)}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && want[f[0]] != "" {
			for _, v := range f[1:] {
				if v != want[f[0]] {
					t.Errorf("container process %s %s, want all %s", f[0], strings.Join(f[1:], " "), want[f[0]])
					break
				}
			}
			delete(want, f[0])
		}
	}
	if len(want) > 0 {
		t.Errorf("no %v in /proc/%s/status", want, pid)
	}
}
