-- ListClusters filters by ARM resource ID prefix (a subscription or resource group); a
-- text_pattern_ops index lets LIKE 'prefix%' use an index whatever the database collation.
CREATE INDEX clusters_arm_resource_id_prefix ON clusters (arm_resource_id text_pattern_ops);
