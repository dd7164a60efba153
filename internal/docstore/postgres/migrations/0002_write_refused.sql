-- docstore_write_refused: a write's statement calls it when its condition did not hold (the
-- document exists, or its etag is not the one required), so that the statement fails with
-- SQLSTATE OH001 and its transaction rolls back at the server. A write is then one pipeline in
-- an implicit transaction (the feed lock, its statements, the notification), and the feed lock
-- is never held across a round trip to the writer, which would otherwise have to read each
-- answer before choosing between COMMIT and ROLLBACK (internal/docstore/postgres, write).
CREATE FUNCTION docstore_write_refused() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'document store write refused: its condition does not hold' USING ERRCODE = 'OH001';
END
$$;
