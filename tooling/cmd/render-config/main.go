// Command render-config merges config/config.yaml's layers for every region, validates each
// result against config/config.schema.json and writes config/rendered/<env>-<region>.json and
// the Helm values of every chart (config/values/*.yaml.tmpl, docs/deploy.md) under
// config/rendered/<env>-<region>/. With -check it writes nothing and fails when the committed
// outputs are stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openhcp/openhcp/tooling/pkg/regionconfig"
)

func main() {
	dir := flag.String("config-dir", "config", "directory holding config.yaml and config.schema.json; outputs go to its rendered/")
	check := flag.Bool("check", false, "write nothing; exit 1 if the committed rendered outputs differ from a fresh render")
	flag.Parse()
	if err := run(*dir, *check); err != nil {
		fmt.Fprintln(os.Stderr, "render-config:", err)
		os.Exit(1)
	}
}

func run(dir string, check bool) error {
	files, err := regionconfig.RenderDir(dir)
	if err != nil {
		return err
	}
	out := filepath.Join(dir, "rendered")
	if check {
		stale, err := regionconfig.Stale(out, files)
		if err != nil {
			return err
		}
		if len(stale) > 0 {
			return fmt.Errorf("rendered config is stale (run make render-config and commit):\n  %s", strings.Join(stale, "\n  "))
		}
		return nil
	}
	if err := regionconfig.Write(out, files); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Println(filepath.Join(out, name))
	}
	return nil
}
