package regionconfig

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Outputs is everything render-config writes under config/rendered, by path relative to it:
// <env>-<region>.json per region and the Helm values of every chart (values.go).
func Outputs(regions []Rendered, templates []ValuesTemplate) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, r := range regions {
		b, err := r.JSON()
		if err != nil {
			return nil, err
		}
		files[r.Name()+".json"] = b
		values, err := r.HelmValues(templates)
		if err != nil {
			return nil, err
		}
		for name, b := range values {
			files[name] = b
		}
	}
	return files, nil
}

// RenderDir renders a config directory (config.yaml, config.schema.json, values/) into the
// files of its rendered/ folder.
func RenderDir(configDir string) (map[string][]byte, error) {
	regions, err := RenderFiles(filepath.Join(configDir, "config.yaml"), filepath.Join(configDir, "config.schema.json"))
	if err != nil {
		return nil, err
	}
	templates, err := LoadValuesTemplates(filepath.Join(configDir, "values"))
	if err != nil {
		return nil, err
	}
	return Outputs(regions, templates)
}

// Write writes files under dir and removes rendered files (and folders) nothing renders any more.
func Write(dir string, files map[string][]byte) error {
	for _, name := range sortedKeys(files) {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	extra, err := unexpectedFiles(dir, files)
	if err != nil {
		return err
	}
	for _, name := range extra {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("remove stale %s: %w", name, err)
		}
	}
	// Folders of regions or stamps that are gone, deepest first.
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && path != dir {
			dirs = append(dirs, path)
		}
		return nil
	})
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if entries, err := os.ReadDir(d); err == nil && len(entries) == 0 {
			_ = os.Remove(d)
		}
	}
	return nil
}

// Stale lists what in dir differs from files: changed, missing or leftover files.
func Stale(dir string, files map[string][]byte) ([]string, error) {
	var stale []string
	for _, name := range sortedKeys(files) {
		have, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case os.IsNotExist(err):
			stale = append(stale, name+" is missing")
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", name, err)
		case !bytes.Equal(have, files[name]):
			stale = append(stale, name+" is out of date")
		}
	}
	extra, err := unexpectedFiles(dir, files)
	if err != nil {
		return nil, err
	}
	for _, name := range extra {
		stale = append(stale, name+" is rendered by nothing in the config")
	}
	return stale, nil
}

// unexpectedFiles lists the rendered files (.json, .yaml) under dir that are not in want.
func unexpectedFiles(dir string, want map[string][]byte) ([]string, error) {
	var extra []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) && path == dir {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if (strings.HasSuffix(rel, ".json") || strings.HasSuffix(rel, ".yaml")) && want[rel] == nil {
			extra = append(extra, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	return extra, nil
}
