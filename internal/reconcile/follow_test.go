package reconcile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeEvent is a watch message carrying only its revision.
type fakeEvent int64

func (e fakeEvent) GetRevision() int64 { return int64(e) }

// fakeStream is a fake watch stream: it hands out its events, then ends with err.
type fakeStream struct {
	events []fakeEvent
	err    error
}

func (s *fakeStream) Recv() (fakeEvent, error) {
	if len(s.events) == 0 {
		return 0, s.err
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

// connection is one scripted watch call: the call fails with openErr, or streams events and
// then ends with endErr.
type connection struct {
	openErr error
	events  []fakeEvent
	endErr  error
}

func TestFollow(t *testing.T) {
	compacted := status.Error(codes.OutOfRange, "revision 7 is compacted")
	broken := status.Error(codes.Unavailable, "connection reset")
	tests := []struct {
		name        string
		connections []connection
		wantSince   []int64 // the since of each watch call
		wantEvents  []fakeEvent
		wantLogged  int // "watch broken" log lines
	}{
		{
			name: "reconnects_after_eof_from_the_highest_revision_seen",
			connections: []connection{
				{events: []fakeEvent{3, 5, 4}, endErr: io.EOF},
				{events: []fakeEvent{6}, endErr: io.EOF},
			},
			wantSince:  []int64{0, 5, 6},
			wantEvents: []fakeEvent{3, 5, 4, 6},
		},
		{
			name: "broken_stream_and_failed_open_are_logged_and_keep_the_revision",
			connections: []connection{
				{events: []fakeEvent{2}, endErr: broken},
				{openErr: broken},
			},
			wantSince:  []int64{0, 2, 2},
			wantEvents: []fakeEvent{2},
			wantLogged: 2,
		},
		{
			name: "out_of_range_starts_over_from_zero",
			connections: []connection{
				{events: []fakeEvent{7}, endErr: io.EOF},
				{openErr: compacted},
				{events: []fakeEvent{9}, endErr: compacted},
			},
			wantSince:  []int64{0, 7, 0, 0},
			wantEvents: []fakeEvent{7, 9},
			wantLogged: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			var (
				mu     sync.Mutex
				since  []int64
				events []fakeEvent
			)
			done := make(chan struct{})
			go func() {
				defer close(done)
				Follow(ctx, log, "thing", func(ctx context.Context, s int64) (Stream[fakeEvent], error) {
					mu.Lock()
					defer mu.Unlock()
					since = append(since, s)
					n := len(since) - 1
					if n >= len(tt.connections) {
						cancel() // the script is played: stop, as a caller's ctx would
						return nil, ctx.Err()
					}
					c := tt.connections[n]
					if c.openErr != nil {
						return nil, c.openErr
					}
					return &fakeStream{events: slices.Clone(c.events), err: c.endErr}, nil
				}, func(ev fakeEvent) {
					mu.Lock()
					events = append(events, ev)
					mu.Unlock()
				})
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Follow did not return after its context ended")
			}
			if !slices.Equal(since, tt.wantSince) {
				t.Errorf("watched since %v, want %v", since, tt.wantSince)
			}
			if !slices.Equal(events, tt.wantEvents) {
				t.Errorf("events %v, want %v", events, tt.wantEvents)
			}
			if n := strings.Count(logs.String(), "thing watch broken"); n != tt.wantLogged {
				t.Errorf("%d broken-watch log lines, want %d:\n%s", n, tt.wantLogged, logs.String())
			}
		})
	}
}

func TestFollowStopsWhileWaitingToReconnect(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Follow(ctx, slog.New(slog.DiscardHandler), "thing", func(context.Context, int64) (Stream[fakeEvent], error) {
			calls++
			return nil, errors.New("refused")
		}, func(fakeEvent) {})
	}()
	time.Sleep(100 * time.Millisecond) // inside the first 500ms backoff
	cancel()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Follow kept waiting after its context ended")
	}
	if calls != 1 {
		t.Fatalf("watch called %d times, want 1", calls)
	}
}
