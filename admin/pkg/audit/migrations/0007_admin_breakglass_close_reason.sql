-- A break-glass session the admin service ends itself (its cluster was deleted at Cluster
-- Service) says why in close_reason; a person's close or revoke keeps its reason in the audit
-- log, as before, and leaves it empty. session.Install grants the service UPDATE of it.
ALTER TABLE admin_breakglass_sessions ADD COLUMN close_reason text NOT NULL DEFAULT '';
