// Package atomicfile replaces a file so that a reader sees either the old bytes or the new ones,
// never half, and the new file has exactly the mode asked for. It is the one writer of the
// region's certificates, keys and CA bundles, which servers re-read while they are replaced.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data at mode. The bytes go to a new temporary file of a random name
// in path's directory (created exclusively, so neither a file left by an earlier crash nor a
// link planted there is reused or followed), which is given mode whatever the umask, synced and
// renamed over path. On error path is unchanged and the temporary file is removed.
func Write(path string, data []byte, mode os.FileMode) error {
	return write(path, data, mode, nil)
}

// WriteOwned is Write for a file another user's process reads (a server that drops to its own
// user): the new file is given to uid:gid before it replaces path, so there is never a moment
// when path is the new bytes with the wrong owner.
func WriteOwned(path string, data []byte, mode os.FileMode, uid, gid int) error {
	return write(path, data, mode, func(f *os.File) error { return f.Chown(uid, gid) })
}

func write(path string, data []byte, mode os.FileMode, chown func(*os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing of that name left to remove
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if chown != nil {
		if err := chown(tmp); err != nil {
			tmp.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
