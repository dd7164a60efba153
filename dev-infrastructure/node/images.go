package node

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
)

// criNamespace is containerd's namespace for CRI: the kubelet sees only images imported there.
const criNamespace = "k8s.io"

// buildSandboxImage builds the pause image (dev-infrastructure/images) from the repository's
// current revision into dir and returns it; the archive's path is dir/pause.oci.tar.
func buildSandboxImage(ctx context.Context, dir string) (images.Image, error) {
	root, err := moduleDirOrRoot()
	if err != nil {
		return images.Image{}, err
	}
	src, err := images.GitSource(ctx, root)
	if err != nil {
		return images.Image{}, fmt.Errorf("sandbox image: %w", err)
	}
	specs, err := images.Select(images.Pause)
	if err != nil {
		return images.Image{}, err
	}
	m, err := images.Build(ctx, images.Options{Root: root, Out: dir, Source: src, Specs: specs})
	if err != nil {
		return images.Image{}, fmt.Errorf("sandbox image: %w", err)
	}
	return m.Images[images.Pause], nil
}

// LoadImages imports image archives (OCI layout tarballs, as dev-infrastructure/images writes them) into the node's containerd, in the CRI namespace, with
// `ctr images import --digests`: each image is named by its tag reference and by its digest
// reference (repository@sha256:…), so pods may name either with imagePullPolicy Never or
// IfNotPresent; nothing is ever pulled. Importing an image that is already there is a no-op.
func (n *Node) LoadImages(ctx context.Context, archives ...string) error {
	return n.containerd.Import(ctx, archives...)
}

// LoadManifest imports every image of an images.json in dir (images.ReadManifest) and checks
// containerd then holds each one by its digest reference.
func (n *Node) LoadManifest(ctx context.Context, dir string) (images.Manifest, error) {
	m, err := images.ReadManifest(dir)
	if err != nil {
		return m, err
	}
	if err := n.LoadImages(ctx, m.Archives(dir)...); err != nil {
		return m, err
	}
	have, err := n.containerd.ImageRefs(ctx)
	if err != nil {
		return m, err
	}
	for _, name := range m.Names() {
		img := m.Images[name]
		if !have[img.DigestRef()] || !have[img.Ref()] {
			return m, fmt.Errorf("image %s: imported %s, but containerd does not list %s and %s (it lists %s)", name, filepath.Base(img.Archive), img.Ref(), img.DigestRef(), strings.Join(slices.Sorted(maps.Keys(have)), " "))
		}
	}
	return m, nil
}

// Import imports image archives into the CRI namespace (see Node.LoadImages).
func (c *Containerd) Import(ctx context.Context, archives ...string) error {
	for _, a := range archives {
		ref, err := images.ArchiveRef(a)
		if err != nil {
			return err
		}
		// --base-name: the digest image is named repository@digest (without it, ctr names it
		// import-<date>@digest, and a pod naming the image by digest would not find it).
		if _, err := c.Ctr(ctx, "-n", criNamespace, "images", "import", "--base-name", images.RepositoryOf(ref), "--digests", a); err != nil {
			return fmt.Errorf("importing image %s: %w", a, err)
		}
	}
	return nil
}

// ImageRefs returns the references of every image in the CRI namespace.
func (c *Containerd) ImageRefs(ctx context.Context) (map[string]bool, error) {
	out, err := c.Ctr(ctx, "-n", criNamespace, "images", "ls", "-q")
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	refs := map[string]bool{}
	for _, r := range strings.Fields(string(out)) {
		refs[r] = true
	}
	return refs, nil
}
