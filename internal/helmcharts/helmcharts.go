// Package helmcharts owns where the repository's Helm charts live, so the tools that generate
// chart files (values.schema.json) and the checks every chart gets (dev-infrastructure/chartcheck)
// find the same charts, and a new chart is picked up without being registered anywhere.
package helmcharts

import (
	"fmt"
	"path/filepath"
	"sort"
)

// Patterns are where charts live, relative to the repository root: <component>/deploy (one
// deployable), <component>/deploy/<chart> (several), and the same one folder deeper for the
// components under dev-infrastructure/.
var Patterns = []string{"*/deploy/Chart.yaml", "*/deploy/*/Chart.yaml", "*/*/deploy/Chart.yaml", "*/*/deploy/*/Chart.yaml"}

// Find returns every chart folder under root (relative to it, with forward slashes, sorted),
// library charts included.
func Find(root string) ([]string, error) {
	var found []string
	for _, pattern := range Patterns {
		m, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil {
			return nil, fmt.Errorf("find charts %s: %w", pattern, err)
		}
		for _, f := range m {
			rel, err := filepath.Rel(root, filepath.Dir(f))
			if err != nil {
				return nil, fmt.Errorf("find charts: %w", err)
			}
			found = append(found, filepath.ToSlash(rel))
		}
	}
	sort.Strings(found)
	return found, nil
}
