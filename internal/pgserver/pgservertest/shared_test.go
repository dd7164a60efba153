package pgservertest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestSharedOutlivesItsFirstTestAndStopRemovesIt: the cluster a subtest starts is still there
// for the next one, and Stop ends it and removes its whole directory (a test binary that kept
// the server without stopping it left 120 MB in the temp directory per run).
func TestSharedOutlivesItsFirstTestAndStopRemovesIt(t *testing.T) {
	var shared pgservertest.Shared
	var first string
	t.Run("first", func(t *testing.T) { first = shared.Get(t).Dir })
	t.Run("second", func(t *testing.T) {
		s := shared.Get(t)
		if s.Dir != first {
			t.Fatalf("second test got cluster %s, want the first's %s", s.Dir, first)
		}
		select {
		case <-s.Done():
			t.Fatal("the shared cluster stopped when the test that started it ended")
		default:
		}
		pgservertest.NewDatabase(t, s)
	})
	top := filepath.Dir(first)
	if _, err := os.Stat(top); err != nil {
		t.Fatalf("the cluster's directory is gone before Stop: %v", err)
	}
	shared.Stop()
	if _, err := os.Stat(top); !os.IsNotExist(err) {
		t.Fatalf("%s still exists after Stop (%v)", top, err)
	}
}
