package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// statementLog counts the statements a store sends (pgx's tracer: every query, exec and
// batched query, BEGIN and COMMIT included), apart for the writer and for the readers of the
// change feeds (a context marked with readerKey).
type statementLog struct {
	writer, reader atomic.Int64
	mu             sync.Mutex
	record         bool
	seen           []string // the writer's statements while record is set
}

type readerKey struct{}

func (l *statementLog) add(ctx context.Context, sql string) {
	if ctx.Value(readerKey{}) != nil {
		l.reader.Add(1)
		return
	}
	l.writer.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.record {
		first, _, _ := strings.Cut(strings.TrimSpace(sql), "\n")
		l.seen = append(l.seen, first)
	}
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(ctx, d.SQL)
	return ctx
}
func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (l *statementLog) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.add(ctx, d.SQL)
}
func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// feedReader is one reader of the change feeds as the region has them: woken by its feed(s),
// it reads its log after the last revision it saw.
type feedReader struct {
	read  func(ctx context.Context, after int64) (int64, error)
	feeds []<-chan struct{}
}

// BenchmarkStatementsPerWrite counts the SQL statements of a create and its first status write
// (the two writes of a create's request path), the writer's and those of the readers the
// change feeds wake, with the readers one Cluster Service and two backend replicas have: the
// cluster controller (clusters, node pools, external auths), the break-glass controller, and per
// backend replica one Watch stream of each of the four logs. "one_feed_for_every_log" wakes
// every reader on every write, the rule before 2026-11-26; "per_log_feeds" wakes only the
// readers of the log written. Reported per create (cluster + status write):
// writer-stmts/op, reader-stmts/op.
// Run: cd cluster-service && go test ./pkg/store -run '^$' -bench StatementsPerWrite -benchtime 50x
func BenchmarkStatementsPerWrite(b *testing.B) {
	for _, mode := range []struct {
		name     string
		everyLog bool
	}{{"per_log_feeds", false}, {"one_feed_for_every_log", true}} {
		b.Run(mode.name, func(b *testing.B) {
			stmts := &statementLog{}
			cfg, err := pgxpool.ParseConfig(pgservertest.NewDatabase(b, pgservertest.Start(b)))
			if err != nil {
				b.Fatal(err)
			}
			cfg.ConnConfig.Tracer = stmts
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := openConfig(ctx, cfg, slog.New(slog.DiscardHandler), envelopetest.Keyring(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.RegisterShard(ctx, placement.Shard{Name: "mc-1", MaxClusters: 1 << 30}); err != nil {
				b.Fatal(err)
			}

			var lastCluster atomic.Int64 // the newest cluster revision any cluster reader has read
			readers := regionReaders(s, mode.everyLog, &lastCluster)
			rctx := context.WithValue(ctx, readerKey{}, true)
			var wg sync.WaitGroup
			for _, r := range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r.run(rctx)
				}()
			}
			defer wg.Wait()
			defer cancel()
			time.Sleep(time.Second) // the listener's wake-up on connect, and the readers' first reads
			w0, r0 := stmts.writer.Load(), stmts.reader.Load()

			b.ResetTimer()
			var last int64
			for i := range b.N {
				stmts.mu.Lock()
				stmts.record = i == 0
				stmts.mu.Unlock()
				c, _, err := s.CreateCluster(ctx, newCluster(fmt.Sprintf("%032d", i+1), armID(fmt.Sprint("stmt", i))), placement.LeastLoaded{})
				if err != nil {
					b.Fatal(err)
				}
				if c, err = s.UpdateStatus(ctx, c.ID, c.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING}); err != nil {
					b.Fatal(err)
				}
				last = c.Revision
			}
			// The readers have caught up once a cluster reader has read the last write, and no
			// reader has read anything for a second since.
			deadline := time.Now().Add(2 * time.Minute)
			for lastCluster.Load() < last && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			for prev := int64(-1); prev != stmts.reader.Load() && time.Now().Before(deadline); {
				prev = stmts.reader.Load()
				time.Sleep(time.Second)
			}
			b.StopTimer()
			b.ReportMetric(float64(stmts.writer.Load()-w0)/float64(b.N), "writer-stmts/op")
			b.ReportMetric(float64(stmts.reader.Load()-r0)/float64(b.N), "reader-stmts/op")
			stmts.mu.Lock()
			b.Logf("%s: the statements of the first create and status write, in order:\n  %s", mode.name, strings.Join(stmts.seen, "\n  "))
			stmts.mu.Unlock()
		})
	}
}

