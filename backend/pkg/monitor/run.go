package monitor

import (
	"context"
	"log/slog"
	"time"
)

// Run shares the fleet with the other replicas (sh) and runs a check pass every interval until
// ctx ends; on the way out the Sharer releases its buckets so the others take them at once.
func Run(ctx context.Context, sh *Sharer, c *Checker, interval time.Duration, log *slog.Logger) {
	done := make(chan struct{})
	go func() { defer close(done); sh.Run(ctx) }()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			log.Warn("monitor check pass", "error", err)
		}
		select {
		case <-ctx.Done():
			<-done
			return
		case <-t.C:
		}
	}
}
