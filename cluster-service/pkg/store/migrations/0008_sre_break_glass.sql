-- SRE break-glass credentials (admin API): who the credential is for, what it may do, how long
-- it lives and why it was asked for. NULL on a customer's credential, whose rows are unchanged.
-- The JSON is csv1.SRECredential (protojson).
ALTER TABLE break_glass_credentials ADD COLUMN sre jsonb;
CREATE INDEX break_glass_credentials_sre_person ON break_glass_credentials ((sre->>'person'), create_time) WHERE sre IS NOT NULL;
