package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Platform is the OS and architecture of an image's binary.
type Platform struct{ OS, Arch string }

// NewImage assembles spec's image around binary (a static executable for platform) and extras
// (the bytes of spec.Extras, in order): one layer on an empty base, and a config that runs
// binary as UID:GID with the revision and source labels. Every timestamp is src.Time and every
// tar header is fixed, so equal inputs give an equal digest.
func NewImage(spec Spec, binary []byte, platform Platform, src Source, extras ...[]byte) (v1.Image, error) {
	return NewImageWithFiles(spec, binary, platform, src, extras, nil)
}

// File is a file of an image at an absolute path: what a prebuilt binary needs beside it (its
// ELF interpreter and shared libraries).
type File struct {
	Path string
	Data []byte
}

// NewImageWithFiles is NewImage with further files (mode 0755, owned by root) at their paths.
func NewImageWithFiles(spec Spec, binary []byte, platform Platform, src Source, extras [][]byte, files []File) (v1.Image, error) {
	if len(extras) != len(spec.Extras) {
		return nil, fmt.Errorf("image %s: %d extra binaries given, the spec names %d", spec.Name, len(extras), len(spec.Extras))
	}
	layerData, err := rootfsLayer(spec, binary, extras, files, src.Time)
	if err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", spec.Name, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", spec.Name, err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: src.Time}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "openhcp build-images: " + spec.Package + " → " + spec.Entrypoint()},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", spec.Name, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = platform.OS, platform.Arch
	cf.Created = created
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{spec.Entrypoint()},
		Env:        []string{"PATH=/usr/local/bin", "HOME=/home/nonroot"},
		WorkingDir: "/",
		Labels:     Labels(spec, src),
	}
	return mutate.ConfigFile(img, cf)
}

// Labels are an image's OCI labels: where and from which revision it was built.
func Labels(spec Spec, src Source) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":    spec.Name,
		"org.opencontainers.image.revision": src.RevisionLabel(),
		"org.opencontainers.image.source":   SourceURL,
		"org.opencontainers.image.created":  src.Time.UTC().Format(time.RFC3339),
		"org.opencontainers.image.version":  src.Tag(),
	}
	if src.Variant != "" {
		l[VariantLabel] = src.Variant
	}
	return l
}

// rootfsLayer is the gzipped tar of an image's whole file system: /etc with passwd and group
// naming the non-root user (some libraries look the user up), a writable /tmp, the user's home,
// and the binary. Owners, modes and times are fixed; gzip's header carries no name or time.
func rootfsLayer(spec Spec, binary []byte, extras [][]byte, files []File, mtime time.Time) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		data     []byte
	}
	dir := func(name string, mode int64, uid, gid int) entry {
		return entry{name: name + "/", mode: mode, uid: uid, gid: gid}
	}
	var entries []entry
	// Parent directories of the binary first, then the fixed tree.
	for _, d := range []string{"usr", "usr/local", "usr/local/bin"} {
		entries = append(entries, dir(d, 0o755, 0, 0))
	}
	entries = append(entries,
		dir("etc", 0o755, 0, 0),
		entry{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		entry{name: "etc/group", mode: 0o644, data: []byte(group)},
		dir("home", 0o755, 0, 0),
		dir("home/nonroot", 0o700, UID, GID),
		dir("tmp", 0o1777, 0, 0),
		entry{name: strings.TrimPrefix(spec.Entrypoint(), "/"), mode: 0o755, data: binary},
	)
	for i, b := range spec.Extras {
		entries = append(entries, entry{name: strings.TrimPrefix(b.Path(), "/"), mode: 0o755, data: extras[i]})
	}
	// Files at any path, each after its parent directories (each directory once, in order).
	have := map[string]bool{}
	for _, e := range entries {
		have[strings.TrimSuffix(e.name, "/")] = true
	}
	for _, f := range files {
		name := strings.TrimPrefix(path.Clean(f.Path), "/")
		var parents []string
		for d := path.Dir(name); d != "." && !have[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			have[d] = true
			entries = append(entries, dir(d, 0o755, 0, 0))
		}
		if have[name] {
			return nil, fmt.Errorf("file %s twice in the image", f.Path)
		}
		have[name] = true
		entries = append(entries, entry{name: name, mode: 0o755, data: f.Data})
	}
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if path.Clean(h.Name) == "." {
			return nil, fmt.Errorf("bad entry %q", e.name)
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(tarBuf.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return gz.Bytes(), nil
}
