// Command gen-armtypes writes the versioned ARM types of the frontend (frontend/pkg/api/v*/
// zz_generated_types.go) and their structural validation (zz_generated_validate.go, and for the
// types every version shares frontend/pkg/api/fieldcheck/zz_generated_shared.go), and the newest
// api-version's bounds that hand-written code reads (internal/armspec/bounds), from the
// vendored OpenAPI specification in internal/armspec/spec; with -check it writes nothing and
// fails when a committed file is missing or stale (docs/api.md, "Adding an api-version").
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openhcp/openhcp/tooling/pkg/armgen"
)

func main() {
	root := flag.String("root", ".", "repository root")
	check := flag.Bool("check", false, "write nothing; exit 1 if a committed generated file differs from a fresh generation")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gen-armtypes:", err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	files, err := armgen.Generate(filepath.Join(root, "internal/armspec/spec"), filepath.Join(root, armgen.FieldcheckDir))
	if err != nil {
		return err
	}
	if !check {
		return armgen.Write(root, files)
	}
	stale, err := armgen.Stale(root, files)
	if err != nil {
		return err
	}
	if len(stale) > 0 {
		return fmt.Errorf("generated ARM types are stale (run make generate and commit):\n  %s", strings.Join(stale, "\n  "))
	}
	return nil
}
