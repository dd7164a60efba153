package hypershiftsim

import (
	"fmt"
	"regexp"
	"strings"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
)

// OpenShift release tags are <semver>[-<arch>], e.g. 4.19.7-multi, 4.19.7-x86_64,
// 4.20.0-rc.2-aarch64 or plain 4.19.7.
var releaseTagRE = regexp.MustCompile(`^(\d+\.\d+\.\d+(?:-(?:ec|rc|fc)\.\d+)?)(?:-(multi|x86_64|amd64|aarch64|arm64|ppc64le|s390x))?$`)

// ReleaseVersion derives the OpenShift version and payload architecture from a release image
// reference. Real HyperShift reads both from the release payload's metadata; the sim cannot pull
// images, so it trusts the tag: quay.io/openshift-release-dev/ocp-release:4.19.7-multi is version
// 4.19.7 with payload arch Multi. A digest-only reference (…@sha256:…) or a tag that is not a
// release version is an error, which the sim reports as ValidReleaseImage=False just as HyperShift
// does for an image it cannot resolve.
func ReleaseVersion(image string) (version string, arch hyperv1.PayloadArchType, err error) {
	ref := image
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash {
		return "", "", fmt.Errorf("release image %q has no tag to derive the OpenShift version from", image)
	}
	m := releaseTagRE.FindStringSubmatch(ref[colon+1:])
	if m == nil {
		return "", "", fmt.Errorf("release image %q: tag %q is not an OpenShift release version", image, ref[colon+1:])
	}
	switch m[2] {
	case "multi":
		arch = hyperv1.Multi
	case "aarch64", "arm64":
		arch = hyperv1.ARM64
	case "ppc64le":
		arch = hyperv1.PPC64LE
	case "s390x":
		arch = hyperv1.S390X
	default:
		arch = hyperv1.AMD64
	}
	return m[1], arch, nil
}
