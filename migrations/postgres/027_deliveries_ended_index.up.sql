-- no-transaction
-- 027_deliveries_ended_index: the overview's reads of ended deliveries
-- (failed in the last 24 hours, continuations delivered per hour and their
-- pickup times, notices that reached no one) as ranges of one index, so
-- they cost the window's rows, not the ledger's history. A delivered row's
-- updated_at is its delivered_at (nothing updates it after), a failed or
-- dropped row's the time it ended. Partial: pending rows are the due index's.
-- Built CONCURRENTLY, one statement per file, for the reasons in 019.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_deliveries_ended
    ON nomos_deliveries (state, kind, updated_at) WHERE state <> 'pending';
