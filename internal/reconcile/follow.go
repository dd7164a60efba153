package reconcile

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/internal/backoff"
)

// Event is one message of a revisioned watch (Cluster Service's ClusterEvent, NodePoolEvent, …).
type Event interface{ GetRevision() int64 }

// Stream is the client side of a watch (grpc.ServerStreamingClient[E], with M = *E).
type Stream[M any] interface{ Recv() (M, error) }

// Follow follows a watch until ctx ends, calling onEvent with every message in order. A watch
// that ends or breaks is opened again from the highest revision seen, after a jittered delay of
// 500ms doubling to 10s (back to 500ms once a message arrives; internal/backoff). A watch
// refused with OutOfRange (the revision was compacted away) starts over from 0, a snapshot;
// whoever follows it must treat events as level-triggered hints, as a periodic resync covers
// anything in between. what names the watch in log lines; a plain end of stream (io.EOF) is not
// logged.
func Follow[M Event](ctx context.Context, log *slog.Logger, what string,
	watch func(ctx context.Context, since int64) (Stream[M], error), onEvent func(M)) {
	var since int64
	// once follows one watch; it reports whether a message arrived.
	once := func(ctx context.Context) (bool, error) {
		stream, err := watch(ctx, since)
		if err != nil {
			return false, err
		}
		for received := false; ; received = true {
			ev, err := stream.Recv()
			if err != nil {
				return received, err
			}
			since = max(since, ev.GetRevision())
			onEvent(ev)
		}
	}
	backoff.Reconnect(ctx, backoff.Policy{Initial: 500 * time.Millisecond, Max: 10 * time.Second}, func(ctx context.Context) (bool, error) {
		received, err := once(ctx)
		if status.Code(err) == codes.OutOfRange {
			since = 0
		}
		return received, err
	}, func(err error, wait time.Duration) {
		if !errors.Is(err, io.EOF) {
			log.Warn(what+" watch broken; reconnecting", "since", since, "error", err, "backoff", wait)
		}
	})
}
