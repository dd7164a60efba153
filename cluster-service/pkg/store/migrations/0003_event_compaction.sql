-- Tombstones (DELETED events) older than the retention are pruned; compacted_revision is the
-- newest revision pruned, so a watcher resuming from before it is told to start over.
CREATE TABLE cluster_event_compaction (
    singleton          boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    compacted_revision bigint NOT NULL
);
INSERT INTO cluster_event_compaction (singleton, compacted_revision) VALUES (true, 0);
CREATE INDEX cluster_events_tombstones ON cluster_events (create_time) WHERE type = 'DELETED';
