-- SRE break-glass sessions (admin/pkg/session): an SRE reaches a hosted cluster only through the
-- gateway (admin/cmd/gateway), which proxies with the session's credential. The credential (a
-- kubeconfig of the cluster's SRE signer) is sealed with the region's session key before it is
-- written here and is never returned to the SRE. The service's login may insert a session and
-- change its state, credential and closing (session.Install grants those columns only); the
-- trigger refuses any change to a session that ended, and any transition that is not one of
-- awaiting-approval -> active, awaiting-approval|active -> closed|revoked.
CREATE TABLE admin_breakglass_sessions (
	id         text PRIMARY KEY,
	cluster_id text NOT NULL,
	person     text NOT NULL,
	grp        text NOT NULL,
	access     text NOT NULL CHECK (access IN ('read-only', 'admin')),
	reason     text NOT NULL,
	state      text NOT NULL CHECK (state IN ('awaiting-approval', 'active', 'closed', 'revoked')),
	created    timestamptz NOT NULL DEFAULT clock_timestamp(),
	ttl_seconds int NOT NULL CHECK (ttl_seconds > 0),
	expires    timestamptz NOT NULL,
	credential bytea,
	closed_at  timestamptz,
	closed_by  text NOT NULL DEFAULT '');
CREATE INDEX admin_breakglass_sessions_person_idx ON admin_breakglass_sessions (person);
CREATE INDEX admin_breakglass_sessions_cluster_idx ON admin_breakglass_sessions (cluster_id);
CREATE FUNCTION admin_breakglass_session_transition() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF OLD.state IN ('closed', 'revoked') THEN
			RAISE EXCEPTION 'break-glass session % has ended (%): it cannot change', OLD.id, OLD.state;
		END IF;
		IF NEW.id <> OLD.id OR NEW.cluster_id <> OLD.cluster_id OR NEW.person <> OLD.person OR NEW.access <> OLD.access
			OR NEW.created <> OLD.created THEN
			RAISE EXCEPTION 'break-glass session %: only its state, expiry, credential and closing may change', OLD.id;
		END IF;
		IF NEW.state = 'active' AND NEW.credential IS NULL THEN
			RAISE EXCEPTION 'break-glass session % cannot be active without a credential', OLD.id;
		END IF;
		IF OLD.state = 'active' AND NEW.state = 'awaiting-approval' THEN
			RAISE EXCEPTION 'break-glass session % is active: it cannot await an approval again', OLD.id;
		END IF;
		IF NEW.state IN ('closed', 'revoked') THEN
			NEW.closed_at := clock_timestamp();
		END IF;
		RETURN NEW;
	END $$;
CREATE TRIGGER admin_breakglass_session_transition BEFORE UPDATE ON admin_breakglass_sessions
	FOR EACH ROW EXECUTE FUNCTION admin_breakglass_session_transition();
CREATE FUNCTION admin_breakglass_sessions_no_delete() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN RAISE EXCEPTION 'admin_breakglass_sessions keeps every session: % refused', TG_OP; END $$;
CREATE TRIGGER admin_breakglass_sessions_no_delete BEFORE DELETE ON admin_breakglass_sessions
	FOR EACH ROW EXECUTE FUNCTION admin_breakglass_sessions_no_delete();
REVOKE ALL ON admin_breakglass_sessions FROM PUBLIC;
