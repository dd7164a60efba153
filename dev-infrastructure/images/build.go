package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// ManifestFile is the name of the manifest Build writes into its output directory.
const ManifestFile = "images.json"

// formatVersion changes whenever the way an image is assembled from its binary changes, so a
// cached archive from an older builder is never reused.
const formatVersion = "openhcp-images/1"

// validTag is the grammar of an image tag (the OCI distribution spec's).
var validTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// goBuildFlags are the fixed flags of every image binary: no cgo (the base is empty: no libc),
// no file system paths, no VCS stamping (the revision is the image's label), no build ID.
var goBuildFlags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid="}

// Options configures Build.
type Options struct {
	// Root is the repository root (the go.work directory).
	Root string
	// Out is the output directory: <name>.oci.tar archives, images.json, values/<name>.yaml
	// (Image.HelmValues) and bin/. One Build at a time uses it (Build holds a lock on Out/.lock).
	Out string
	// Source is the revision the images are labelled with (GitSource of Root).
	Source Source
	// Specs are the images to build; nil builds the whole Catalogue.
	Specs []Spec
	// Log receives progress; nil discards it.
	Log *slog.Logger
}

// Manifest is images.json: every built image's reference and digest. The charts' image values
// (repository, tag, digest) come from it; Archive is what Node.LoadImages imports.
type Manifest struct {
	Registry string `json:"registry"`
	// Revision is the images' org.opencontainers.image.revision label.
	Revision string           `json:"revision"`
	Created  time.Time        `json:"created"`
	Images   map[string]Image `json:"images"`
}

// Image is one built image.
type Image struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	// Digest is the image manifest's digest (sha256:…), the same in containerd after import.
	Digest string `json:"digest"`
	// Archive is the OCI layout tarball, relative to the manifest's directory.
	Archive string `json:"archive"`
	// BinarySHA256 is the image binary's checksum: the cache reuses an archive while it holds.
	BinarySHA256 string `json:"binarySHA256"`
}

// HelmValues is a Helm values file that sets a chart's image.repository, image.tag and
// image.digest to this image (Build writes it as values/<name>.yaml; pass it with -f after the
// region's rendered values). The digest wins over the tag in every chart.
func (i Image) HelmValues(src Source) []byte {
	return fmt.Appendf(nil, "# Written by build-images for revision %s; do not edit.\nimage:\n  repository: %s\n  tag: %q\n  digest: %s\n",
		src.RevisionLabel(), i.Repository, i.Tag, i.Digest)
}

// NestedHelmValues is HelmValues under key (Spec.ValuesKey): key.image.repository, and so on.
func (i Image) NestedHelmValues(src Source, key string) []byte {
	return fmt.Appendf(nil, "# Written by build-images for revision %s; do not edit.\n%s:\n  image:\n    repository: %s\n    tag: %q\n    digest: %s\n",
		src.RevisionLabel(), key, i.Repository, i.Tag, i.Digest)
}

// Ref is the image's tag reference (repository:tag).
func (i Image) Ref() string { return i.Repository + ":" + i.Tag }

// DigestRef is the image's digest reference (repository@digest); charts pin this one.
func (i Image) DigestRef() string { return i.Repository + "@" + i.Digest }

// Archives returns every image archive's absolute path, with dir the manifest's directory, in
// name order.
func (m Manifest) Archives(dir string) []string {
	var out []string
	for _, name := range m.Names() {
		out = append(out, filepath.Join(dir, m.Images[name].Archive))
	}
	return out
}

