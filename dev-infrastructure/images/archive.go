package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// containerdImageName is the index annotation containerd's importer names an image by (a full
// reference); the OCI ref.name annotation alone would only give a tag.
const containerdImageName = "io.containerd.image.name"

// WriteArchive writes img as an OCI image-layout tarball (oci-layout, index.json, blobs/sha256/…)
// naming it ref, the form `ctr images import` reads. The manifest, config and layer blobs are
// stored byte for byte, so containerd keeps the digest img.Digest() reports (a docker-archive
// would have containerd write a manifest of its own, with another digest). The file is written
// next to path and renamed into place, so a reader never sees half an archive.
func WriteArchive(path, ref string, img v1.Image) (err error) {
	manifest, err := img.RawManifest()
	if err != nil {
		return fmt.Errorf("archive %s: manifest: %w", path, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("archive %s: digest: %w", path, err)
	}
	mt, err := img.MediaType()
	if err != nil {
		return fmt.Errorf("archive %s: media type: %w", path, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("archive %s: config: %w", path, err)
	}
	tag := ref
	if i := lastColonAfterSlash(ref); i >= 0 {
		tag = ref[i+1:]
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mt,
			Size:      int64(len(manifest)),
			Digest:    digest,
			Platform:  &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
			Annotations: map[string]string{
				containerdImageName:                 ref,
				"org.opencontainers.image.ref.name": tag,
			},
		}},
	})
	if err != nil {
		return fmt.Errorf("archive %s: index: %w", path, err)
	}

	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	tw := tar.NewWriter(tmp)
	epoch := time.Unix(0, 0)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}); err != nil {
			return fmt.Errorf("archive %s: %w", path, err)
		}
	}
	file := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: epoch}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("archive %s: layers: %w", path, err)
	}
	for _, l := range layers {
		h, err := l.Digest()
		if err != nil {
			return fmt.Errorf("archive %s: layer digest: %w", path, err)
		}
		size, err := l.Size()
		if err != nil {
			return fmt.Errorf("archive %s: layer size: %w", path, err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return fmt.Errorf("archive %s: layer: %w", path, err)
		}
		err = file(blob(h), size, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("archive %s: layer: %w", path, err)
		}
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("archive %s: config: %w", path, err)
	}
	configName, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("archive %s: config digest: %w", path, err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{blob(configName), config},
		{blob(digest), manifest},
		{"index.json", index},
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	} {
		if err := file(f.name, int64(len(f.data)), bytes.NewReader(f.data)); err != nil {
			return fmt.Errorf("archive %s: %w", path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	return nil
}

// lastColonAfterSlash is the index of a reference's tag separator, or -1 (a registry's port
// colon comes before the last slash).
func lastColonAfterSlash(ref string) int {
	for i := len(ref) - 1; i >= 0; i-- {
		switch ref[i] {
		case ':':
			return i
		case '/':
			return -1
		}
	}
	return -1
}

// ArchiveRef returns the reference an OCI layout tarball written by WriteArchive names its image
// by (the index's io.containerd.image.name annotation).
func ArchiveRef(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading image archive: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", fmt.Errorf("image archive %s has no index.json (not an OCI layout)", path)
		}
		if err != nil {
			return "", fmt.Errorf("reading image archive %s: %w", path, err)
		}
		if h.Name != "index.json" {
			continue
		}
		var idx v1.IndexManifest
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			return "", fmt.Errorf("image archive %s: index.json: %w", path, err)
		}
		if len(idx.Manifests) != 1 || idx.Manifests[0].Annotations[containerdImageName] == "" {
			return "", fmt.Errorf("image archive %s: want one manifest named by %s in index.json, got %d", path, containerdImageName, len(idx.Manifests))
		}
		return idx.Manifests[0].Annotations[containerdImageName], nil
	}
}

// RepositoryOf is a reference's repository: the reference without its tag or digest.
func RepositoryOf(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := lastColonAfterSlash(ref); i >= 0 {
		ref = ref[:i]
	}
	return ref
}
