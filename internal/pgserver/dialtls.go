package pgserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"
)

// sslRequest is PostgreSQL's SSLRequest message: length 8, code 80877103. PostgreSQL and
// PgBouncer answer 'S' and then speak TLS on the same connection, or 'N'.
var sslRequest = []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}

// DialTLS connects to the PostgreSQL-protocol server (PostgreSQL or PgBouncer) at addr, asks
// for TLS with an SSLRequest and completes the handshake with cfg, which decides what is
// verified. It is the one place the region's probes speak this opening (a client of the
// database uses pgx). Everything ends when ctx does.
func DialTLS(ctx context.Context, addr string, cfg *tls.Config) (*tls.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial PostgreSQL at %s: %w", addr, err)
	}
	// The SSLRequest exchange is plain reads and writes: an ended ctx cuts them short.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	tc, err := startTLS(ctx, conn, cfg)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("TLS to PostgreSQL at %s: %w", addr, err)
	}
	return tc, nil
}

func startTLS(ctx context.Context, conn net.Conn, cfg *tls.Config) (*tls.Conn, error) {
	if _, err := conn.Write(sslRequest); err != nil {
		return nil, fmt.Errorf("send SSLRequest: %w", err)
	}
	answer := make([]byte, 1)
	if _, err := io.ReadFull(conn, answer); err != nil {
		return nil, fmt.Errorf("read the answer to SSLRequest: %w", err)
	}
	if answer[0] != 'S' {
		return nil, fmt.Errorf("the server answered SSLRequest with %q, not 'S' (no TLS)", answer)
	}
	// The TLS client reads from conn itself, so nothing the server sent after 'S' and before
	// its handshake can be taken as an answer from inside the encrypted session.
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}
