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

func TestIstioCRDs(t *testing.T) {
	got, err := IstioCRDs()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, crd := range got {
		if crd.Spec.Group != "security.istio.io" {
			t.Errorf("%s: group %s", crd.Name, crd.Spec.Group)
		}
		kinds[crd.Spec.Names.Kind] = true
		v1 := false
		for _, v := range crd.Spec.Versions {
			if v.Name == "v1" && v.Served && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				v1 = true
			}
		}
		if !v1 {
			t.Errorf("%s: does not serve v1 with a schema", crd.Name)
		}
	}
	if len(got) != 2 || !kinds["PeerAuthentication"] || !kinds["AuthorizationPolicy"] {
		t.Errorf("got kinds %v, want exactly PeerAuthentication and AuthorizationPolicy", kinds)
	}
	mgmt, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range mgmt {
		if crd.Spec.Group == "security.istio.io" {
			t.Errorf("management-cluster CRDs include %s", crd.Name)
		}
	}
}
