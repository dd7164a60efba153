package store

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLockKey is the session advisory lock that serialises migrations between processes
// starting at the same time.
const migrationLockKey int64 = 0x0cb5_0001

// Migrate applies Cluster Service's embedded migrations (pgmigrate.Run).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgmigrate.Run(ctx, pool, migrationFS, "migrations", migrationLockKey, "cluster service store")
}

func migrations() ([]pgmigrate.Migration, error) { return pgmigrate.Load(migrationFS, "migrations") }
