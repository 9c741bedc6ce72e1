-- no-transaction
-- 038_delivery_due_index: the claim's order, whole.
--
-- A claim (Store::claim_deliveries) takes the oldest due deliveries in
-- (next_attempt_at, created_at, id) order. The index of 020 orders by
-- next_attempt_at alone, and a pass's continuations are all due at the same
-- instant, so every claim read and sorted every pending row before its LIMIT:
-- with 10,000 pending, each claim of 32 read 10,000 rows and their windows.
-- This one leads with the kind, because the claim takes notices and
-- continuations in two ordered reads (a notice needs no open window): each is
-- read in the claim's order and stops after LIMIT rows, and ten thousand
-- pending continuations cost the notices' read nothing. Built CONCURRENTLY
-- (see 030); 039 drops the index it replaces. (SQLite's claim is one ordered
-- read over both kinds, so its mirror has no kind column.)
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_deliveries_due
    ON nomos_deliveries (kind, next_attempt_at, created_at, id) WHERE state = 'pending';
