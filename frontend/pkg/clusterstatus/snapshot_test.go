package clusterstatus

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// scriptedStream plays events, then ends with err.
type scriptedStream struct {
	events []*csv1.ClusterEvent
	err    error
}

func (s *scriptedStream) Recv() (*csv1.ClusterEvent, error) {
	if len(s.events) == 0 {
		return nil, s.err
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func upserted(id string, rev int64) *csv1.ClusterEvent {
	return &csv1.ClusterEvent{Type: csv1.EventType_EVENT_TYPE_UPSERTED, Revision: rev, Cluster: &csv1.Cluster{Id: id, Revision: rev}}
}

func bookmark(rev int64) *csv1.ClusterEvent {
	return &csv1.ClusterEvent{Type: csv1.EventType_EVENT_TYPE_BOOKMARK, Revision: rev}
}

// A snapshot that breaks before its BOOKMARK is thrown away, so the next stream must start a
// snapshot again (since 0), not resume after the revisions the broken one happened to carry:
// resuming there would skip every cluster the snapshot had not reached yet, and after a
// re-snapshot (OutOfRange) would keep the old map and its deleted clusters.
func TestABrokenSnapshotIsGatheredAgainFromTheStart(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "Cluster Service restarted")
	tests := []struct {
		name     string
		since    int64
		stream   *scriptedStream
		wantNext int64
	}{
		{
			name:     "a snapshot broken before its bookmark resumes from zero",
			since:    0,
			stream:   &scriptedStream{events: []*csv1.ClusterEvent{upserted("y", 20)}, err: unavailable},
			wantNext: 0,
		},
		{
			name:     "a complete snapshot resumes after its bookmark",
			since:    0,
			stream:   &scriptedStream{events: []*csv1.ClusterEvent{upserted("y", 20), bookmark(21)}, err: unavailable},
			wantNext: 21,
		},
		{
			name:     "a resumed stream resumes after the last change it carried",
			since:    21,
			stream:   &scriptedStream{events: []*csv1.ClusterEvent{upserted("z", 25)}, err: unavailable},
			wantNext: 25,
		},
		{
			name:     "a bookmark below the resume point starts a snapshot again",
			since:    21,
			stream:   &scriptedStream{events: []*csv1.ClusterEvent{bookmark(10)}, err: unavailable},
			wantNext: 0,
		},
		{
			name:     "a change below the last revision seen starts a snapshot again",
			since:    21,
			stream:   &scriptedStream{events: []*csv1.ClusterEvent{upserted("z", 25), bookmark(25), upserted("y", 12)}, err: unavailable},
			wantNext: 0,
		},
		{
			name:     "out of range starts a snapshot again",
			since:    21,
			stream:   &scriptedStream{err: status.Error(codes.OutOfRange, "compacted")},
			wantNext: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			_, next, _ := c.follow(context.Background(), func(context.Context, int64) (Stream, error) { return tc.stream, nil }, tc.since)
			if next != tc.wantNext {
				t.Fatalf("next stream from %d, want %d", next, tc.wantNext)
			}
		})
	}
}

// After an OutOfRange, the cache must not answer from its old map once a partial snapshot's
// revisions are followed by a later bookmark: X (only in the old map) must miss.
func TestAPartialSnapshotNeverRevivesTheOldMap(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "Cluster Service restarted")
	c := New()
	streams := []*scriptedStream{
		{events: []*csv1.ClusterEvent{upserted("x", 5), bookmark(5)}, err: unavailable},
		{err: status.Error(codes.OutOfRange, "compacted")},
		{events: []*csv1.ClusterEvent{upserted("y", 20)}, err: unavailable},
	}
	since := int64(0)
	var opened []int64
	for _, s := range streams {
		opened = append(opened, since)
		_, since, _ = c.follow(context.Background(), func(context.Context, int64) (Stream, error) { return s, nil }, since)
	}
	if since != 0 {
		t.Fatalf("after a broken re-snapshot the next stream starts from %d, want 0 (streams opened from %v)", since, opened)
	}
	// The next stream is the snapshot again; it completes with y only.
	_, _, _ = c.follow(context.Background(), func(context.Context, int64) (Stream, error) {
		return &scriptedStream{events: []*csv1.ClusterEvent{upserted("y", 20), bookmark(20)}, err: unavailable}, nil
	}, since)
	c.mu.Lock()
	c.synced = true // follow's deferred setUnsynced ran as the scripted stream ended; look at the map
	c.mu.Unlock()
	if _, ok := c.Get("x", 0); ok {
		t.Fatal("x, absent from the new snapshot, is still answered from the old map")
	}
	if cl, ok := c.Get("y", 0); !ok || cl.GetRevision() != 20 {
		t.Fatalf("y = %v, %v; want revision 20", cl, ok)
	}
}

