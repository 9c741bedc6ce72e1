-- Reverses 030 (SQLite mirror).
ALTER TABLE nomos_link_data DROP COLUMN result_wait_message;
ALTER TABLE nomos_link_data DROP COLUMN result_wait;
ALTER TABLE nomos_link_data DROP COLUMN protocol_heard_at;
ALTER TABLE nomos_link_data DROP COLUMN protocol_state;
ALTER TABLE nomos_link_data DROP COLUMN artifacts;
ALTER TABLE nomos_link_data DROP COLUMN agent_version;
ALTER TABLE nomos_link_data DROP COLUMN agent_url;
ALTER TABLE nomos_link_data DROP COLUMN push_expires_at;
ALTER TABLE nomos_link_data DROP COLUMN push_token_sha256;