// Names returns the manifest's image names, sorted.
func (m Manifest) Names() []string {
	var names []string
	for n := range m.Images {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ReadManifest reads images.json from dir.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, fmt.Errorf("reading the image manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("reading the image manifest %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return m, nil
}

// cacheState is <name>.oci.tar.json: the inputs the archive beside it was built from.
type cacheState struct {
	Key    string `json:"key"`
	Digest string `json:"digest"`
}

// Build builds each spec's binary and, when the binary or the image's metadata changed since the
// archive in Out was written, its image archive; then it writes Out/images.json listing the
// images it built. A failed build leaves earlier archives and the previous manifest in place.
func Build(ctx context.Context, o Options) (Manifest, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	specs := o.Specs
	if specs == nil {
		specs = Catalogue()
	}
	m := Manifest{Registry: Registry, Revision: o.Source.RevisionLabel(), Created: o.Source.Time, Images: map[string]Image{}}
	if o.Source.Revision == "" || o.Source.Time.IsZero() {
		return m, errors.New("image build: no source revision and time")
	}
	if !validTag.MatchString(o.Source.Tag()) {
		return m, fmt.Errorf("image build: tag %q is not a valid image tag (letters, digits, '_', '.', '-'; at most 128)", o.Source.Tag())
	}
	binDir, valuesDir := filepath.Join(o.Out, "bin"), filepath.Join(o.Out, "values")
	for _, d := range []string{binDir, valuesDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return m, fmt.Errorf("image build: %w", err)
		}
	}
	lock, err := os.OpenFile(filepath.Join(o.Out, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return m, fmt.Errorf("image build: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return m, fmt.Errorf("image build: locking %s: %w", o.Out, err)
	}
	platform := Platform{OS: "linux", Arch: runtime.GOARCH}
	for _, spec := range specs {
		start := time.Now()
		bin := filepath.Join(binDir, spec.Name)
		var runtimeFiles []File
		if spec.Prebuilt != "" {
			if runtimeFiles, err = copyPrebuilt(spec, bin); err != nil {
				return m, err
			}
		} else if err := buildBinary(ctx, o.Root, spec.Name, Binary{Name: spec.Binary, Package: spec.Package, ModuleDir: spec.ModuleDir}, platform, bin); err != nil {
			return m, err
		}
		var extras []string
		for _, b := range spec.Extras {
			p := filepath.Join(binDir, spec.Name+"."+b.Name)
			if err := buildBinary(ctx, o.Root, spec.Name, b, platform, p); err != nil {
				return m, err
			}
			extras = append(extras, p)
		}
		built := time.Since(start)
		img, reused, err := buildImage(spec, bin, extras, runtimeFiles, platform, o.Source, o.Out)
		if err != nil {
			return m, err
		}
		m.Images[spec.Name] = img
		values := img.HelmValues(o.Source)
		if spec.ValuesKey != "" {
			values = img.NestedHelmValues(o.Source, spec.ValuesKey)
		}
		if err := writeFileAtomic(filepath.Join(valuesDir, spec.Name+".yaml"), values); err != nil {
			return m, fmt.Errorf("image %s: values: %w", spec.Name, err)
		}
		log.Info("image", "name", spec.Name, "ref", img.Ref(), "digest", img.Digest, "reused", reused,
			"binary", built.Round(time.Millisecond), "total", time.Since(start).Round(time.Millisecond))
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, fmt.Errorf("image manifest: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(o.Out, ManifestFile), append(b, '\n')); err != nil {
		return m, fmt.Errorf("image manifest: %w", err)
	}
	return m, nil
}

// buildBinary builds one binary of image name into out as a static executable for platform.
func buildBinary(ctx context.Context, root, name string, b Binary, platform Platform, out string) error {
	args := append([]string{"build"}, goBuildFlags...)
	if b.LDFlags != "" {
		args = append(args[:len(args)-1], goBuildFlags[len(goBuildFlags)-1]+" "+b.LDFlags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, b.Package)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+platform.OS, "GOARCH="+platform.Arch)
	if b.ModuleDir != "" {
		// A pinned tool module outside the workspace (as hack/tool.sh builds it).
		cmd.Dir = filepath.Join(root, b.ModuleDir)
		cmd.Env = append(cmd.Env, "GOWORK=off", "GOFLAGS=-mod=mod")
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("image %s: go build %s: %w: %s", name, b.Package, err, stderr.String())
	}
	if err := checkStatic(out); err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	}
	return nil
}

// checkStatic refuses a dynamically linked binary: the image has no loader and no libc.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it names an ELF interpreter); the image has no libc", path)
		}
	}
	return nil
}

// buildImage writes spec's archive into out unless the one there was built from the same inputs:
// bin is the spec's binary, extras the files of spec.Extras in order, files what a prebuilt
// binary needs beside it.
func buildImage(spec Spec, bin string, extras []string, files []File, platform Platform, src Source, out string) (Image, bool, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return Image{}, false, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	var extraData [][]byte
	var extraSums []string
	for _, p := range extras {
		b, err := os.ReadFile(p)
		if err != nil {
			return Image{}, false, fmt.Errorf("image %s: %w", spec.Name, err)
		}
		s := sha256.Sum256(b)
		extraData, extraSums = append(extraData, b), append(extraSums, hex.EncodeToString(s[:]))
	}
	sum := sha256.Sum256(data)
	img := Image{
		Repository:   Repository(spec.Name),
		Tag:          src.Tag(),
		Archive:      spec.Name + ".oci.tar",
		BinarySHA256: hex.EncodeToString(sum[:]),
	}
	for _, f := range files {
		s := sha256.Sum256(f.Data)
		extraSums = append(extraSums, f.Path+"="+hex.EncodeToString(s[:]))
	}
	key, err := cacheKey(spec, img, extraSums, platform, src)
	if err != nil {
		return img, false, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	archive := filepath.Join(out, img.Archive)
	stateFile := archive + ".json"
	if b, err := os.ReadFile(stateFile); err == nil {
		var st cacheState
		if json.Unmarshal(b, &st) == nil && st.Key == key && st.Digest != "" {
			if _, err := os.Stat(archive); err == nil {
				img.Digest = st.Digest
				return img, true, nil
			}
		}
	}
	v1img, err := NewImageWithFiles(spec, data, platform, src, extraData, files)
	if err != nil {
		return img, false, err
	}
	digest, err := v1img.Digest()
	if err != nil {
		return img, false, fmt.Errorf("image %s: digest: %w", spec.Name, err)
	}
	img.Digest = digest.String()
	// The state is written after the archive: a crash in between only costs a rebuild.
	if err := os.Remove(stateFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return img, false, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	if err := WriteArchive(archive, img.Ref(), v1img); err != nil {
		return img, false, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	st, err := json.Marshal(cacheState{Key: key, Digest: img.Digest})
	if err != nil {
		return img, false, err
	}
	if err := writeFileAtomic(stateFile, st); err != nil {
		return img, false, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	return img, false, nil
}

// cacheKey covers every input of an image archive: the builder's format, the spec, the binary
// and the extra binaries, the reference, the platform and the source's labels and time.
func cacheKey(spec Spec, img Image, extraSums []string, platform Platform, src Source) (string, error) {
	b, err := json.Marshal(struct {
		Format   string
		Spec     Spec
		Binary   string
		Extras   []string `json:",omitempty"`
		Ref      string
		Platform Platform
		Labels   map[string]string
		Created  time.Time
	}{formatVersion, spec, img.BinarySHA256, extraSums, img.Ref(), platform, Labels(spec, src), src.Time.UTC()})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
