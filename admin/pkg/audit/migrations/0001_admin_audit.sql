-- The SRE audit log: append-only. The trigger refuses UPDATE, DELETE and TRUNCATE even to the
-- owner; the service's login is granted SELECT and INSERT only (audit.Install).
CREATE TABLE admin_audit (
	id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at             timestamptz NOT NULL DEFAULT clock_timestamp(),
	request_id     text NOT NULL,
	correlation_id text NOT NULL,
	person         text NOT NULL,
	grp            text NOT NULL,
	subject        text NOT NULL,
	method         text NOT NULL,
	route          text NOT NULL,
	path           text NOT NULL,
	target         text NOT NULL,
	reason         text NOT NULL,
	outcome        text NOT NULL CHECK (outcome IN ('unauthenticated', 'forbidden', 'allowed', 'completed')),
	status         int  NOT NULL);
CREATE INDEX admin_audit_at_idx ON admin_audit (at);
CREATE INDEX admin_audit_person_idx ON admin_audit (person);
CREATE INDEX admin_audit_target_idx ON admin_audit (target);
CREATE INDEX admin_audit_correlation_idx ON admin_audit (correlation_id);
CREATE FUNCTION admin_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN RAISE EXCEPTION 'admin_audit is append-only: % refused', TG_OP; END $$;
CREATE TRIGGER admin_audit_no_change BEFORE UPDATE OR DELETE ON admin_audit
	FOR EACH ROW EXECUTE FUNCTION admin_audit_append_only();
CREATE TRIGGER admin_audit_no_truncate BEFORE TRUNCATE ON admin_audit
	FOR EACH STATEMENT EXECUTE FUNCTION admin_audit_append_only();
REVOKE ALL ON admin_audit FROM PUBLIC;
