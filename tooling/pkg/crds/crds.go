// Package crds owns the CustomResourceDefinitions every management cluster carries: HyperShift's
// HostedCluster and NodePool (and its break-glass approval and revocation kinds), and Open Cluster Management's ManifestWork and AppliedManifestWork
// (which the Maestro agent needs). The YAML is generated from the pinned API modules by
// tooling/cmd/gen-crds and embedded here, so installing them needs no network and no checkout.
package crds

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

//go:embed manifests/zz_generated.*.yaml
var manifests embed.FS

// Names of the CRDs Install creates, for callers that want to check for them.
const (
	HostedClusters       = "hostedclusters.hypershift.openshift.io"
	NodePools            = "nodepools.hypershift.openshift.io"
	ManifestWorks        = "manifestworks.work.open-cluster-management.io"
	AppliedManifestWorks = "appliedmanifestworks.work.open-cluster-management.io"
	// HyperShift's break-glass kinds (certificates.hypershift.openshift.io/v1alpha1), generated
	// from the pinned module's Go types.
	CertificateSigningRequestApprovals = "certificatesigningrequestapprovals.certificates.hypershift.openshift.io"
	CertificateRevocationRequests      = "certificaterevocationrequests.certificates.hypershift.openshift.io"
)

// CRDs decodes the embedded manifests. Each call returns fresh objects the caller may modify,
// sorted by name.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(manifests, "manifests")
	if err != nil {
		return nil, fmt.Errorf("read embedded CRDs: %w", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		raw, err := manifests.ReadFile(path.Join("manifests", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read embedded CRD %s: %w", e.Name(), err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("decode embedded CRD %s: %w", e.Name(), err)
		}
		out = append(out, crd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Install creates or updates every CRD on the cluster cfg points at and waits until each is
// Established (its API is served). It is safe to run again on a cluster that already has them:
// updates are conditional on the resourceVersion read just before and are retried on conflict.
func Install(ctx context.Context, cfg *rest.Config) error {
	want, err := CRDs()
	if err != nil {
		return err
	}
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range want {
		if err := createOrUpdate(ctx, api, crd); err != nil {
			return err
		}
	}
	for _, crd := range want {
		if err := waitEstablished(ctx, api, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

type crdAPI interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Create(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts metav1.CreateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Update(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts metav1.UpdateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}

func createOrUpdate(ctx context.Context, api crdAPI, want *apiextensionsv1.CustomResourceDefinition) error {
	for attempt := 0; ; attempt++ {
		cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
		case err == nil:
			next := want.DeepCopy()
			next.ResourceVersion = cur.ResourceVersion
			_, err = api.Update(ctx, next, metav1.UpdateOptions{})
		}
		if err == nil {
			return nil
		}
		if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5 {
			continue
		}
		return fmt.Errorf("install CRD %s: %w", want.Name, err)
	}
}

func waitEstablished(ctx context.Context, api crdAPI, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last string
	for {
		crd, err := api.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if established(crd) {
				return nil
			}
			last = conditionSummary(crd)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not Established: %s: %w", name, last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Established reports whether the apiserver serves the CRD's API.
func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// IsEstablished reports whether crd's Established condition is True.
func IsEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool { return established(crd) }

func conditionSummary(crd *apiextensionsv1.CustomResourceDefinition) string {
	s := "conditions:"
	for _, c := range crd.Status.Conditions {
		s += fmt.Sprintf(" %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}