// A resumed stream whose revisions go backwards comes from a history that restarted (the
// database restored, a replica promoted): what the cache holds may be gone from it, so the
// cache must not be vouched for by that stream's BOOKMARK.
func TestRevisionsGoingBackwardsNeverSyncTheCache(t *testing.T) {
	c := New()
	var synced []bool
	stream := &recordingStream{scriptedStream: scriptedStream{events: []*csv1.ClusterEvent{upserted("x", 30), bookmark(30), bookmark(10), upserted("y", 11), bookmark(11)},
		err: status.Error(codes.Unavailable, "gone")}, c: c, synced: &synced}
	_, _, err := c.follow(context.Background(), func(context.Context, int64) (Stream, error) { return stream, nil }, 21)
	if !errors.Is(err, errHistoryRestarted) {
		t.Fatalf("follow ended with %v, want %v", err, errHistoryRestarted)
	}
	// Each element is whether the cache was synced before one Recv: after bookmark(30) it is,
	// after bookmark(10) it must not be, nor later.
	for i, s := range synced {
		if i > 2 && s {
			t.Fatalf("synced before receive %d (after revisions went backwards): %v", i, synced)
		}
	}
	if _, ok := c.clusters["y"]; ok {
		t.Fatal("a change after revisions went backwards was applied")
	}
}

// recordingStream is a scriptedStream that records, before each Recv, whether c is synced.
type recordingStream struct {
	scriptedStream
	c      *Cache
	synced *[]bool
}

func (s *recordingStream) Recv() (*csv1.ClusterEvent, error) {
	s.c.mu.RLock()
	*s.synced = append(*s.synced, s.c.synced)
	s.c.mu.RUnlock()
	return s.scriptedStream.Recv()
}

func deleted(id string, rev int64) *csv1.ClusterEvent {
	return &csv1.ClusterEvent{Type: csv1.EventType_EVENT_TYPE_DELETED, Revision: rev, Cluster: &csv1.Cluster{Id: id, Revision: rev}}
}

// What a caller keeps about a cluster (OnRemoved) goes when Cluster Service removes it: on its
// DELETED event, or when a new snapshot no longer has it.
func TestRemovedClustersAreTold(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "gone")
	c := New()
	var told []string
	c.OnRemoved(func(id string) { told = append(told, id) })
	streams := []struct {
		since  int64
		events []*csv1.ClusterEvent
		want   string
	}{
		{since: 0, events: []*csv1.ClusterEvent{upserted("a", 1), upserted("b", 2), upserted("c", 3), bookmark(3)}, want: ""},
		{since: 3, events: []*csv1.ClusterEvent{deleted("a", 4), bookmark(4)}, want: "a"},
		// A re-snapshot (after OutOfRange) without c: c was removed meanwhile.
		{since: 0, events: []*csv1.ClusterEvent{upserted("b", 5), bookmark(6)}, want: "a,c"},
	}
	for _, s := range streams {
		stream := &scriptedStream{events: s.events, err: unavailable}
		_, _, _ = c.follow(context.Background(), func(context.Context, int64) (Stream, error) { return stream, nil }, s.since)
		if got := strings.Join(told, ","); got != s.want {
			t.Fatalf("after the stream from %d: told %q, want %q", s.since, got, s.want)
		}
	}
}
