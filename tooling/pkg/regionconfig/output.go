package regionconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Write writes every region's resolved configuration to dir/<env>-<region>.json and removes
// rendered files of regions that no longer exist.
func Write(dir string, regions []Rendered) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	want := map[string]bool{}
	for _, r := range regions {
		b, err := r.JSON()
		if err != nil {
			return err
		}
		name := r.Name() + ".json"
		want[name] = true
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	extra, err := unexpectedFiles(dir, want)
	if err != nil {
		return err
	}
	for _, name := range extra {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("remove stale %s: %w", name, err)
		}
	}
	return nil
}

// Stale lists what in dir differs from a fresh render: changed, missing or leftover files.
func Stale(dir string, regions []Rendered) ([]string, error) {
	var stale []string
	want := map[string]bool{}
	for _, r := range regions {
		b, err := r.JSON()
		if err != nil {
			return nil, err
		}
		name := r.Name() + ".json"
		want[name] = true
		have, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case os.IsNotExist(err):
			stale = append(stale, name+" is missing")
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", name, err)
		case !bytes.Equal(have, b):
			stale = append(stale, name+" is out of date")
		}
	}
	extra, err := unexpectedFiles(dir, want)
	if err != nil {
		return nil, err
	}
	for _, name := range extra {
		stale = append(stale, name+" belongs to no region in the config")
	}
	return stale, nil
}

func unexpectedFiles(dir string, want map[string]bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var extra []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && !want[e.Name()] {
			extra = append(extra, e.Name())
		}
	}
	return extra, nil
}
