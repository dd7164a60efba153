package audit

import (
	"context"
	"strings"
	"testing"
)

// TestPortalFormKeyIsOnePerRegion: every replica of the admin API reads the same portal form
// key, made once, which the service login can neither change nor remove.
func TestPortalFormKeyIsOnePerRegion(t *testing.T) {
	_, _, serviceDSN := installed(t)
	ctx := context.Background()
	var keys [][]byte
	for range 2 { // two replicas
		l, err := Open(ctx, serviceDSN)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		k, err := l.PortalFormKey(ctx)
		if err != nil || len(k) != 32 {
			t.Fatalf("key %x (%v), want 32 bytes", k, err)
		}
		keys = append(keys, k)
	}
	if string(keys[0]) != string(keys[1]) {
		t.Fatalf("two replicas read different keys: %x, %x", keys[0], keys[1])
	}
	l, err := Open(ctx, serviceDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, q := range []string{"UPDATE admin_portal_key SET key = '\\x00'", "DELETE FROM admin_portal_key"} {
		if _, err := l.Pool().Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s as the service: %v, want permission denied", q, err)
		}
	}
}
