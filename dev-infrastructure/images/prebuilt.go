package images

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// libraryDirs are where a prebuilt binary's shared libraries are looked up on the build host, in
// the order glibc's loader searches them on Debian (multiarch first). The image gets each at the
// same path, so the loader finds it there without an ld.so.cache.
var libraryDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// copyPrebuilt copies spec.Prebuilt to bin and returns the files it needs to run in an empty
// image: its ELF interpreter and the shared libraries it names, transitively, with the host's
// bytes. A static binary needs none. The image's digest then depends on the host's package
// versions, not only on the commit.
func copyPrebuilt(spec Spec, bin string) ([]File, error) {
	data, err := os.ReadFile(spec.Prebuilt)
	if err != nil {
		return nil, fmt.Errorf("image %s: prebuilt binary: %w", spec.Name, err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	files, err := runtimeFiles(spec.Prebuilt)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	return files, nil
}

// runtimeFiles are the ELF interpreter and shared libraries (transitively) that the executable
// at path names, read from the host and placed at the paths the loader opens.
func runtimeFiles(path string) ([]File, error) {
	var out []File
	seen := map[string]bool{}
	var visit func(p string, isExe bool) error
	visit = func(p string, isExe bool) error {
		f, err := elf.Open(p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		defer f.Close()
		var deps []string
		if isExe {
			for _, prog := range f.Progs {
				if prog.Type != elf.PT_INTERP {
					continue
				}
				b := make([]byte, prog.Filesz)
				if _, err := prog.ReadAt(b, 0); err != nil {
					return fmt.Errorf("%s: interpreter: %w", p, err)
				}
				if n := len(b); n > 0 && b[n-1] == 0 {
					b = b[:n-1]
				}
				deps = append(deps, string(b))
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("%s: shared libraries: %w", p, err)
		}
		for _, lib := range libs {
			found := ""
			for _, d := range libraryDirs {
				if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
					found = filepath.Join(d, lib)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, found in none of %v", p, lib, libraryDirs)
			}
			deps = append(deps, found)
		}
		for _, d := range deps {
			if seen[d] {
				continue
			}
			seen[d] = true
			// The file's bytes at the path the loader opens (a symbolic link is followed).
			data, err := os.ReadFile(d)
			if err != nil {
				return fmt.Errorf("%s needs %s: %w", p, d, err)
			}
			out = append(out, File{Path: d, Data: data})
			if err := visit(d, false); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(path, true); err != nil {
		return nil, err
	}
	return out, nil
}
