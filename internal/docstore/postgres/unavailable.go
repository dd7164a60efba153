package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openhcp/openhcp/internal/docstore"
)

// markUnavailable wraps *err in docstore.ErrUnavailable when it says the database could not be
// reached: a connection refused, lost or timed out, or a server shutting down or starting up
// (SQLSTATE class 08 and 57P01-57P03). Such a call may succeed later; any other error stays
// as it is.
func markUnavailable(err *error) {
	if *err == nil || errors.Is(*err, docstore.ErrUnavailable) || !Unreachable(*err) {
		return
	}
	*err = fmt.Errorf("%w: %w", docstore.ErrUnavailable, *err)
}

// Unreachable says whether err means PostgreSQL could not be reached (markUnavailable's rule),
// for any user of pgx: Cluster Service's store answers such an error Unavailable too.
func Unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08", pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03":
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.Timeout(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || pgconn.SafeToRetry(err)
}
