package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The admin API's login is the one login outside the store's owner group. It reads every
// document, updates the customers' resource documents for SRE day-2 changes, and inserts one
// kind of document: a pending maintenance request, which the maintenance service (an owner)
// carries out. Row-level security (migration 0003) confines its writes to those rows; these
// grants are the rest of it, written once here for every launcher.
const (
	// MaintenanceRequestPartition and MaintenanceRequestType are the only partition and type a
	// non-owner may insert (migration 0003 names them too).
	MaintenanceRequestPartition = "openhcp-maintenance-requests"
	MaintenanceRequestType      = "maintenance-request"
)

// GrantAdminLogin gives role, on the store's database (conn is a superuser's or the owner's
// connection to it), exactly the admin API's privileges: read everything, update the columns a
// replace writes, insert documents (confined by row-level security to pending maintenance
// requests), draw write positions from the feed sequence. owner is the role that owns the
// store's tables, whose later tables role may read too.
func GrantAdminLogin(ctx context.Context, conn *pgx.Conn, database, owner, role string) error {
	r, db, o := pgx.Identifier{role}.Sanitize(), pgx.Identifier{database}.Sanitize(), pgx.Identifier{owner}.Sanitize()
	for _, q := range []string{
		"GRANT CONNECT ON DATABASE " + db + " TO " + r,
		"GRANT USAGE ON SCHEMA public TO " + r,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + r,
		// Tables a later migration adds are readable too.
		"ALTER DEFAULT PRIVILEGES FOR ROLE " + o + " IN SCHEMA public GRANT SELECT ON TABLES TO " + r,
		// SRE day-2 changes (scale, upgrade) are written into the customer's resource document:
		// an update of an existing document, never a delete.
		"GRANT UPDATE (type, resource_id, body, etag, expires_at, seq, updated_at) ON documents TO " + r,
		"GRANT INSERT ON documents TO " + r,
		"GRANT USAGE ON SEQUENCE document_seq TO " + r,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("grant the admin login %s on the document store: %s: %w", role, q, err)
		}
	}
	return nil
}
