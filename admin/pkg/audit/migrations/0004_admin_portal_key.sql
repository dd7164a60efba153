-- The key of the SRE portal's form tokens (admin/pkg/server, middleware_forgery.go): one per
-- region, made by the first admin replica that needs it, so every replica accepts the forms of
-- every other's pages, and a restart does not invalidate open pages. The service's login may
-- insert it once and read it (audit.Install); it can neither change nor remove it.
CREATE TABLE admin_portal_key (
	id  int   PRIMARY KEY CHECK (id = 1),
	key bytea NOT NULL CHECK (length(key) = 32));
REVOKE ALL ON admin_portal_key FROM PUBLIC;
