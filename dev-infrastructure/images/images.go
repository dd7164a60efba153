// Package images builds OpenHCP's container images without a container engine: each image is one
// static Go binary on an empty base, run as a non-root user, labelled with the git revision it was
// built from and stamped with that commit's time, so the same commit gives the same digest. Images
// are written as OCI image-layout tarballs that containerd imports (`ctr images import`), with a
// JSON manifest (images.json) of name → reference and digest for the charts and the deployer.
//
// docs/deploy.md#images describes the naming scheme, the manifest and how the images are loaded.
package images

import (
	"fmt"
	"strings"
)

// Registry is the registry part of every image reference. It is a name no one resolves: images are
// never pushed or pulled, only imported into containerd, and a registry name with a dot keeps CRI
// from rewriting the reference to docker.io/library/....
const Registry = "openhcp.local"

// SourceURL is the repository every image's org.opencontainers.image.source label names.
const SourceURL = "https://github.com/openhcp/openhcp"

// UID and GID are the numeric user and group every image runs as (distroless' "nonroot").
const (
	UID = 65532
	GID = 65532
)

// Pause is the name of the pod sandbox image the node's containerd uses.
const Pause = "pause"

// Repository is the repository of image name: Registry/name.
func Repository(name string) string { return Registry + "/" + name }

// Ref is the reference of image name at tag: Registry/name:tag.
func Ref(name, tag string) string { return Repository(name) + ":" + tag }

// DigestRef is the reference of image name by digest: Registry/name@digest.
func DigestRef(name, digest string) string { return Repository(name) + "@" + digest }

// Spec is one image: a Go package built into a static binary that is the image's entrypoint.
type Spec struct {
	// Name is the image's name, the last element of its repository.
	Name string
	// Package is the Go package of the image's one binary.
	Package string
	// ModuleDir, relative to the repository root, is a module outside the workspace to build the
	// package in with GOWORK=off (Maestro's pinned build); empty builds in the go.work workspace.
	ModuleDir string
	// Binary is the binary's file name in the image, under /usr/local/bin.
	Binary string
	// ValuesKey, when set, nests the image's Helm values under that key: for an image that is
	// a second container of another image's chart (the Maestro gate, under gate:).
	ValuesKey string
	// Extras are further static binaries the entrypoint runs, put beside it under
	// /usr/local/bin (the sim's pinned kube-apiserver, one per hosted cluster).
	Extras []Binary
	// Prebuilt, when set, is an executable already on the build host (a Debian package's) that
	// is the image's entrypoint instead of a build of Package. A dynamically linked one brings
	// its ELF interpreter and the shared libraries it names, read from the host (prebuilt.go).
	Prebuilt string `json:",omitempty"`
}

// Binary is one further executable of an image, built like the spec's own: a package (in
// ModuleDir with GOWORK=off when set) built with LDFlags added to the builder's fixed ones.
type Binary struct {
	// Name is the file name under /usr/local/bin.
	Name               string
	Package, ModuleDir string
	// LDFlags are added to -s -w -buildid= (the -X version stamps of a Kubernetes binary).
	LDFlags string `json:",omitempty"`
}

// Path is the binary's path inside the image.
func (b Binary) Path() string { return "/usr/local/bin/" + b.Name }

// kubeVersionLDFlags stamp the pinned Kubernetes version into a Kubernetes binary, as
// hack/tool.sh's callers do (the Makefile's KUBE_LDFLAGS); without them it reports v0.0.0.
const kubeVersionLDFlags = "-X k8s.io/component-base/version.gitVersion=v1.32.13 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=32"

// KubeAPIServer is the pinned kube-apiserver in the hypershift-sim image: the sim starts one
// per served HostedCluster (its chart's --kube-apiserver names this path).
var KubeAPIServer = Binary{Name: "kube-apiserver", Package: "k8s.io/kubernetes/cmd/kube-apiserver",
	ModuleDir: "dev-infrastructure/kube-tools", LDFlags: kubeVersionLDFlags}

// Etcd is the pinned etcd in the hypershift-sim image: the sim starts one beside each hosted
// kube-apiserver (its chart's --etcd names this path), the one make run's launcher runs.
var Etcd = Binary{Name: "etcd", Package: "./cmd/etcd", ModuleDir: "dev-infrastructure/kube-tools"}

// Entrypoint is the path of the spec's binary inside the image.
func (s Spec) Entrypoint() string { return "/usr/local/bin/" + s.Binary }

// Catalogue is every image OpenHCP deploys, the sandbox image included. The Maestro server and
// agent are one image (one binary, `maestro server` / `maestro agent`), as upstream ships them;
// so is the server's `maestro migration` init container.
func Catalogue() []Spec {
	const mod = "github.com/openhcp/openhcp/"
	return []Spec{
		{Name: "frontend", Package: mod + "frontend/cmd/frontend", Binary: "frontend"},
		{Name: "backend", Package: mod + "backend/cmd/backend", Binary: "backend"},
		{Name: "monitor", Package: mod + "backend/cmd/monitor", Binary: "monitor"},
		{Name: "maintenance", Package: mod + "backend/cmd/maintenance", Binary: "maintenance"},
		{Name: "cluster-service", Package: mod + "cluster-service/cmd/cluster-service", Binary: "cluster-service"},
		{Name: "admin", Package: mod + "admin/cmd/admin", Binary: "admin"},
		{Name: "gateway", Package: mod + "admin/cmd/gateway", Binary: "gateway"},
		{Name: "hypershift-sim", Package: mod + "dev-infrastructure/mgmtcluster/cmd/hypershift-sim", Binary: "hypershift-sim",
			Extras: []Binary{KubeAPIServer, Etcd}},
		{Name: "maestro", Package: mod + "dev-infrastructure/maestro/cmd/maestro", ModuleDir: "dev-infrastructure/maestro", Binary: "maestro"},
		// The gate in front of Maestro's REST API, beside it in the maestro-server pod.
		{Name: "maestro-gate", Package: mod + "dev-infrastructure/mgmtcluster/cmd/maestro-gate", Binary: "maestro-gate", ValuesKey: "gate"},
		{Name: Pause, Package: mod + "dev-infrastructure/images/pause", Binary: "pause"},
		// The region's Prometheus under make deploy: Debian's package (make deps), the same
		// binary make run starts as a process (docs/deploy.md#prometheus-under-make-deploy).
		{Name: "prometheus", Prebuilt: "/usr/bin/prometheus", Binary: "prometheus"},
	}
}

// Select returns the catalogue's specs with the given names, in catalogue order; no names selects
// every spec. An unknown name is an error.
func Select(names ...string) ([]Spec, error) {
	all := Catalogue()
	if len(names) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []Spec
	for _, s := range all {
		if want[s.Name] {
			out = append(out, s)
			delete(want, s.Name)
		}
	}
	if len(want) > 0 {
		var unknown, known []string
		for n := range want {
			unknown = append(unknown, n)
		}
		for _, s := range all {
			known = append(known, s.Name)
		}
		return nil, fmt.Errorf("unknown image(s) %s; the catalogue has %s", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return out, nil
}
