-- Admin (system:masters) break-glass requests and their approvals by a second sre-admin
-- (admin/pkg/approval). Both are append-only for the service (approval.Install grants SELECT
-- and INSERT only): a request is never changed, an approval is one more row, and the primary
-- key of approvals makes a second approval of the same request fail.
CREATE TABLE admin_breakglass_requests (
	id          text PRIMARY KEY,
	at          timestamptz NOT NULL DEFAULT clock_timestamp(),
	person      text NOT NULL,
	grp         text NOT NULL,
	cluster_id  text NOT NULL,
	ttl_seconds int  NOT NULL,
	reason      text NOT NULL,
	request_id  text NOT NULL);
CREATE TABLE admin_breakglass_approvals (
	request    text PRIMARY KEY REFERENCES admin_breakglass_requests (id),
	at         timestamptz NOT NULL DEFAULT clock_timestamp(),
	approver   text NOT NULL,
	grp        text NOT NULL,
	reason     text NOT NULL,
	request_id text NOT NULL);
-- The rule that matters most is also the database's: nobody approves their own request.
CREATE FUNCTION admin_breakglass_no_self_approval() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF EXISTS (SELECT 1 FROM admin_breakglass_requests WHERE id = NEW.request AND person = NEW.approver) THEN
			RAISE EXCEPTION 'break-glass request % cannot be approved by its requester', NEW.request;
		END IF;
		RETURN NEW;
	END $$;
CREATE TRIGGER admin_breakglass_no_self_approval BEFORE INSERT ON admin_breakglass_approvals
	FOR EACH ROW EXECUTE FUNCTION admin_breakglass_no_self_approval();
REVOKE ALL ON admin_breakglass_requests FROM PUBLIC;
REVOKE ALL ON admin_breakglass_approvals FROM PUBLIC;
