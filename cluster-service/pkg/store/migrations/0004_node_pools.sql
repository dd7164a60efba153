-- Node pools: each belongs to one cluster and is sent as its own ManifestWork. Revisions come
-- from the same global sequence as clusters, and writes take the same advisory lock, so a
-- watcher of both streams sees one order.
CREATE TABLE node_pools (
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
CREATE UNIQUE INDEX node_pools_arm_resource_id ON node_pools (arm_resource_id);
CREATE INDEX node_pools_cluster_id ON node_pools (cluster_id);

-- As cluster_events: the latest event per node pool plus tombstones of deleted ones.
CREATE TABLE node_pool_events (
    revision     bigint PRIMARY KEY,
    node_pool_id text NOT NULL,
    type         text NOT NULL CHECK (type IN ('UPSERTED', 'DELETED')),
    node_pool    jsonb NOT NULL,
    create_time  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX node_pool_events_node_pool_id ON node_pool_events (node_pool_id);
CREATE INDEX node_pool_events_tombstones ON node_pool_events (create_time) WHERE type = 'DELETED';
ALTER TABLE cluster_event_compaction ADD COLUMN node_pool_compacted_revision bigint NOT NULL DEFAULT 0;
