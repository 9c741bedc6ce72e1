-- 040_policy_signatures (SQLite mirror): the signature line each revision
-- was stored with and the id of the key it names; NULL = unsigned. See the
-- PostgreSQL migration.
ALTER TABLE nomos_policy_revisions ADD COLUMN key_id TEXT;
ALTER TABLE nomos_policy_revisions ADD COLUMN signature TEXT;
