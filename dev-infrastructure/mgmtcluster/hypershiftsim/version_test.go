package hypershiftsim

import (
	"testing"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
)

func TestReleaseVersion(t *testing.T) {
	tests := []struct {
		image   string
		version string
		arch    hyperv1.PayloadArchType
		wantErr bool
	}{
		{image: "quay.io/openshift-release-dev/ocp-release:4.19.7-multi", version: "4.19.7", arch: hyperv1.Multi},
		{image: "quay.io/openshift-release-dev/ocp-release:4.19.7-x86_64", version: "4.19.7", arch: hyperv1.AMD64},
		{image: "quay.io/openshift-release-dev/ocp-release:4.20.0-rc.2-aarch64", version: "4.20.0-rc.2", arch: hyperv1.ARM64},
		{image: "registry.local:5000/ocp/release:4.18.12", version: "4.18.12", arch: hyperv1.AMD64},
		{image: "quay.io/openshift-release-dev/ocp-release:4.19.7-multi@sha256:abcd", version: "4.19.7", arch: hyperv1.Multi},
		{image: "quay.io/openshift-release-dev/ocp-release@sha256:abcd", wantErr: true},
		{image: "registry.local:5000/ocp/release", wantErr: true},
		{image: "quay.io/openshift-release-dev/ocp-release:latest", wantErr: true},
		{image: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			v, arch, err := ReleaseVersion(tt.image)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got version %q, want an error", v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v != tt.version || arch != tt.arch {
				t.Errorf("got %q %q, want %q %q", v, arch, tt.version, tt.arch)
			}
		})
	}
}

func FuzzReleaseVersion(f *testing.F) {
	f.Add("quay.io/openshift-release-dev/ocp-release:4.19.7-multi")
	f.Add("a:b@c")
	f.Fuzz(func(t *testing.T, image string) {
		v, _, err := ReleaseVersion(image)
		if err == nil && v == "" {
			t.Fatalf("%q: no error and no version", image)
		}
	})
}
