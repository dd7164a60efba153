package hypershiftsim

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/openhcp/openhcp/internal/secretseal"
)

// SecretUnsealer writes the real Secret from each sealed one (type secretseal.Type) that a
// ManifestWork brings: Cluster Service seals a cluster's pull secret and etcd key to this
// management cluster's key, so Maestro, its database and the broker carry only ciphertext,
// and only the holder of the private key (the management side) opens them. It is
// level-triggered: the written Secret holds what the sealed one opens to, whatever was there.
// A sealed Secret that does not open (another key, tampered, moved) writes nothing; the
// error is logged and the reconcile retried with backoff.
type SecretUnsealer struct {
	Client client.Client
	Key    *secretseal.PrivateKey
}

// unsealedBy marks the Secrets the unsealer wrote, and from which sealed Secret.
const unsealedBy = "openhcp.io/unsealed-from"

func (u *SecretUnsealer) setup(mgr ctrl.Manager) error {
	sealed := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[secretseal.LabelSealed] == "true"
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("secret-unsealer").
		For(&corev1.Secret{}, builder.WithPredicates(sealed)).
		Complete(u); err != nil {
		return fmt.Errorf("set up secret unsealer: %w", err)
	}
	return nil
}

// Reconcile opens one sealed Secret and writes (creates or updates) the Secret it names.
func (u *SecretUnsealer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &corev1.Secret{}
	if err := u.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if s.Type != secretseal.Type || s.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	target := s.Annotations[secretseal.TargetAnnotation]
	if target == "" || target == s.Name {
		return ctrl.Result{}, fmt.Errorf("sealed secret %s names no other secret to write (%s)", req, secretseal.TargetAnnotation)
	}
	data := make(map[string][]byte, len(s.Data))
	for k, v := range s.Data {
		pt, err := u.Key.Open(s.Namespace, target, k, v)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("unseal %s into %s: %w", req, target, err)
		}
		data[k] = pt
	}
	labels := maps.Clone(s.Labels)
	delete(labels, secretseal.LabelSealed)
	want := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: target, Labels: labels,
			Annotations: map[string]string{unsealedBy: s.Name}},
		Type: corev1.SecretType(s.Annotations[secretseal.TargetTypeAnnotation]),
		Data: data,
	}
	got := &corev1.Secret{}
	err := u.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: target}, got)
	if apierrors.IsNotFound(err) {
		if err := u.Client.Create(ctx, &want); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("write unsealed secret %s/%s: %w", s.Namespace, target, err)
		}
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("read secret %s/%s: %w", s.Namespace, target, err)
	}
	if got.Type != want.Type {
		// A Secret's type is immutable: one of another type is not ours to replace.
		return ctrl.Result{}, fmt.Errorf("secret %s/%s is of type %s, the sealed one says %s", s.Namespace, target, got.Type, want.Type)
	}
	if sameData(got.Data, data) && got.Annotations[unsealedBy] == s.Name {
		return ctrl.Result{}, nil
	}
	got.Data = data
	if got.Annotations == nil {
		got.Annotations = map[string]string{}
	}
	got.Annotations[unsealedBy] = s.Name
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	maps.Copy(got.Labels, labels)
	// The update carries the resourceVersion read: a concurrent change makes it fail and retry.
	if err := u.Client.Update(ctx, got); err != nil {
		return ctrl.Result{}, fmt.Errorf("write unsealed secret %s/%s: %w", s.Namespace, target, err)
	}
	return ctrl.Result{}, nil
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
