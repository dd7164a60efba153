-- Customer and SRE break-glass credentials have separate signers on the hosted cluster, so a
-- revocation rotates one of them and revokes that kind of credential only: sre says which.
-- Revocations before this migration rotated the one (customer) signer that signed both kinds.
ALTER TABLE break_glass_revocations ADD COLUMN sre boolean NOT NULL DEFAULT false;
-- At most one running revocation per cluster and kind.
DROP INDEX break_glass_revocations_running;
CREATE UNIQUE INDEX break_glass_revocations_running ON break_glass_revocations (cluster_id, sre) WHERE state = 'REVOCATION_STATE_REVOKING';
