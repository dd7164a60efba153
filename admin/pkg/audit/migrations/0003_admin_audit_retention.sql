-- Retention of the SRE audit log (docs/security.md, "Audit log retention"). The period is
-- defined here only: admin_audit_retention(). A record older than it may be deleted, by
-- anyone the table's trigger lets through, and only through admin_audit_prune(), which runs
-- as the owner (SECURITY DEFINER) and deletes nothing younger. The service's login is granted
-- EXECUTE on it (audit.Install) and still holds no DELETE on the table.
CREATE FUNCTION admin_audit_retention() RETURNS interval LANGUAGE sql IMMUTABLE AS $$ SELECT interval '400 days' $$;

-- A record's time is the database's clock, whatever an INSERT says: no record can be
-- backdated into prunability.
CREATE FUNCTION admin_audit_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN NEW.at := clock_timestamp(); RETURN NEW; END $$;
CREATE TRIGGER admin_audit_stamp BEFORE INSERT ON admin_audit
	FOR EACH ROW EXECUTE FUNCTION admin_audit_stamp();

-- Append-only still, except that a record older than the retention may be deleted.
CREATE OR REPLACE FUNCTION admin_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF TG_OP = 'DELETE' AND OLD.at < clock_timestamp() - admin_audit_retention() THEN
			RETURN OLD;
		END IF;
		RAISE EXCEPTION 'admin_audit is append-only: % refused', TG_OP;
	END $$;

CREATE FUNCTION admin_audit_prune() RETURNS bigint LANGUAGE sql SECURITY DEFINER
	SET search_path = pg_catalog, public AS $$
	WITH gone AS (DELETE FROM public.admin_audit WHERE at < clock_timestamp() - public.admin_audit_retention() RETURNING 1)
	SELECT count(*) FROM gone $$;
REVOKE ALL ON FUNCTION admin_audit_prune() FROM PUBLIC;
