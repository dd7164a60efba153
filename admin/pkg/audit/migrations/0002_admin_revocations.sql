-- The SRE revocation list (admin/pkg/revocation): SELECT and INSERT only for the service's
-- login (revocation.Install).
CREATE TABLE admin_revocations (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	person     text NOT NULL,
	revoked_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	revoked_by text NOT NULL,
	reason     text NOT NULL);
CREATE INDEX admin_revocations_person_idx ON admin_revocations (person);
REVOKE ALL ON admin_revocations FROM PUBLIC;
