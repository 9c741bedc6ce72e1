DROP INDEX IF EXISTS idx_nomos_assent_windows_expires;
