package postgres

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey keeps two replicas starting at once from applying the same migration twice.
const migrationLockKey int64 = 0x6f70656e68637000

// Migrate applies the document store's embedded migrations (pgmigrate.Run).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgmigrate.Run(ctx, pool, migrationFiles, "migrations", migrationLockKey, "document store")
}