// regionReaders are the change-feed readers of one Cluster Service and two backend replicas.
// With everyLog, each is woken by every log's feed (the rule before 2026-11-26).
func regionReaders(s *Store, everyLog bool, lastCluster *atomic.Int64) []*feedReader {
	all := func() []<-chan struct{} {
		var out []<-chan struct{}
		for _, sub := range []func() (<-chan struct{}, func()){s.Changes, s.NodePools().Changes, s.ExternalAuths().Changes, s.CredentialChanges} {
			ch, _ := sub() // stopped with the store
			out = append(out, ch)
		}
		return out
	}
	feed := func(sub func() (<-chan struct{}, func())) []<-chan struct{} {
		if everyLog {
			return all()
		}
		ch, _ := sub()
		return []<-chan struct{}{ch}
	}
	clusters := func(ctx context.Context, after int64) (int64, error) {
		evs, err := s.EventsAfter(ctx, after, 500)
		for _, ev := range evs {
			after = ev.Revision
		}
		for cur := lastCluster.Load(); after > cur && !lastCluster.CompareAndSwap(cur, after); cur = lastCluster.Load() {
		}
		return after, err
	}
	pools := func(ctx context.Context, after int64) (int64, error) {
		evs, err := s.NodePools().EventsAfter(ctx, after, 500)
		for _, ev := range evs {
			after = ev.Revision
		}
		return after, err
	}
	auths := func(ctx context.Context, after int64) (int64, error) {
		evs, err := s.ExternalAuths().EventsAfter(ctx, after, 500)
		for _, ev := range evs {
			after = ev.Revision
		}
		return after, err
	}
	creds := func(ctx context.Context, after int64) (int64, error) {
		evs, err := s.CredentialEventsAfter(ctx, after, 500)
		for _, ev := range evs {
			after = ev.Revision
		}
		return after, err
	}
	var out []*feedReader
	if everyLog {
		// The controller followed its three logs on one feed.
		out = append(out, &feedReader{feeds: all(), read: func(ctx context.Context, after int64) (int64, error) {
			return readAll(ctx, after, clusters, pools, auths)
		}})
	} else {
		out = append(out, &feedReader{feeds: feed(s.Changes), read: clusters},
			&feedReader{feeds: feed(s.NodePools().Changes), read: pools},
			&feedReader{feeds: feed(s.ExternalAuths().Changes), read: auths})
	}
	out = append(out, &feedReader{feeds: feed(s.CredentialChanges), read: creds})
	for range 2 { // backend replicas
		out = append(out, &feedReader{feeds: feed(s.Changes), read: clusters},
			&feedReader{feeds: feed(s.NodePools().Changes), read: pools},
			&feedReader{feeds: feed(s.ExternalAuths().Changes), read: auths},
			&feedReader{feeds: feed(s.CredentialChanges), read: creds})
	}
	return out
}

// readAll reads several logs from one position each, as the controller did on one feed; it
// keeps one position for all, which is enough for counting reads.
func readAll(ctx context.Context, after int64, reads ...func(context.Context, int64) (int64, error)) (int64, error) {
	newest := after
	for _, r := range reads {
		rev, err := r(ctx, after)
		if err != nil {
			return after, err
		}
		newest = max(newest, rev)
	}
	return newest, nil
}

// run reads the log once at start and then on every wake-up of any of its feeds until ctx ends.
func (r *feedReader) run(ctx context.Context) {
	woke := make(chan struct{}, 1)
	for _, f := range r.feeds {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-f:
					select {
					case woke <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	var after int64
	for {
		next, err := r.read(ctx, after)
		if err != nil {
			return
		}
		after = next
		select {
		case <-ctx.Done():
			return
		case <-woke:
		}
	}
}
