-- Provision shards: one per management cluster; the name is also the Maestro consumer name.
CREATE TABLE provision_shards (
    name         text PRIMARY KEY,
    status       text NOT NULL,
    max_clusters integer NOT NULL CHECK (max_clusters >= 0),
    labels       jsonb NOT NULL DEFAULT '{}'::jsonb,
    create_time  timestamptz NOT NULL DEFAULT now(),
    update_time  timestamptz NOT NULL DEFAULT now()
);

-- One global sequence: every cluster change (including deletion) takes the next value, so
-- WatchClusters can resume from any revision. Writers serialise on an advisory lock before
-- taking a value, so revisions also commit in order.
CREATE SEQUENCE cluster_revision_seq;

CREATE TABLE clusters (
    id                   text PRIMARY KEY,
    -- lower-cased; the unique index makes create idempotent per ARM resource.
    arm_resource_id      text NOT NULL,
    -- as the caller spelled it, returned in the API.
    arm_resource_id_orig text NOT NULL,
    spec                 jsonb NOT NULL,
    status               jsonb NOT NULL,
    state                text NOT NULL,
    shard                text REFERENCES provision_shards (name),
    namespace            text NOT NULL,
    deleting             boolean NOT NULL DEFAULT false,
    revision             bigint NOT NULL,
    -- secret material generated once at create, so every ManifestWork build is identical.
    etcd_encryption_key  bytea NOT NULL,
    ssh_public_key       text NOT NULL,
    create_time          timestamptz NOT NULL DEFAULT now(),
    update_time          timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX clusters_arm_resource_id ON clusters (arm_resource_id);
CREATE INDEX clusters_shard ON clusters (shard);

-- The latest event per cluster (earlier ones are pruned on write) plus tombstones for deleted
-- clusters; cluster holds the full state at that revision.
CREATE TABLE cluster_events (
    revision    bigint PRIMARY KEY,
    cluster_id  text NOT NULL,
    type        text NOT NULL CHECK (type IN ('UPSERTED', 'DELETED')),
    cluster     jsonb NOT NULL,
    create_time timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cluster_events_cluster_id ON cluster_events (cluster_id);
