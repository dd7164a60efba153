package gateway

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestGatewayBoundsOnePersonsOpenRequests: a person's requests open at once on a replica are
// bounded (MaxOpenPerPerson); one more is refused 429 while another person is still served, and
// the person is served again once one of theirs ends. Unbounded, one SRE's watches took every
// connection of a replica (HTTP/1.1: a connection per watch), and no other SRE was answered.
func TestGatewayBoundsOnePersonsOpenRequests(t *testing.T) {
	const limit = 3
	e := newEnv(t, func(c *Config) { c.MaxOpenPerPerson = limit })
	alice := e.open(t, "alice", "read-only", time.Now().Add(time.Hour))
	bob := e.open(t, "bob", "read-only", time.Now().Add(time.Hour))
	watchURL := func(id string) string {
		return e.srv.URL + "/sessions/" + id + "/api/v1/namespaces/default/configmaps?watch=true"
	}
	listURL := func(id string) string { return e.srv.URL + "/sessions/" + id + "/api/v1/namespaces/default/configmaps" }
	get := func(person, url string) int {
		t.Helper()
		resp, err := e.client(person).Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.ReadAll(resp.Body)
		return resp.StatusCode
	}

	cancels := make([]context.CancelFunc, 0, limit)
	for range limit {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		cancels = append(cancels, cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, watchURL(alice.ID), nil)
		resp, err := e.client("alice").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch %d of %d: %d", len(cancels), limit, resp.StatusCode)
		}
	}
	for _, tc := range []struct {
		name, person, url string
		want              int
	}{
		{"one_more_of_the_same_person_is_refused", "alice", listURL(alice.ID), http.StatusTooManyRequests},
		{"another_person_is_served", "bob", listURL(bob.ID), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := get(tc.person, tc.url); got != tc.want {
				t.Fatalf("answer %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("served_again_once_one_ends", func(t *testing.T) {
		cancels[0]()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code := get("alice", listURL(alice.ID))
			if code == http.StatusOK {
				return
			}
			if code != http.StatusTooManyRequests || time.Now().After(deadline) {
				t.Fatalf("answer %d after one watch of %d ended; want 200 within 30s", code, limit)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestGatewayKeepsNoIdleConnection: a connection ends with its request's answer (an upgrade's
// stream aside), so a person holds a connection of the replica only while a request of theirs is
// open, which MaxOpenPerPerson bounds. Kept alive, one quick request on each of 1,024 connections
// left idle held every connection of a replica for its idle timeout, and no other SRE was served.
func TestGatewayKeepsNoIdleConnection(t *testing.T) {
	e := newEnv(t)
	s := e.open(t, "alice", "read-only", time.Now().Add(time.Hour))
	for _, tc := range []struct{ name, path string }{
		{"answered", "/sessions/" + s.ID + "/api/v1/namespaces/default/configmaps"},
		{"refused", "/sessions/no-such-session/api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := e.client("alice").Get(e.srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if !resp.Close {
				t.Fatalf("answer %d keeps its connection open (no Connection: close)", resp.StatusCode)
			}
		})
	}
}
