package reconcile

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Event is one message of a revisioned watch (Cluster Service's ClusterEvent, NodePoolEvent, …).
type Event interface{ GetRevision() int64 }

// Stream is the client side of a watch (grpc.ServerStreamingClient[E], with M = *E).
type Stream[M any] interface{ Recv() (M, error) }

// Reconnect delays of Follow: the first after a broken watch, and the most it grows to.
const (
	followBackoffBase = 500 * time.Millisecond
	followBackoffMax  = 10 * time.Second
)

// Follow follows a watch until ctx ends, calling onEvent with every message in order. A watch
// that ends or breaks is opened again from the highest revision seen, after a delay of 500ms
// doubling to 10s (back to 500ms once a message arrives). A watch refused with OutOfRange (the
// revision was compacted away) starts over from 0, a snapshot; whoever follows it must treat
// events as level-triggered hints, as a periodic resync covers anything in between. what names
// the watch in log lines; a plain end of stream (io.EOF) is not logged.
func Follow[M Event](ctx context.Context, log *slog.Logger, what string,
	watch func(ctx context.Context, since int64) (Stream[M], error), onEvent func(M)) {
	var since int64
	backoff := followBackoffBase
	for ctx.Err() == nil {
		stream, err := watch(ctx, since)
		if err == nil {
			for {
				ev, rerr := stream.Recv()
				if rerr != nil {
					err = rerr
					break
				}
				backoff = followBackoffBase
				since = max(since, ev.GetRevision())
				onEvent(ev)
			}
		}
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.OutOfRange {
			since = 0
		}
		if !errors.Is(err, io.EOF) {
			log.Warn(what+" watch broken; reconnecting", "since", since, "error", err, "backoff", backoff)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, followBackoffMax)
	}
}
