-- 030_task_push (SQLite mirror): push configurations, the remote agent,
-- gathered artifacts and protocol states (see the PostgreSQL 030). SQLite
-- cannot add a table constraint to an existing table, so the pairs set
-- together (token and expiry, agent URL and version) are kept by the
-- store's one writer of each (`Store::mint_push`).
ALTER TABLE nomos_link_data ADD COLUMN push_token_sha256 TEXT
    CHECK (length(push_token_sha256) = 64 AND push_token_sha256 NOT GLOB '*[^0-9a-f]*');
ALTER TABLE nomos_link_data ADD COLUMN push_expires_at INTEGER;
ALTER TABLE nomos_link_data ADD COLUMN agent_url TEXT CHECK (length(agent_url) BETWEEN 1 AND 2048);
ALTER TABLE nomos_link_data ADD COLUMN agent_version TEXT CHECK (agent_version IN ('1.0', '0.3'));
ALTER TABLE nomos_link_data ADD COLUMN artifacts TEXT;
ALTER TABLE nomos_link_data ADD COLUMN protocol_state TEXT CHECK (length(protocol_state) BETWEEN 1 AND 1024);
ALTER TABLE nomos_link_data ADD COLUMN protocol_heard_at INTEGER;
ALTER TABLE nomos_link_data ADD COLUMN result_wait TEXT CHECK (length(result_wait) BETWEEN 1 AND 1024);
ALTER TABLE nomos_link_data ADD COLUMN result_wait_message TEXT;
