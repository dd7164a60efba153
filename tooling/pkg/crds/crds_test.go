package crds

import (
	"strings"
	"testing"
)

// The embedded manifests are what every management cluster gets; these checks catch a generator
// change that would break an apiserver install before an integration test has to.
func TestCRDs_embeddedManifestsDecodeCleaned(t *testing.T) {
	got, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]bool{}
	for _, crd := range got {
		byName[crd.Name] = true
		for k := range crd.Annotations {
			if strings.HasPrefix(k, "feature-gate.release.openshift.io/") {
				t.Errorf("%s still carries annotation %q", crd.Name, k)
			}
		}
		served := 0
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served++
				if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
					t.Errorf("%s version %s has no schema", crd.Name, v.Name)
				}
			}
		}
		if served == 0 {
			t.Errorf("%s serves no version", crd.Name)
		}
	}
	for _, want := range []string{HostedClusters, NodePools, ManifestWorks, AppliedManifestWorks, CertificateSigningRequestApprovals, CertificateRevocationRequests} {
		if !byName[want] {
			t.Errorf("missing CRD %s; have %v", want, byName)
		}
	}
	if len(got) != 6 {
		t.Errorf("got %d CRDs, want 6", len(got))
	}
}

func TestCRDs_returnsIndependentCopies(t *testing.T) {
	a, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	a[0].Name = "changed"
	b, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if b[0].Name == "changed" {
		t.Fatal("CRDs shares state between calls")
	}
}
