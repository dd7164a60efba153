// Command gen-values-schema writes every Helm chart's values.schema.json from the chart's
// values.yaml (and, for values marked +schema:ref, config/config.schema.json's $defs); with
// -check it writes nothing and fails when a committed schema is missing or stale
// (docs/deploy.md#values-schemas).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/openhcp/openhcp/tooling/pkg/valuesschema"
)

func main() {
	root := flag.String("root", ".", "repository root")
	check := flag.Bool("check", false, "write nothing; exit 1 if a committed values.schema.json differs from a fresh generation")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gen-values-schema:", err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	files, err := valuesschema.All(root)
	if err != nil {
		return err
	}
	if check {
		stale, err := valuesschema.Stale(root, files)
		if err != nil {
			return err
		}
		if len(stale) > 0 {
			return fmt.Errorf("charts' values schemas are stale (run make generate and commit):\n  %s", strings.Join(stale, "\n  "))
		}
		return nil
	}
	return valuesschema.Write(root, files)
}
