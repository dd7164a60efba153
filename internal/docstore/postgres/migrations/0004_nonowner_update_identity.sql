-- What row-level security cannot say about a non-owner's update (the admin API's login,
-- migration 0003): a policy sees only the new row, not the old one. A non-owner's update is a
-- day-2 change to the body of a document that exists, so it keeps the document's type,
-- resource ID and expiry (an expiry would have the owners' purger delete a document that the
-- login may not delete, another resource ID would file it under another customer's resource),
-- and the feed position of its update or insert (a maintenance request) is the one the
-- sequence just gave the statement, as the store writes it (a position of its own choosing
-- would hide the change from the feed or collide with a later write). Owners are not subject
-- to row-level security and pass untouched.
CREATE FUNCTION documents_nonowner_update_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
    cur bigint;
BEGIN
    IF NOT row_security_active('documents') THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.type IS DISTINCT FROM OLD.type
        OR NEW.resource_id IS DISTINCT FROM OLD.resource_id
        OR NEW.expires_at IS DISTINCT FROM OLD.expires_at) THEN
        RAISE EXCEPTION 'a non-owner update of document %/% must keep its type, resource ID and expiry', OLD.partition_key, OLD.id
            USING ERRCODE = '42501';
    END IF;
    BEGIN
        cur := currval('document_seq');
    EXCEPTION WHEN object_not_in_prerequisite_state THEN
        -- The statement took no position from the sequence at all: a position of its own.
        cur := NULL;
    END;
    IF cur IS NULL OR NEW.seq IS DISTINCT FROM cur THEN
        RAISE EXCEPTION 'a non-owner write of document %/% must take its feed position from document_seq', NEW.partition_key, NEW.id
            USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER documents_nonowner_update_guard BEFORE INSERT OR UPDATE ON documents
    FOR EACH ROW EXECUTE FUNCTION documents_nonowner_update_guard();
