-- no-transaction
-- 035_notice_session_index: GET /v1/sessions/{id} pages a session's notices
-- in id order; without this index every page sorts all of the session's
-- notices. Built CONCURRENTLY (one statement per file, see 030) so a large
-- notice table keeps taking writes while it is built.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_notices_session
    ON nomos_notices (session_id, id);
