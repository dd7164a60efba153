package chartcheck

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// secretMountOf is the Secret volume mounted at the directory of file in spec's first
// container, and that volume's mode; ok is false when no Secret volume is mounted there.
func secretMountOf(spec corev1.PodSpec, file string) (secret string, mode int32, ok bool) {
	dir := filepath.Dir(file)
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				mode = -1
				if v.Secret.DefaultMode != nil {
					mode = *v.Secret.DefaultMode
				}
				return v.Secret.SecretName, mode, true
			}
		}
	}
	return "", 0, false
}

// TestEveryRegionSealsHostedClusterSecrets: with every region's rendered values, Cluster
// Service is given a directory of public sealing keys from a Secret (--sealing-keys-dir) and
// each management cluster's hypershift-sim its private key from a Secret it may read under the
// key-file rule (root:fsGroup 0440 with fsGroup its own group), so a hosted cluster's pull
// secret and etcd key never reach Maestro in clear (docs/security.md, "Secrets in Maestro's
// database").
func TestEveryRegionSealsHostedClusterSecrets(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	csValues, err := filepath.Glob(filepath.Join(root, "config", "rendered", "*", "cluster-service.yaml"))
	if err != nil || len(csValues) == 0 {
		t.Fatalf("no rendered cluster-service values (%v)", err)
	}
	for _, v := range csValues {
		rel, _ := filepath.Rel(root, v)
		t.Run("cluster-service/"+rel, func(t *testing.T) {
			rendered := renderWith(t, helmBin, root, "cluster-service/deploy", v)
			var dir string
			for _, obj := range objects(t, rendered) {
				if cm, ok := obj.(*corev1.ConfigMap); ok {
					dir = cm.Data["CLUSTER_SERVICE_SEALING_KEYS_DIR"]
				}
			}
			if dir == "" {
				t.Fatal("no CLUSTER_SERVICE_SEALING_KEYS_DIR: pull secrets and etcd keys reach Maestro in clear")
			}
			spec := workloadPodSpecs(t, rendered)["Deployment/cluster-service"]
			if secret, _, ok := secretMountOf(spec, filepath.Join(dir, "x.pub")); !ok || secret == "" {
				t.Errorf("sealing keys directory %s is not a mounted Secret", dir)
			}
		})
	}
	simValues, err := filepath.Glob(filepath.Join(root, "config", "rendered", "*", "*", "hypershift-sim.yaml"))
	if err != nil || len(simValues) == 0 {
		t.Fatalf("no rendered hypershift-sim values (%v)", err)
	}
	for _, v := range simValues {
		rel, _ := filepath.Rel(root, v)
		t.Run("hypershift-sim/"+rel, func(t *testing.T) {
			spec := workloadPodSpecs(t, renderWith(t, helmBin, root, "dev-infrastructure/mgmtcluster/deploy/hypershift-sim", v))["Deployment/hypershift-sim"]
			if len(spec.Containers) == 0 {
				t.Fatal("no hypershift-sim Deployment")
			}
			i := slices.IndexFunc(spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--unseal-key-file=") })
			if i < 0 {
				t.Fatal("no --unseal-key-file: sealed Secrets are never opened")
			}
			file := strings.TrimPrefix(spec.Containers[0].Args[i], "--unseal-key-file=")
			secret, mode, ok := secretMountOf(spec, file)
			if !ok || secret == "" {
				t.Fatalf("unseal key %s is not in a mounted Secret", file)
			}
			if mode != 0o440 && mode != 0o400 {
				t.Errorf("unseal key Secret volume mode %04o: the key-file rule refuses anything others may read", mode)
			}
			sc := spec.SecurityContext
			if mode == 0o440 && (sc == nil || sc.FSGroup == nil || sc.RunAsGroup == nil || *sc.FSGroup != *sc.RunAsGroup) {
				t.Errorf("unseal key is 0440 but the pod's fsGroup is not its runAsGroup: the sim could not read it (%+v)", sc)
			}
		})
	}
}
