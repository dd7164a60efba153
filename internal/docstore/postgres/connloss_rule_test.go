package postgres_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// notSent is an error pgx would mark as raised before anything reached the server.
type notSent struct{}

func (notSent) Error() string     { return "conn closed before sending" }
func (notSent) SafeToRetry() bool { return true }

func TestConnLossRetry(t *testing.T) {
	terminated := &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		read  bool
		err   error
		calls int
	}{
		{"read_on_a_terminated_connection_runs_again", context.Background(), true, terminated, 2},
		{"read_whose_connection_closed_mid_answer_runs_again", context.Background(), true, io.ErrUnexpectedEOF, 2},
		{"write_on_a_terminated_connection_is_not_run_again", context.Background(), false, terminated, 1},
		{"write_that_sent_nothing_runs_again", context.Background(), false, notSent{}, 2},
		{"read_with_its_context_cancelled_is_not_run_again", cancelled, true, terminated, 1},
		{"read_that_failed_for_another_reason_is_not_run_again", context.Background(), true, errors.New("syntax error"), 1},
		{"call_that_succeeded_runs_once", context.Background(), true, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var loss postgres.ConnLoss
			calls := 0
			err := loss.Retry(tc.ctx, tc.read, func() error {
				calls++
				if calls == 1 {
					return tc.err
				}
				return nil
			})
			if calls != tc.calls {
				t.Fatalf("ran %d times, want %d", calls, tc.calls)
			}
			if wantErr := tc.calls == 1 && tc.err != nil; (err != nil) != wantErr {
				t.Fatalf("error %v, want an error: %v", err, wantErr)
			}
		})
	}
}
