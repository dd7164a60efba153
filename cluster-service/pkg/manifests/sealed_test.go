package manifests

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openhcp/openhcp/internal/secretseal"
)

// TestSealedWorkCarriesNoSecretInClear: with the management cluster's key the work holds the
// pull secret and the etcd key only sealed to it, in Secrets that name the real ones, and the
// management side's key opens exactly the values the clear work would have carried.
func TestSealedWorkCarriesNoSecretInClear(t *testing.T) {
	priv, err := secretseal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pull := []byte(`{"auths":{"registry.example":{"auth":"c2VjcmV0LXB1bGwtdG9rZW4="}}}`)
	cfg := Config{PullSecret: pull}
	c := cluster(fullSpec())
	clear, err := Build(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	c.SealTo = priv.Public()
	sealedWork, err := Build(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	if sealedWork.Annotations[AnnotationSpecHash] == clear.Annotations[AnnotationSpecHash] {
		t.Error("the sealed work hashes as the clear one: a work sent in clear would not be sent again sealed")
	}
	again, _ := Build(cfg, c)
	if again.Annotations[AnnotationSpecHash] != sealedWork.Annotations[AnnotationSpecHash] {
		t.Error("two sealed builds of one cluster hash differently: every rebuild would be sent again")
	}
	if bytes.Equal(again.Spec.Workload.Manifests[1].Raw, sealedWork.Spec.Workload.Manifests[1].Raw) {
		t.Error("two seals of the pull secret are equal")
	}

	// Nothing of either secret, raw or base64, anywhere in the work.
	raw, err := json.Marshal(sealedWork)
	if err != nil {
		t.Fatal(err)
	}
	for what, n := range map[string][]byte{
		"etcd key": c.EtcdEncryptionKey, "etcd key (base64)": []byte(base64.StdEncoding.EncodeToString(c.EtcdEncryptionKey)),
		"pull secret": pull, "pull secret (base64)": []byte(base64.StdEncoding.EncodeToString(pull)),
		"pull secret token": []byte("c2VjcmV0LXB1bGwtdG9rZW4="),
	} {
		if bytes.Contains(raw, n) {
			t.Errorf("the sealed work holds the %s in clear", what)
		}
	}

	byKind, hc := decoded(t, sealedWork)
	clearKinds, _ := decoded(t, clear)
	want := map[string]map[string][]byte{}
	for _, u := range clearKinds["Secret"] {
		var s corev1.Secret
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			t.Fatal(err)
		}
		want[s.Name] = s.Data
	}
	opened := map[string]bool{}
	for _, u := range byKind["Secret"] {
		var s corev1.Secret
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			t.Fatal(err)
		}
		if s.Type != secretseal.Type {
			if s.Name != SSHKeySecretName(hc.Name) {
				t.Errorf("Secret %s travels in clear", s.Name)
			}
			continue
		}
		target := s.Annotations[secretseal.TargetAnnotation]
		if s.Name != SealedSecretName(target) || s.Labels[secretseal.LabelSealed] != "true" || s.Labels[LabelClusterID] != c.ID ||
			s.Annotations[secretseal.KeyIDAnnotation] != priv.Public().KeyID() {
			t.Errorf("sealed Secret %s: labels %v annotations %v", s.Name, s.Labels, s.Annotations)
		}
		for k, v := range s.Data {
			got, err := priv.Open(s.Namespace, target, k, v)
			if err != nil {
				t.Fatalf("open %s/%s: %v", target, k, err)
			}
			if !bytes.Equal(got, want[target][k]) {
				t.Errorf("%s/%s opens to %q, want %q", target, k, got, want[target][k])
			}
		}
		opened[target] = true
	}
	for _, name := range []string{PullSecretName(hc.Name), EtcdEncryptionSecretName(hc.Name)} {
		if !opened[name] {
			t.Errorf("no sealed Secret for %s", name)
		}
	}
	if hc.Spec.PullSecret.Name != PullSecretName(hc.Name) {
		t.Errorf("the HostedCluster names pull secret %s", hc.Spec.PullSecret.Name)
	}
}
