package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/cluster-service/pkg/authz"
)

// Every Watch RPC (clusters, node pools, external auths, break-glass credentials) streams one
// event log of the store the same way: a snapshot or a replay after since_revision, a BOOKMARK,
// then live changes woken by the store's change feed, with BOOKMARK keep-alives, until the
// client leaves or the server drains. serveWatch is that loop; a watchLog says how to read one
// kind's log and how to frame its messages.

// watchPage is how many events one read of an event log returns at most.
const watchPage = 500

// watchEvent is a watch stream's message (csv1.ClusterEvent, csv1.NodePoolEvent, …).
type watchEvent interface{ GetRevision() int64 }

// watchStream is the server side of a watch RPC (grpc.ServerStreamingServer[E] with M = *E).
type watchStream[M any] interface {
	Send(M) error
	Context() context.Context
}

// watchLog is one kind's event log as serveWatch reads it.
type watchLog[M watchEvent] struct {
	// snapshot returns every object as an UPSERTED message and the revision the read is
	// consistent with. Nil for a log that keeps every object's latest event and never prunes
	// one, so that a replay from 0 is the snapshot and no revision is out of range.
	snapshot func(ctx context.Context) ([]M, int64, error)
	// eventsAfter returns up to limit messages with a revision greater than after, in order.
	eventsAfter func(ctx context.Context, after int64, limit int) ([]M, error)
	// compacted is the newest revision whose tombstone may have been pruned (nil with snapshot).
	compacted func(ctx context.Context) (int64, error)
	// current is the revision of the log's latest event (0 for an empty log). With compacted it
	// bounds every revision the log has issued, which a resume point must not pass.
	current func(ctx context.Context) (int64, error)
	// bookmark is the BOOKMARK message at rev.
	bookmark func(rev int64) M
	// changes subscribes to the commits to this log (store.Store.Changes and its kin), so a
	// stream is not woken by writes to other logs.
	changes func() (<-chan struct{}, func())

	// The operations named in errors: of the snapshot, of the compaction check, of reading
	// events; and the history named by OutOfRange ("node pool event history").
	snapshotOp, compactedOp, eventsOp, history string
}

// serveWatch runs one watch RPC from since over l until the client leaves (nil), the stream
// breaks, or the server drains (Unavailable). since < 0 is InvalidArgument; a since older than
// the compacted revision is OutOfRange, after the replay, so a compaction that raced with the
// read is seen. A since beyond every revision the log issued is OutOfRange before anything is
// sent, and a live stream whose log falls below what it sent ends with OutOfRange at its next
// keep-alive: the database was restored from a backup or a replica promoted, its revisions
// restarted lower, and a client that kept what it saw would answer from it forever.
func serveWatch[M watchEvent](s *Server, since int64, stream watchStream[M], l watchLog[M]) error {
	ctx := stream.Context()
	if since < 0 {
		var v violations
		v.add("since_revision", "must not be negative")
		return v.err()
	}
	caller, ok := authz.Caller(ctx)
	if !ok {
		caller = unidentifiedCaller
	}
	release, err := s.watches.acquire(caller)
	if err != nil {
		return err
	}
	defer release()
	// Subscribe before reading, so a change committed between the read and the wait still wakes us.
	changes, stop := l.changes()
	defer stop()

	if since > 0 {
		if err := l.checkIssued(ctx, s, since); err != nil {
			return err
		}
	}
	after := since
	if after == 0 && l.snapshot != nil {
		objs, rev, err := l.snapshot(ctx)
		if err != nil {
			return s.toStatus(ctx, l.snapshotOp, err)
		}
		for _, m := range objs {
			if err := stream.Send(m); err != nil {
				return err
			}
		}
		after = rev
	} else {
		var err error
		if after, err = l.sendAfter(ctx, s, stream, after); err != nil {
			return err
		}
		if l.compacted != nil {
			compacted, err := l.compacted(ctx)
			if err != nil {
				return s.toStatus(ctx, l.compactedOp, err)
			}
			if since < compacted {
				return status.Errorf(codes.OutOfRange, "revision %d is older than the %s (compacted at %d): watch again from 0", since, l.history, compacted)
			}
		}
	}
	if err := stream.Send(l.bookmark(after)); err != nil {
		return err
	}
	LoggerFrom(ctx).Debug("watch caught up", "revision", after, "since_revision", since)

	keepAlive := time.NewTicker(s.cfg.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.draining:
			return status.Error(codes.Unavailable, "server is shutting down; reconnect with since_revision")
		case <-keepAlive.C:
			// Also re-read, in case a notification was lost while the listener reconnected.
			var err error
			if after, err = l.sendAfter(ctx, s, stream, after); err != nil {
				return err
			}
			if err := l.checkIssued(ctx, s, after); err != nil {
				return err
			}
			if err := stream.Send(l.bookmark(after)); err != nil {
				return err
			}
		case <-changes:
			var err error
			if after, err = l.sendAfter(ctx, s, stream, after); err != nil {
				return err
			}
		}
	}
}

// checkIssued is OutOfRange when rev, a revision a client saw, is beyond every revision l has
// issued: the latest event's, or a pruned tombstone's (a client may have seen the newest event
// before it was pruned).
func (l watchLog[M]) checkIssued(ctx context.Context, s *Server, rev int64) error {
	newest, err := l.current(ctx)
	if err != nil {
		return s.toStatus(ctx, l.eventsOp, err)
	}
	if rev <= newest {
		return nil
	}
	if l.compacted != nil {
		compacted, err := l.compacted(ctx)
		if err != nil {
			return s.toStatus(ctx, l.compactedOp, err)
		}
		if newest = max(newest, compacted); rev <= newest {
			return nil
		}
	}
	return status.Errorf(codes.OutOfRange, "revision %d is beyond the newest this store issued (%d): its history restarted (restored from a backup or a replica promoted); watch again from 0", rev, newest)
}

// sendAfter sends every event after `after` and returns the revision of the last one sent.
func (l watchLog[M]) sendAfter(ctx context.Context, s *Server, stream watchStream[M], after int64) (int64, error) {
	for {
		evs, err := l.eventsAfter(ctx, after, watchPage)
		if err != nil {
			return after, s.toStatus(ctx, l.eventsOp, err)
		}
		for _, ev := range evs {
			if err := stream.Send(ev); err != nil {
				return after, err
			}
			after = ev.GetRevision()
		}
		if len(evs) < watchPage {
			return after, nil
		}
	}
}

// messages converts what the store read (objects of a snapshot, events) into stream messages.
func messages[T, M any](in []T, msg func(T) M) []M {
	out := make([]M, len(in))
	for i, v := range in {
		out[i] = msg(v)
	}
	return out
}
