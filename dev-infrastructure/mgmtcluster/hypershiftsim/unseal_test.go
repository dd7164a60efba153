package hypershiftsim_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openhcp/openhcp/internal/secretseal"
)

// sealedSecret is what Cluster Service's work carries for the Secret name (as
// cluster-service/pkg/manifests builds it): every value sealed to key and bound to
// namespace/name/data key.
func sealedSecret(t *testing.T, key *secretseal.PublicKey, ns, name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-sealed",
			Labels: map[string]string{secretseal.LabelSealed: "true", "api.openshift.com/id": "c1"},
			Annotations: map[string]string{secretseal.TargetAnnotation: name, secretseal.TargetTypeAnnotation: string(typ),
				secretseal.KeyIDAnnotation: key.KeyID()}},
		Type: secretseal.Type, Data: map[string][]byte{},
	}
	for k, v := range data {
		sv, err := key.Seal(ns, name, k, v)
		if err != nil {
			t.Fatal(err)
		}
		s.Data[k] = sv
	}
	return s
}

// TestSealedSecretsAreOpenedIntoTheSecretsTheyName: the sim, holding the management cluster's
// private key, writes the Secret a sealed one names with the opened values and type, follows a
// change, and writes nothing for a Secret sealed to another key or a value moved from another
// Secret.
func TestSealedSecretsAreOpenedIntoTheSecretsTheyName(t *testing.T) {
	ns := newNamespace(t, "unseal")
	ctx := context.Background()
	etcdKey := bytes.Repeat([]byte{7}, 32)
	pull := []byte(`{"auths":{"registry.example":{"auth":"dG9rZW4="}}}`)
	for _, s := range []*corev1.Secret{
		sealedSecret(t, unsealKey.Public(), ns, "hc-etcd-encryption-key", corev1.SecretTypeOpaque, map[string][]byte{"key": etcdKey}),
		sealedSecret(t, unsealKey.Public(), ns, "hc-pull-secret", corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": pull}),
	} {
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	opened := func(name string, typ corev1.SecretType, key string, want []byte) {
		t.Helper()
		eventually(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, 30*time.Second, func(s *corev1.Secret) error {
			if s.Type != typ || !bytes.Equal(s.Data[key], want) || s.Labels["api.openshift.com/id"] != "c1" || s.Labels[secretseal.LabelSealed] != "" {
				return fmt.Errorf("type %s, %s=%q, labels %v", s.Type, key, s.Data[key], s.Labels)
			}
			return nil
		})
	}
	opened("hc-etcd-encryption-key", corev1.SecretTypeOpaque, "key", etcdKey)
	opened("hc-pull-secret", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", pull)

	// A new seal of a new value (Cluster Service's next build) is followed.
	rotated := bytes.Repeat([]byte{9}, 32)
	next := sealedSecret(t, unsealKey.Public(), ns, "hc-etcd-encryption-key", corev1.SecretTypeOpaque, map[string][]byte{"key": rotated})
	cur := &corev1.Secret{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: next.Name}, cur); err != nil {
		t.Fatal(err)
	}
	cur.Data = next.Data
	if err := k8s.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	opened("hc-etcd-encryption-key", corev1.SecretTypeOpaque, "key", rotated)

	// Sealed to another management cluster's key, or a value moved here from another Secret:
	// nothing is written. Each is created before a good one; the unsealer's one worker takes
	// them in order, so once the good one is written the bad ones have been tried.
	other, err := secretseal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	foreign := sealedSecret(t, other.Public(), ns, "foreign", corev1.SecretTypeOpaque, map[string][]byte{"key": etcdKey})
	moved := sealedSecret(t, unsealKey.Public(), ns, "moved", corev1.SecretTypeOpaque, map[string][]byte{"key": etcdKey})
	moved.Data["key"] = cur.Data["key"] // sealed for hc-etcd-encryption-key
	for _, s := range []*corev1.Secret{foreign, moved,
		sealedSecret(t, unsealKey.Public(), ns, "after", corev1.SecretTypeOpaque, map[string][]byte{"key": []byte("ok")})} {
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	opened("after", corev1.SecretTypeOpaque, "key", []byte("ok"))
	for _, name := range []string{"foreign", "moved"} {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("secret %s was written from a seal that should not open (err %v)", name, err)
		}
	}
}
