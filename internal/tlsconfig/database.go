package tlsconfig

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// RequireDatabaseTLS fails unless every host a PostgreSQL DSN may connect to is reached over
// verified TLS (sslmode=verify-full, or verify-ca / require with sslrootcert) or is loopback or
// a Unix socket. sslmode=prefer (libpq's default), allow, require without a root certificate
// and disable would send the password and every row in the clear, or to whoever answers.
// Errors never repeat the DSN, which may hold a password.
func RequireDatabaseTLS(dsn string) error {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parse database DSN: %w", redact(err, dsn))
	}
	targets := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	for _, t := range targets {
		if strings.HasPrefix(t.Host, "/") || RequireLoopback(t.Host) == nil {
			continue
		}
		if t.TLSConfig == nil || (t.TLSConfig.InsecureSkipVerify && t.TLSConfig.VerifyPeerCertificate == nil) {
			return fmt.Errorf("database host %s is not loopback and the DSN does not make a verified TLS connection to it: use sslmode=verify-full with sslrootcert", t.Host)
		}
	}
	return nil
}

// redact keeps a DSN out of an error message (pgconn's parse errors quote it).
func redact(err error, dsn string) error {
	if dsn == "" || !strings.Contains(err.Error(), dsn) {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), dsn, "<dsn>"))
}
