package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

var (
	testSpec     = Spec{Name: "demo", Package: "example.com/demo", Binary: "demo"}
	testPlatform = Platform{OS: "linux", Arch: "amd64"}
	testSource   = Source{Revision: "0123456789abcdef0123456789abcdef01234567", Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
)

func digestOf(t *testing.T, spec Spec, bin []byte, src Source) v1.Hash {
	t.Helper()
	img, err := NewImage(spec, bin, testPlatform, src)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNewImageDigestDependsOnlyOnItsInputs(t *testing.T) {
	bin := []byte("\x7fELF pretend binary")
	base := digestOf(t, testSpec, bin, testSource)
	later := testSource
	later.Time = later.Time.Add(time.Second)
	other := testSource
	other.Revision = "f" + other.Revision[1:]
	dirty := testSource
	dirty.Dirty = true
	renamed := testSpec
	renamed.Binary = "demo2"
	variant := testSource
	variant.Variant = "rollout"
	for _, tc := range []struct {
		name  string
		spec  Spec
		bin   []byte
		src   Source
		equal bool
	}{
		{"same inputs, built again", testSpec, bytes.Clone(bin), testSource, true},
		{"one byte of the binary changed", testSpec, append(bytes.Clone(bin), 0), testSource, false},
		{"another commit", testSpec, bin, other, false},
		{"another commit time", testSpec, bin, later, false},
		{"dirty work tree", testSpec, bin, dirty, false},
		{"binary at another path", renamed, bin, testSource, false},
		{"a variant of the same tree", testSpec, bin, variant, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := digestOf(t, tc.spec, tc.bin, tc.src); (got == base) != tc.equal {
				t.Fatalf("digest %s vs base %s: want equal=%v", got, base, tc.equal)
			}
		})
	}
}

func TestImageRunsTheBinaryAsNonRootWithLabelsAndFixedTimes(t *testing.T) {
	bin := []byte("binary")
	img, err := NewImage(testSpec, bin, testPlatform, testSource)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/usr/local/bin/demo" {
		t.Errorf("user %q entrypoint %q", cf.Config.User, cf.Config.Entrypoint)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(testSource.Time) {
		t.Errorf("os %s arch %s created %s", cf.OS, cf.Architecture, cf.Created)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.revision": testSource.Revision,
		"org.opencontainers.image.source":   SourceURL,
		"org.opencontainers.image.version":  "0123456789ab",
	} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	type want struct {
		mode     int64
		uid, gid int
	}
	wants := map[string]want{
		"usr/local/bin/demo": {0o755, 0, 0},
		"tmp/":               {0o1777, 0, 0},
		"home/nonroot/":      {0o700, UID, GID},
		"etc/passwd":         {0o644, 0, 0},
	}
	readLayer(t, img, func(h *tar.Header, data []byte) {
		if !h.ModTime.Equal(testSource.Time) {
			t.Errorf("%s: mtime %s, want the commit time", h.Name, h.ModTime)
		}
		if w, ok := wants[h.Name]; ok {
			if h.Mode != w.mode || h.Uid != w.uid || h.Gid != w.gid {
				t.Errorf("%s: mode %o uid %d gid %d, want %o %d %d", h.Name, h.Mode, h.Uid, h.Gid, w.mode, w.uid, w.gid)
			}
			delete(wants, h.Name)
		}
		switch h.Name {
		case "usr/local/bin/demo":
			if !bytes.Equal(data, bin) {
				t.Errorf("the binary in the image differs")
			}
		case "etc/passwd":
			if !strings.Contains(string(data), "nonroot:x:65532:65532:") {
				t.Errorf("passwd lacks the nonroot user: %s", data)
			}
		}
	})
	if len(wants) > 0 {
		t.Errorf("missing from the layer: %v", wants)
	}
}

func TestWriteArchiveIsAnOCILayoutThatKeepsTheDigest(t *testing.T) {
	img, err := NewImage(testSpec, []byte("binary"), testPlatform, testSource)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	dir := t.TempDir()
	ref := Ref("demo", testSource.Tag())
	var sums [2][32]byte
	for i := range sums {
		path := filepath.Join(dir, "demo.oci.tar")
		if err := WriteArchive(path, ref, img); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = sha256.Sum256(b)
	}
	if sums[0] != sums[1] {
		t.Fatal("two archives of one image differ")
	}
	archive := filepath.Join(dir, "demo.oci.tar")
	if got, err := ArchiveRef(archive); err != nil || got != ref {
		t.Fatalf("ArchiveRef = %q, %v; want %q", got, err, ref)
	}
	// Unpacked, the archive is an OCI layout any OCI tool reads, with the image by its digest.
	out := filepath.Join(dir, "layout")
	if err := untar(archive, out); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	read, err := p.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(read); err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	if got := im.Manifests[0].Annotations["io.containerd.image.name"]; got != ref {
		t.Errorf("index names the image %q, want %q", got, ref)
	}
	if RepositoryOf(ref) != "openhcp.local/demo" || RepositoryOf("openhcp.local:5000/x@sha256:ab") != "openhcp.local:5000/x" {
		t.Errorf("RepositoryOf(%q) = %q", ref, RepositoryOf(ref))
	}
}

func TestArchiveRefRefusesWhatIsNotOurArchive(t *testing.T) {
	dir := t.TempDir()
	notTar := filepath.Join(dir, "x.tar")
	if err := os.WriteFile(notTar, []byte("not a tar"), 0o644); err != nil {
		t.Fatal(err)
	}
	var empty bytes.Buffer
	tw := tar.NewWriter(&empty)
	tw.Close()
	noIndex := filepath.Join(dir, "empty.tar")
	if err := os.WriteFile(noIndex, empty.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{notTar, noIndex, filepath.Join(dir, "missing.tar")} {
		if ref, err := ArchiveRef(p); err == nil {
			t.Errorf("ArchiveRef(%s) = %q, want an error", filepath.Base(p), ref)
		}
	}
}

func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
	}
}

