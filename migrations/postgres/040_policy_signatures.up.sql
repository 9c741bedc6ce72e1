-- 040_policy_signatures: who signed each policy revision.
--
-- With `serve --policy-verify-key`, a revision runs only with a valid
-- Ed25519 signature (see host/src/signing.rs and docs/operations.md,
-- "Signed revisions"). The signature is kept with the revision because a
-- revision reaches a replica through this table too: the database watcher
-- and a rollback verify the row's signature before activating it.
--
-- signature holds the signature line exactly as uploaded (the `.sig` file's
-- contents); key_id the id of the key it names, for listings and audits.
-- Both NULL for a revision stored unsigned (the built-in policy, or one
-- stored by a replica without a verify key). Catalog only (nullable columns
-- without a default), under a lock timeout, as in 036.
SET LOCAL lock_timeout = '500ms';
ALTER TABLE nomos_policy_revisions ADD COLUMN IF NOT EXISTS key_id TEXT;
ALTER TABLE nomos_policy_revisions ADD COLUMN IF NOT EXISTS signature TEXT;
