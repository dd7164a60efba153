-- External auths: the OIDC provider of a cluster, at most one per cluster (the unique index on
-- cluster_id enforces it, including one still being deleted). Revisions come from the global
-- sequence and writes take the same advisory lock as clusters and node pools.
CREATE TABLE external_auths (
    id                   text PRIMARY KEY,
    cluster_id           text NOT NULL REFERENCES clusters (id),
    -- lower-cased; the unique index makes create idempotent per ARM resource.
    arm_resource_id      text NOT NULL,
    arm_resource_id_orig text NOT NULL,
    spec                 jsonb NOT NULL,
    status               jsonb NOT NULL,
    state                text NOT NULL,
    deleting             boolean NOT NULL DEFAULT false,
    revision             bigint NOT NULL,
    create_time          timestamptz NOT NULL DEFAULT now(),
    update_time          timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX external_auths_arm_resource_id ON external_auths (arm_resource_id);
CREATE UNIQUE INDEX external_auths_cluster_id ON external_auths (cluster_id);

-- As cluster_events: the latest event per external auth plus tombstones of deleted ones.
CREATE TABLE external_auth_events (
    revision         bigint PRIMARY KEY,
    external_auth_id text NOT NULL,
    type             text NOT NULL CHECK (type IN ('UPSERTED', 'DELETED')),
    external_auth    jsonb NOT NULL,
    create_time      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX external_auth_events_external_auth_id ON external_auth_events (external_auth_id);
CREATE INDEX external_auth_events_tombstones ON external_auth_events (create_time) WHERE type = 'DELETED';
ALTER TABLE cluster_event_compaction ADD COLUMN external_auth_compacted_revision bigint NOT NULL DEFAULT 0;
