package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// prepare sets up dir before path is written; it returns a check of what it planted.
		prepare func(t *testing.T, path string) func(t *testing.T)
		mode    os.FileMode
	}{
		{
			name:    "a_new_file_gets_the_mode_asked_for_whatever_the_umask",
			prepare: func(t *testing.T, path string) func(t *testing.T) { return nil },
			mode:    0o644,
		},
		{
			name: "a_stale_temporary_file_does_not_widen_the_mode",
			prepare: func(t *testing.T, path string) func(t *testing.T) {
				if err := os.WriteFile(path+".tmp", []byte("stale"), 0o644); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			mode: 0o600,
		},
		{
			name: "an_existing_wider_file_is_narrowed",
			prepare: func(t *testing.T, path string) func(t *testing.T) {
				if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			mode: 0o600,
		},
		{
			name: "a_planted_link_is_not_followed",
			prepare: func(t *testing.T, path string) func(t *testing.T) {
				victim := filepath.Join(filepath.Dir(path), "victim")
				if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(victim, path+".tmp"); err != nil {
					t.Fatal(err)
				}
				return func(t *testing.T) {
					if b, _ := os.ReadFile(victim); string(b) != "keep" {
						t.Fatalf("the link's target was overwritten: %q", b)
					}
				}
			},
			mode: 0o600,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := syscall.Umask(0o077)
			defer syscall.Umask(old)
			dir := t.TempDir()
			path := filepath.Join(dir, "tls.key")
			check := tc.prepare(t, path)
			if err := Write(path, []byte("new"), tc.mode); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !fi.Mode().IsRegular() || fi.Mode().Perm() != tc.mode {
				t.Fatalf("mode %v, want a regular file of %v", fi.Mode(), tc.mode)
			}
			if b, _ := os.ReadFile(path); string(b) != "new" {
				t.Fatalf("content %q, want %q", b, "new")
			}
			if check != nil {
				check(t)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".tls.key.*")); len(left) > 0 {
				t.Fatalf("temporary files left behind: %v", left)
			}
		})
	}
}

func TestWriteFailureLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ca.crt")
	// A directory in path's place: the rename fails.
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o644); err == nil {
		t.Fatal("replacing a directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries after a failed write, want only the directory", len(entries))
	}
	if err := Write(filepath.Join(dir, "missing", "ca.crt"), []byte("new"), 0o644); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

// TestReadersNeverSeeHalf reads the file while it is replaced again and again: every read is one
// whole version.
func TestReadersNeverSeeHalf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bundle.pem")
	a, b := bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 256<<10)
	if err := Write(path, a, 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := 0; i < 50; i++ {
			next := a
			if i%2 == 0 {
				next = b
			}
			if err := Write(path, next, 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			wg.Wait()
			return
		default:
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("read %d: %d bytes of neither version", reads, len(got))
		}
	}
}

// TestWriteOwnedGivesTheFileAway: the file that replaces path already belongs to the user and
// group asked for, with the mode asked for.
func TestWriteOwnedGivesTheFileAway(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	const nobody = 65534
	path := filepath.Join(t.TempDir(), "server.key")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteOwned(path, []byte("new"), 0o600, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != nobody || st.Gid != nobody || fi.Mode().Perm() != 0o600 {
		t.Fatalf("owner %d:%d mode %v, want %d:%d 0600", st.Uid, st.Gid, fi.Mode().Perm(), nobody, nobody)
	}
}
