-- Cluster Service's own audit record of every break-glass credential it accepts to issue, a
-- customer's or an SRE's, written in the transaction that records the credential: who asked
-- (the caller's verified identity), for whom (the SRE person from the admin API's signed
-- statement, or the customer's break-glass user), the kind, the cluster, the lifetime asked
-- for, the reason, and the statement's request ID and approver. Append-only: Cluster Service
-- owns its database, so no GRANT can withhold UPDATE or DELETE from it; a trigger refuses
-- both, and TRUNCATE, to every role. It stops a bug or a careless query, not an owner who
-- drops the trigger first (docs/security.md, threat model).
CREATE TABLE credential_audit (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    credential_id  text NOT NULL,
    cluster_id     text NOT NULL,
    identity       text NOT NULL,
    for_whom       text NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('customer', 'sre-read-only', 'sre-admin')),
    username       text NOT NULL,
    validity_seconds int NOT NULL,
    expire_time    timestamptz NOT NULL,
    reason         text NOT NULL,
    approver       text NOT NULL DEFAULT '',
    request_id     text NOT NULL DEFAULT ''
);
CREATE INDEX credential_audit_cluster_idx ON credential_audit (cluster_id, at);
CREATE INDEX credential_audit_for_whom_idx ON credential_audit (for_whom, at);
CREATE FUNCTION credential_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'credential_audit is append-only: % refused', TG_OP; END $$;
CREATE TRIGGER credential_audit_no_change BEFORE UPDATE OR DELETE ON credential_audit
    FOR EACH ROW EXECUTE FUNCTION credential_audit_append_only();
CREATE TRIGGER credential_audit_no_truncate BEFORE TRUNCATE ON credential_audit
    FOR EACH STATEMENT EXECUTE FUNCTION credential_audit_append_only();
REVOKE ALL ON credential_audit FROM PUBLIC;