func TestBuildImageReusesTheArchiveOnlyWhileTheBinaryIsUnchanged(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "demo")
	write := func(data string) {
		if err := os.WriteFile(bin, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("version one")
	first, reused, err := buildImage(testSpec, bin, nil, nil, testPlatform, testSource, dir)
	if err != nil || reused {
		t.Fatalf("first build: reused=%v err=%v", reused, err)
	}
	again, reused, err := buildImage(testSpec, bin, nil, nil, testPlatform, testSource, dir)
	if err != nil || !reused || again.Digest != first.Digest {
		t.Fatalf("unchanged binary: reused=%v digest %s vs %s err=%v", reused, again.Digest, first.Digest, err)
	}
	write("version two")
	changed, reused, err := buildImage(testSpec, bin, nil, nil, testPlatform, testSource, dir)
	if err != nil || reused || changed.Digest == first.Digest {
		t.Fatalf("changed binary: reused=%v digest %s (was %s) err=%v", reused, changed.Digest, first.Digest, err)
	}
	// A damaged state file (a crash, an edit) only costs a rebuild.
	if err := os.WriteFile(filepath.Join(dir, changed.Archive+".json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, reused, err := buildImage(testSpec, bin, nil, nil, testPlatform, testSource, dir); err != nil || reused || again.Digest != changed.Digest {
		t.Fatalf("damaged state: reused=%v digest %s err=%v", reused, again.Digest, err)
	}
	// A lost archive is rebuilt even though its state file says it is current.
	if err := os.Remove(filepath.Join(dir, changed.Archive)); err != nil {
		t.Fatal(err)
	}
	rebuilt, reused, err := buildImage(testSpec, bin, nil, nil, testPlatform, testSource, dir)
	if err != nil || reused || rebuilt.Digest != changed.Digest {
		t.Fatalf("lost archive: reused=%v digest %s err=%v", reused, rebuilt.Digest, err)
	}
	// The archive holds what the state file says.
	p := filepath.Join(dir, "layout")
	if err := untar(filepath.Join(dir, rebuilt.Archive), p); err != nil {
		t.Fatal(err)
	}
	if _, err := layout.Path(p).Image(mustHash(t, rebuilt.Digest)); err != nil {
		t.Fatalf("archive lacks %s: %v", rebuilt.Digest, err)
	}
}

func mustHash(t *testing.T, s string) v1.Hash {
	h, err := v1.NewHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestBuildFromTheRepositoryIsReproducible builds the real pause image from this repository twice
// into separate directories (no shared cache) and compares digests and archives.
func TestBuildFromTheRepositoryIsReproducible(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	src, err := GitSource(ctx, root)
	if err != nil {
		t.Skipf("not a git work tree: %v", err)
	}
	specs, err := Select(Pause)
	if err != nil {
		t.Fatal(err)
	}
	var ms [2]Manifest
	var dirs [2]string
	for i := range ms {
		dirs[i] = t.TempDir()
		if ms[i], err = Build(ctx, Options{Root: root, Out: dirs[i], Source: src, Specs: specs}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := ms[0].Images[Pause], ms[1].Images[Pause]
	if a.Digest == "" || a.Digest != b.Digest || a.BinarySHA256 != b.BinarySHA256 {
		t.Fatalf("two builds of one tree: %+v vs %+v", a, b)
	}
	if a.Ref() != Ref(Pause, src.Tag()) {
		t.Errorf("ref %s, want %s", a.Ref(), Ref(Pause, src.Tag()))
	}
	read, err := ReadManifest(dirs[0])
	if err != nil || read.Images[Pause] != a || read.Revision != src.RevisionLabel() {
		t.Fatalf("images.json: %+v, %v", read, err)
	}
	x, _ := os.ReadFile(filepath.Join(dirs[0], a.Archive))
	y, _ := os.ReadFile(filepath.Join(dirs[1], b.Archive))
	if len(x) == 0 || !bytes.Equal(x, y) {
		t.Fatal("the two archives differ")
	}
	values, err := os.ReadFile(filepath.Join(dirs[0], "values", Pause+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nimage:\n", "\n  repository: openhcp.local/pause\n", "\n  tag: \"" + a.Tag + "\"\n", "\n  digest: " + a.Digest + "\n"} {
		if !strings.Contains(string(values), want) {
			t.Errorf("values/pause.yaml lacks %q:\n%s", want, values)
		}
	}
	// A variant of the same tree: the same binary, another tag and digest.
	variant := src
	variant.Variant = "rollout"
	vm, err := Build(ctx, Options{Root: root, Out: dirs[0], Source: variant, Specs: specs})
	if err != nil {
		t.Fatal(err)
	}
	if v := vm.Images[Pause]; v.BinarySHA256 != a.BinarySHA256 || v.Digest == a.Digest || v.Tag != src.Tag()+"-rollout" {
		t.Errorf("variant: %+v, original %+v", v, a)
	}
	bad := src
	bad.Variant = "no/slashes"
	if _, err := Build(ctx, Options{Root: root, Out: t.TempDir(), Source: bad, Specs: specs}); err == nil || !strings.Contains(err.Error(), "not a valid image tag") {
		t.Errorf("variant with a slash: %v, want an invalid tag error", err)
	}
}

func TestBuildRefusesADynamicallyLinkedBinary(t *testing.T) {
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls")
	}
	if err := checkStatic(ls); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Fatalf("checkStatic(%s) = %v, want a dynamically linked error", ls, err)
	}
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
		err   bool
	}{
		{nil, "frontend backend monitor maintenance cluster-service admin gateway hypershift-sim maestro maestro-gate pause prometheus", false},
		{[]string{"pause", "frontend"}, "frontend pause", false},
		{[]string{"nope"}, "", true},
	} {
		specs, err := Select(tc.names...)
		var got []string
		for _, s := range specs {
			got = append(got, s.Name)
		}
		if (err != nil) != tc.err || strings.Join(got, " ") != tc.want {
			t.Errorf("Select(%v) = %v, %v", tc.names, got, err)
		}
	}
}

func TestSourceTag(t *testing.T) {
	s := testSource
	if s.Tag() != "0123456789ab" || s.RevisionLabel() != s.Revision {
		t.Errorf("clean: %s %s", s.Tag(), s.RevisionLabel())
	}
	s.Dirty = true
	if s.Tag() != "0123456789ab-dirty" || s.RevisionLabel() != s.Revision+"-dirty" {
		t.Errorf("dirty: %s %s", s.Tag(), s.RevisionLabel())
	}
}

// The gzip stream of a layer carries no name or time, so it depends on its content only.
func TestLayerGzipHeaderIsFixed(t *testing.T) {
	data, err := rootfsLayer(testSpec, []byte("x"), nil, nil, testSource.Time)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header name %q time %s", zr.Name, zr.ModTime)
	}
}

// TestImageCarriesItsExtraBinariesBesideTheEntrypoint: a spec's Extras (the sim's pinned
// kube-apiserver) are executables under /usr/local/bin beside the entrypoint, which stays the
// spec's own binary, and each one's bytes are part of the digest.
func TestImageCarriesItsExtraBinariesBesideTheEntrypoint(t *testing.T) {
	spec := testSpec
	spec.Extras = []Binary{{Name: "helper", Package: "example.com/helper"}}
	bin, helper := []byte("binary"), []byte("helper binary")
	img, err := NewImage(spec, bin, testPlatform, testSource, helper)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/usr/local/bin/demo" {
		t.Errorf("entrypoint %q, want the spec's own binary", cf.Config.Entrypoint)
	}
	files := map[string][]byte{}
	readLayer(t, img, func(h *tar.Header, data []byte) {
		if h.Typeflag == tar.TypeReg && strings.HasPrefix(h.Name, "usr/local/bin/") {
			if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
				t.Errorf("%s: mode %o uid %d gid %d, want 0755 root", h.Name, h.Mode, h.Uid, h.Gid)
			}
			files[h.Name] = data
		}
	})
	if len(files) != 2 || !bytes.Equal(files["usr/local/bin/demo"], bin) || !bytes.Equal(files["usr/local/bin/helper"], helper) {
		t.Errorf("binaries in the image: %d files (%v), want demo and helper with their bytes", len(files), keysOf(files))
	}
	base, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	changed, err := NewImage(spec, bin, testPlatform, testSource, append(bytes.Clone(helper), 0))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := changed.Digest(); d == base {
		t.Error("one byte of the extra binary changed, the digest did not")
	}
	if _, err := NewImage(spec, bin, testPlatform, testSource); err == nil {
		t.Error("an image without the bytes of its spec's extra binary was built")
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBuildImageRebuildsWhenAnExtraBinaryChanges: the cache key covers the extra binaries too.
func TestBuildImageRebuildsWhenAnExtraBinaryChanges(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec
	spec.Extras = []Binary{{Name: "helper", Package: "example.com/helper"}}
	bin, helper := filepath.Join(dir, "demo"), filepath.Join(dir, "helper")
	for path, data := range map[string]string{bin: "main", helper: "helper one"} {
		if err := os.WriteFile(path, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	first, reused, err := buildImage(spec, bin, []string{helper}, nil, testPlatform, testSource, dir)
	if err != nil || reused {
		t.Fatalf("first build: reused=%v err=%v", reused, err)
	}
	if err := os.WriteFile(helper, []byte("helper two"), 0o755); err != nil {
		t.Fatal(err)
	}
	again, reused, err := buildImage(spec, bin, []string{helper}, nil, testPlatform, testSource, dir)
	if err != nil || reused || again.Digest == first.Digest {
		t.Fatalf("changed extra binary: reused=%v digest %s (was %s) err=%v", reused, again.Digest, first.Digest, err)
	}
}

// TestPrebuiltImageCarriesTheBinaryItsLoaderAndLibraries builds the image of a distribution's
// dynamically linked executable (the host's ls) with Build: the image must hold it as its
// entrypoint, byte for byte, and the ELF interpreter and every shared library it names, at the
// paths the loader looks for them, with the host's bytes.
func TestPrebuiltImageCarriesTheBinaryItsLoaderAndLibraries(t *testing.T) {
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls")
	}
	ls, err = filepath.EvalSymlinks(ls)
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: "ls", Prebuilt: ls, Binary: "ls"}
	out := t.TempDir()
	m, err := Build(context.Background(), Options{Out: out, Source: testSource, Specs: []Spec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	lp, err := layout.ImageIndexFromPath(untarTo(t, filepath.Join(out, m.Images["ls"].Archive)))
	if err != nil {
		t.Fatal(err)
	}
	img, err := lp.Image(mustHash(t, m.Images["ls"].Digest))
	if err != nil {
		t.Fatal(err)
	}
	files := layerFiles(t, img)
	want, err := os.ReadFile(ls)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files["usr/local/bin/ls"], want) {
		t.Errorf("the entrypoint is not the host's %s byte for byte (%d bytes, want %d)", ls, len(files["usr/local/bin/ls"]), len(want))
	}
	// What the loader needs: the interpreter at its absolute path and libc (ls names both).
	var interp, libc bool
	for name, data := range files {
		host, err := os.ReadFile("/" + name)
		if err != nil || !bytes.Equal(host, data) {
			continue
		}
		interp = interp || strings.HasPrefix(filepath.Base(name), "ld-linux")
		libc = libc || filepath.Base(name) == "libc.so.6"
	}
	if !interp || !libc {
		t.Errorf("image files %v: want the ELF interpreter and libc.so.6 with the host's bytes", keysOf(files))
	}
}

// untarTo unpacks an archive into a new directory and returns it.
func untarTo(t *testing.T, archive string) string {
	t.Helper()
	dir := t.TempDir()
	if err := untar(archive, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// layerFiles reads every regular file of img's one layer.
func layerFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	readLayer(t, img, func(h *tar.Header, data []byte) {
		if h.Typeflag == tar.TypeReg {
			files[h.Name] = data
		}
	})
	return files
}

// readLayer checks that img has one layer and calls visit with each entry of it, in order,
// with the entry's bytes.
func readLayer(t *testing.T, img v1.Image, visit func(h *tar.Header, data []byte)) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read %s from the layer: %v", h.Name, err)
		}
		visit(h, data)
	}
}
