-- no-transaction
-- Reverses 033 without blocking approvals.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_assent_windows_expires;
