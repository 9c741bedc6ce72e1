-- Reverses 035.
DROP INDEX IF EXISTS idx_nomos_notices_session;
