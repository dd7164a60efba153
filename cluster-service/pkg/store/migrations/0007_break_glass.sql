-- Break-glass credentials and their revocations. Rows are never deleted, also not with their
-- cluster (no foreign key): they are the audit trail of who could reach a hosted cluster's API
-- and until when. Revisions come from the global sequence and writes take the same advisory lock
-- as clusters and node pools.
CREATE TABLE break_glass_credentials (
    id          text PRIMARY KEY,
    cluster_id  text NOT NULL,
    -- the customer's PEM CSR, or empty when Cluster Service generated private_key.
    csr         text NOT NULL DEFAULT '',
    -- PKCS#8 DER of the key Cluster Service generated; it leaves Cluster Service only inside the
    -- kubeconfig GetCredential assembles. Plain bytea like the etcd key (see docs: Unfinished).
    private_key bytea,
    -- PEM of the issued certificate and of the hosted cluster's CA, and the API URL at issue time.
    certificate text NOT NULL DEFAULT '',
    ca_bundle   text NOT NULL DEFAULT '',
    api_url     text NOT NULL DEFAULT '',
    status      jsonb NOT NULL,
    state       text NOT NULL,
    -- work_active: the credential's ManifestWork may still exist on the shard.
    work_active boolean NOT NULL DEFAULT false,
    shard       text NOT NULL DEFAULT '',
    revision    bigint NOT NULL,
    create_time timestamptz NOT NULL DEFAULT now(),
    update_time timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX break_glass_credentials_cluster_id ON break_glass_credentials (cluster_id, create_time);

CREATE TABLE break_glass_revocations (
    id          text PRIMARY KEY,
    cluster_id  text NOT NULL,
    status      jsonb NOT NULL,
    state       text NOT NULL,
    work_active boolean NOT NULL DEFAULT false,
    shard       text NOT NULL DEFAULT '',
    revision    bigint NOT NULL,
    create_time timestamptz NOT NULL DEFAULT now(),
    update_time timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX break_glass_revocations_cluster_id ON break_glass_revocations (cluster_id);
-- At most one running revocation per cluster.
CREATE UNIQUE INDEX break_glass_revocations_running ON break_glass_revocations (cluster_id) WHERE state = 'REVOCATION_STATE_REVOKING';

-- The latest event per credential ('c/<id>') and per revocation ('r/<id>'); no tombstones.
CREATE TABLE break_glass_events (
    revision    bigint PRIMARY KEY,
    object_id   text NOT NULL,
    type        text NOT NULL CHECK (type IN ('UPSERTED', 'DELETED')),
    object      jsonb NOT NULL,
    create_time timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX break_glass_events_object_id ON break_glass_events (object_id);
