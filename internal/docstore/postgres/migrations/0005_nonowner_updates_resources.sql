-- A non-owner's (the admin API's) day-2 change is written into a customer's resource document,
-- a cluster or node pool. A subscription's document (its ARM registration state) and an
-- operation's (the status ARM polls) belong to the frontend and backend, so the update policy
-- of migration 0003 is narrowed to resource documents.
ALTER POLICY documents_update_outside_service_partitions ON documents
    USING (partition_key NOT LIKE 'openhcp-%' AND type = 'resource')
    WITH CHECK (partition_key NOT LIKE 'openhcp-%' AND type = 'resource');
