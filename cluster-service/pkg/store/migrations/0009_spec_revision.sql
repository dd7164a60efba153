-- spec_revision: the revision of the last change to a row's spec (issue 10), so a status can say
-- which spec it reflects (status.observed_revision) while status writes keep moving revision.
-- One trigger owns the rule for every write path: an insert, or an update that changes spec,
-- sets spec_revision to the row's new revision; any other update keeps it.
-- Existing rows start at their current revision: at most too new for a spec written earlier,
-- which only means a status stamped from now on is taken to reflect the spec as it stands,
-- and that is what the controller derives status from.
CREATE FUNCTION stamp_spec_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.spec IS DISTINCT FROM OLD.spec THEN
        NEW.spec_revision := NEW.revision;
    END IF;
    RETURN NEW;
END
$$;

ALTER TABLE clusters ADD COLUMN spec_revision bigint;
UPDATE clusters SET spec_revision = revision;
ALTER TABLE clusters ALTER COLUMN spec_revision SET NOT NULL;
CREATE TRIGGER clusters_spec_revision BEFORE INSERT OR UPDATE ON clusters
    FOR EACH ROW EXECUTE FUNCTION stamp_spec_revision();

ALTER TABLE node_pools ADD COLUMN spec_revision bigint;
UPDATE node_pools SET spec_revision = revision;
ALTER TABLE node_pools ALTER COLUMN spec_revision SET NOT NULL;
CREATE TRIGGER node_pools_spec_revision BEFORE INSERT OR UPDATE ON node_pools
    FOR EACH ROW EXECUTE FUNCTION stamp_spec_revision();

ALTER TABLE external_auths ADD COLUMN spec_revision bigint;
UPDATE external_auths SET spec_revision = revision;
ALTER TABLE external_auths ALTER COLUMN spec_revision SET NOT NULL;
CREATE TRIGGER external_auths_spec_revision BEFORE INSERT OR UPDATE ON external_auths
    FOR EACH ROW EXECUTE FUNCTION stamp_spec_revision();
