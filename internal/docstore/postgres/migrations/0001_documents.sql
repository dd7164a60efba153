-- Documents of every kind, partitioned by subscription. seq is the position of the document's
-- last write in the change feed; it comes from one global sequence so the feed has a total order.
CREATE SEQUENCE document_seq;

CREATE TABLE documents (
    partition_key text        NOT NULL,
    id            text        NOT NULL,
    type          text        NOT NULL,
    resource_id   text        NOT NULL DEFAULT '',
    body          jsonb       NOT NULL,
    etag          text        NOT NULL,
    expires_at    timestamptz,
    seq           bigint      NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_key, id)
);

-- Prefix queries (LIKE 'prefix%') need text_pattern_ops unless the database collation is C.
CREATE INDEX documents_resource_id_idx ON documents (resource_id text_pattern_ops);
CREATE INDEX documents_partition_type_resource_idx ON documents (partition_key, type, resource_id text_pattern_ops);
CREATE UNIQUE INDEX documents_seq_idx ON documents (seq);
CREATE INDEX documents_expires_at_idx ON documents (expires_at) WHERE expires_at IS NOT NULL;

-- Deletes stay visible to the change feed as tombstones until they are older than the
-- retention period.
CREATE TABLE document_tombstones (
    seq           bigint      PRIMARY KEY,
    partition_key text        NOT NULL,
    id            text        NOT NULL,
    type          text        NOT NULL,
    resource_id   text        NOT NULL DEFAULT '',
    deleted_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX document_tombstones_deleted_at_idx ON document_tombstones (deleted_at);
