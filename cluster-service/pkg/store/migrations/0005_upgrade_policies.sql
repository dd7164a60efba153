-- Upgrade policies: each upgrade of a control plane or a node pool, and where it is in
-- PENDING → SCHEDULED → STARTED → COMPLETED | FAILED. The cluster's newest control-plane policy
-- is also copied into its status (status.upgrade) in the same transaction, so WatchClusters
-- carries every policy change. Rows go with their cluster or node pool.
CREATE TABLE upgrade_policies (
    id           text PRIMARY KEY,
    cluster_id   text NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    node_pool_id text REFERENCES node_pools (id) ON DELETE CASCADE,
    type         text NOT NULL CHECK (type IN ('CONTROL_PLANE', 'NODE_POOL')),
    state        text NOT NULL CHECK (state IN ('PENDING', 'SCHEDULED', 'STARTED', 'COMPLETED', 'FAILED')),
    from_version text NOT NULL,
    to_version   text NOT NULL,
    next_run     timestamptz NOT NULL,
    message      text NOT NULL DEFAULT '',
    operation_id text NOT NULL DEFAULT '',
    create_time  timestamptz NOT NULL DEFAULT now(),
    update_time  timestamptz NOT NULL DEFAULT now(),
    CHECK ((type = 'NODE_POOL') = (node_pool_id IS NOT NULL))
);
CREATE INDEX upgrade_policies_cluster_id ON upgrade_policies (cluster_id, create_time DESC);
CREATE INDEX upgrade_policies_node_pool_id ON upgrade_policies (node_pool_id) WHERE node_pool_id IS NOT NULL;
-- At most one unfinished upgrade per control plane and per node pool.
CREATE UNIQUE INDEX upgrade_policies_active_control_plane ON upgrade_policies (cluster_id)
    WHERE type = 'CONTROL_PLANE' AND state IN ('PENDING', 'SCHEDULED', 'STARTED');
CREATE UNIQUE INDEX upgrade_policies_active_node_pool ON upgrade_policies (node_pool_id)
    WHERE type = 'NODE_POOL' AND state IN ('PENDING', 'SCHEDULED', 'STARTED');
