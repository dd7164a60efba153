package session

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// installed starts a real PostgreSQL with the admin database installed, and returns a store
// logged in as the service's login and a connection of the superuser.
func installed(t *testing.T) (*Store, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	pg := pgservertest.Start(t)
	superDSN := pgservertest.NewDatabase(t, pg)
	su, err := pgx.Connect(ctx, superDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { su.Close(ctx) })
	if _, err := su.Exec(ctx, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'adminsvc') THEN CREATE ROLE adminsvc LOGIN; END IF; END $$"); err != nil {
		t.Fatal(err)
	}
	if err := audit.Install(ctx, su, "adminsvc"); err != nil {
		t.Fatal(err)
	}
	if err := Install(ctx, su, "adminsvc"); err != nil {
		t.Fatal(err)
	}
	l, err := audit.Open(ctx, strings.Replace(superDSN, "postgres://postgres@", "postgres://adminsvc@", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key, err := NewKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := New(l.Pool(), key)
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check as the service login: %v", err)
	}
	return s, su
}

func TestSessionLifecycle(t *testing.T) {
	s, su := installed(t)
	ctx := context.Background()
	cred := []byte("apiVersion: v1\nkind: Config\n# client-key-data: secret\n")
	now := time.Now()

	ro, err := s.Open(ctx, Session{ID: "ro1", ClusterID: "c1", Person: "bob", Group: "sre-readonly", Access: AccessReadOnly, Reason: "r", TTLSeconds: 600,
		Expires: now.Add(10 * time.Minute)}, cred)
	if err != nil || ro.State != Active || !ro.Live(now) {
		t.Fatalf("open read-only: %+v %v", ro, err)
	}
	t.Run("credential_is_sealed_at_rest_and_opens_for_its_session_only", func(t *testing.T) {
		var sealed []byte
		if err := su.QueryRow(ctx, "SELECT credential FROM "+Table+" WHERE id = 'ro1'").Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(sealed), "apiVersion") || strings.Contains(string(sealed), "secret") {
			t.Fatalf("stored in the clear: %q", sealed)
		}
		_, got, err := s.Credential(ctx, "ro1")
		if err != nil || string(got) != string(cred) {
			t.Fatalf("Credential = %q, %v", got, err)
		}
		// Moved to another session's row, it does not open.
		if _, err := s.Open(ctx, Session{ID: "other", ClusterID: "c1", Person: "mallory", Group: "sre-readonly", Access: AccessReadOnly, Reason: "r", TTLSeconds: 600}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := su.Exec(ctx, "UPDATE "+Table+" SET credential = $1 WHERE id = 'other'", sealed); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Credential(ctx, "other"); err == nil {
			t.Fatal("a sealed credential opened for another session")
		}
	})

	adm, err := s.Open(ctx, Session{ID: "adm1", ClusterID: "c1", Person: "alice", Group: "sre-admin", Access: AccessAdmin, Reason: "r", TTLSeconds: 3600}, nil)
	if err != nil || adm.State != AwaitingApproval || adm.Live(now) || adm.HasCredential {
		t.Fatalf("open admin: %+v %v", adm, err)
	}
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"active_without_a_credential_is_refused_by_the_database", func() error {
			_, err := su.Exec(ctx, "UPDATE "+Table+" SET state = 'active' WHERE id = 'adm1'")
			return err
		}, nil},
		{"owner_is_immutable", func() error {
			_, err := su.Exec(ctx, "UPDATE "+Table+" SET person = 'mallory' WHERE id = 'adm1'")
			return err
		}, nil},
		{"the_service_cannot_delete_a_session", func() error {
			_, err := s.pool.Exec(ctx, "DELETE FROM "+Table+" WHERE id = 'adm1'")
			return err
		}, nil},
		{"the_service_cannot_change_the_owner", func() error {
			_, err := s.pool.Exec(ctx, "UPDATE "+Table+" SET person = 'mallory' WHERE id = 'adm1'")
			return err
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); err == nil {
				t.Fatal("allowed")
			}
		})
	}
	adm, err = s.Activate(ctx, "adm1", cred, now.Add(time.Hour))
	if err != nil || !adm.Live(now) {
		t.Fatalf("activate: %+v %v", adm, err)
	}
	adm, err = s.End(ctx, "adm1", Closed, "alice")
	if err != nil || adm.State != Closed || adm.ClosedBy != "alice" || adm.ClosedAt == nil || adm.Live(now) {
		t.Fatalf("close: %+v %v", adm, err)
	}
	t.Run("an_ended_session_never_changes_again", func(t *testing.T) {
		if _, err := s.End(ctx, "adm1", Revoked, "carol"); !errors.Is(err, ErrEnded) {
			t.Fatalf("revoke after close: %v", err)
		}
		if _, err := s.Activate(ctx, "adm1", cred, now.Add(time.Hour)); !errors.Is(err, ErrEnded) {
			t.Fatalf("activate after close: %v", err)
		}
		if _, err := su.Exec(ctx, "UPDATE "+Table+" SET state = 'active' WHERE id = 'adm1'"); err == nil {
			t.Fatal("the owner reopened a closed session")
		}
	})
	t.Run("expiry_is_a_state_seen_at_read", func(t *testing.T) {
		got, err := s.Get(ctx, "ro1")
		if err != nil || got.StateAt(now.Add(11*time.Minute)) != Expired || got.Live(now.Add(11*time.Minute)) {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("list_and_states", func(t *testing.T) {
		live, err := s.List(ctx, Filter{Now: now})
		if err != nil || len(live) != 2 { // ro1 and "other" (awaiting)
			t.Fatalf("live sessions %+v %v", live, err)
		}
		mine, err := s.List(ctx, Filter{Person: "alice", All: true, Now: now})
		if err != nil || len(mine) != 1 || mine[0].ID != "adm1" {
			t.Fatalf("alice's sessions %+v %v", mine, err)
		}
		states, err := s.States(ctx, []string{"ro1", "adm1", "gone"})
		if err != nil || states["ro1"].State != Active || states["adm1"].State != Closed || len(states) != 2 {
			t.Fatalf("states %+v %v", states, err)
		}
		if n, err := s.CountActive(ctx, now); err != nil || n != 1 {
			t.Fatalf("active %d %v", n, err)
		}
	})
}

// TestCheckNeedsInstall: a login without session.Install's grants is refused at start, naming
// it, rather than failing at the first break-glass request.
func TestCheckNeedsInstall(t *testing.T) {
	s, su := installed(t)
	ctx := context.Background()
	if _, err := su.Exec(ctx, "REVOKE ALL ON "+Table+" FROM adminsvc"); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), "session.Install") {
		t.Fatalf("Check without the grants: %v", err)
	}
	if _, err := su.Exec(ctx, "GRANT ALL ON "+Table+" TO adminsvc"); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), "delete") {
		t.Fatalf("Check with DELETE granted: %v", err)
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "session.key")
	if err := WriteKeyFile(p); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(p)
	if err := WriteKeyFile(p); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(p); string(again) != string(first) {
		t.Fatal("WriteKeyFile replaced an existing key: every sealed credential would be lost")
	}
	k, err := ReadKeyFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := k.Seal("s1", []byte("x"))
	if got, err := k.Open("s1", sealed); err != nil || string(got) != "x" {
		t.Fatalf("open %q %v", got, err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable key: %v", err)
	}
	// The gateway's and the admin API's pods read it from a Secret volume: root's file, mode
	// 0440, readable through the pod's fsGroup (the kubelet adds the group bits whatever the
	// defaultMode). Changing a file's owner needs root.
	if os.Getuid() != 0 {
		return
	}
	if err := os.Chmod(p, 0o440); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65532, os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(p); err != nil {
		t.Fatalf("a key as a Secret volume gives it to the pod's group was refused: %v", err)
	}
	if err := os.Chown(p, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(p); err == nil {
		t.Fatal("a key another group may read was accepted")
	}
}
