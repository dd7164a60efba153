package images

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Source is the revision images are built from. It alone decides the images' tag, revision label
// and creation time, so two builds of one Source from one tree give the same digests.
type Source struct {
	// Revision is the full git commit hash.
	Revision string
	// Time is the commit's time: every image's creation time.
	Time time.Time
	// Dirty is true when the work tree differs from the commit (tracked changes or untracked,
	// not ignored files): the binaries may then differ between two builds of the same Revision.
	Dirty bool
	// Variant, when set, names a rebuild of the same tree that must differ from it, such as a
	// test's "new image revision" to roll a Deployment: it is appended to the tag and recorded in
	// the label VariantLabel, so the digest changes while the binary does not. Empty in releases.
	Variant string
}

// VariantLabel is the label that records a Source's Variant.
const VariantLabel = "dev.openhcp.image.variant"

// Tag is the images' tag: the revision's first 12 hex digits, then "-dirty" for a dirty tree,
// then "-<Variant>" when there is one.
func (s Source) Tag() string {
	t := s.Revision
	if len(t) > 12 {
		t = t[:12]
	}
	if s.Dirty {
		t += "-dirty"
	}
	if s.Variant != "" {
		t += "-" + s.Variant
	}
	return t
}

// RevisionLabel is the value of org.opencontainers.image.revision: the commit, with "-dirty" for
// a dirty tree, so an image never claims to be exactly a commit it is not.
func (s Source) RevisionLabel() string {
	if s.Dirty {
		return s.Revision + "-dirty"
	}
	return s.Revision
}

// GitSource reads the Source of the git work tree at root.
func GitSource(ctx context.Context, root string) (Source, error) {
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			msg := ""
			if ee, ok := err.(*exec.ExitError); ok {
				msg = strings.TrimSpace(string(ee.Stderr))
			}
			return "", fmt.Errorf("git %s in %s: %w %s", strings.Join(args, " "), root, err, msg)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var s Source
	out, err := git("log", "-1", "--format=%H %ct")
	if err != nil {
		return s, err
	}
	rev, ts, ok := strings.Cut(out, " ")
	if !ok {
		return s, fmt.Errorf("git log in %s: unexpected output %q", root, out)
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return s, fmt.Errorf("git log in %s: commit time %q: %w", root, ts, err)
	}
	status, err := git("status", "--porcelain")
	if err != nil {
		return s, err
	}
	return Source{Revision: rev, Time: time.Unix(secs, 0).UTC(), Dirty: status != ""}, nil
}
