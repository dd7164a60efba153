package maestro

import (
	"context"
	"fmt"
	"log/slog"
	"os"
)

// slogAdapter is the ocm-sdk-go logging.Logger that grpcsource wants, writing to slog.
type slogAdapter struct{ log *slog.Logger }

func (a *slogAdapter) DebugEnabled() bool {
	return a.log.Enabled(context.Background(), slog.LevelDebug)
}

// grpcsource logs every event it filters at info; that is debug detail for Cluster Service.
func (a *slogAdapter) InfoEnabled() bool { return a.DebugEnabled() }
func (a *slogAdapter) WarnEnabled() bool { return a.log.Enabled(context.Background(), slog.LevelWarn) }
func (a *slogAdapter) ErrorEnabled() bool {
	return a.log.Enabled(context.Background(), slog.LevelError)
}

func (a *slogAdapter) logf(ctx context.Context, level slog.Level, format string, args ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	if a.log.Enabled(ctx, level) {
		a.log.Log(ctx, level, fmt.Sprintf(format, args...), "component", "maestro-grpcsource")
	}
}

func (a *slogAdapter) Debug(ctx context.Context, format string, args ...any) {
	a.logf(ctx, slog.LevelDebug, format, args...)
}
func (a *slogAdapter) Info(ctx context.Context, format string, args ...any) {
	a.logf(ctx, slog.LevelDebug, format, args...)
}
func (a *slogAdapter) Warn(ctx context.Context, format string, args ...any) {
	a.logf(ctx, slog.LevelWarn, format, args...)
}
func (a *slogAdapter) Error(ctx context.Context, format string, args ...any) {
	a.logf(ctx, slog.LevelError, format, args...)
}

// Fatal is part of the interface; grpcsource does not call it. Exiting is what it promises.
func (a *slogAdapter) Fatal(ctx context.Context, format string, args ...any) {
	a.logf(ctx, slog.LevelError, format, args...)
	os.Exit(1)
}

// demoteInfo turns sdk-go's per-event info lines ("publishing event", …) into debug ones;
// warnings and errors keep their level.
type demoteInfo struct{ slog.Handler }

func (d demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return d.Handler.Enabled(ctx, demote(l))
}

func (d demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return d.Handler.Handle(ctx, r)
}

func (d demoteInfo) WithAttrs(as []slog.Attr) slog.Handler {
	return demoteInfo{d.Handler.WithAttrs(as)}
}

func (d demoteInfo) WithGroup(name string) slog.Handler { return demoteInfo{d.Handler.WithGroup(name)} }

func demote(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}
