-- Row-level security for the one login outside the store's owner group, the admin API's
-- (GrantAdminLogin holds its grants). The owner group's members (frontend, backend, monitor,
-- maintenance) own the table and are not subject to these policies. A non-owner:
--   * reads every document (its grants decide whether it may read at all);
--   * updates documents outside the service partitions (openhcp-*): a customer's resource
--     document for an SRE day-2 change, never a maintenance, lease or monitor document, and
--     never a maintenance request once inserted (the maintenance service records its outcome);
--   * inserts one kind of document only: a pending maintenance request in its own partition,
--     which the maintenance service carries out (backend/pkg/maintenance, request.go);
--   * deletes nothing (no policy, and no grant).
ALTER TABLE documents ENABLE ROW LEVEL SECURITY;

CREATE POLICY documents_read ON documents FOR SELECT USING (true);

CREATE POLICY documents_update_outside_service_partitions ON documents FOR UPDATE
    USING (partition_key NOT LIKE 'openhcp-%')
    WITH CHECK (partition_key NOT LIKE 'openhcp-%');

CREATE POLICY documents_insert_maintenance_request ON documents FOR INSERT
    WITH CHECK (partition_key = 'openhcp-maintenance-requests'
        AND type = 'maintenance-request'
        AND body->>'state' = 'Pending'
        AND expires_at IS NULL);
