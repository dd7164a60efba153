// Command build-images builds OpenHCP's container images without a container engine
// (dev-infrastructure/images): one static binary per image on an empty base, non-root, labelled
// with the git revision, stamped with the commit's time. It writes <out>/<name>.oci.tar (OCI
// layout tarballs for `ctr images import`) and <out>/images.json (name → repository, tag, digest)
// and prints the manifest's path. An image whose binary did not change is not rewritten.
//
//	build-images [-out DIR] [-root DIR] [-variant NAME] [NAME...]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "build-images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build-images", flag.ContinueOnError)
	root := fs.String("root", "", "repository root (default: the git work tree of the current directory)")
	out := fs.String("out", "", "output directory (default: <root>/.run/images)")
	variant := fs.String("variant", "", "rebuild the same tree as a distinct image: appended to the tag and recorded as a label (a test's new image revision); empty for real builds")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: build-images [-out DIR] [-root DIR] [-variant NAME] [NAME...]\nimages:")
		for _, s := range images.Catalogue() {
			fmt.Fprintf(fs.Output(), " %s", s.Name)
		}
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" {
		b, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			return fmt.Errorf("finding the repository root (pass -root): %w", err)
		}
		*root = strings.TrimSpace(string(b))
	}
	if *out == "" {
		*out = filepath.Join(*root, ".run", "images")
	}
	specs, err := images.Select(fs.Args()...)
	if err != nil {
		return err
	}
	src, err := images.GitSource(ctx, *root)
	if err != nil {
		return err
	}
	src.Variant = *variant
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if src.Dirty {
		log.Warn("the work tree has uncommitted changes: images are tagged " + src.Tag() + " and may differ from a build of the commit")
	}
	if _, err := images.Build(ctx, images.Options{Root: *root, Out: *out, Source: src, Specs: specs, Log: log}); err != nil {
		return err
	}
	fmt.Println(filepath.Join(*out, images.ManifestFile))
	return nil
}
