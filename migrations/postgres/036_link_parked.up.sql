-- 036_link_parked: links the worker has seen running, so its poll can skip
-- them by index.
--
-- parked holds the status an unsettled link's execution had when the worker
-- found it running (or unclassifiable) under the active policy revision;
-- NULL = not parked. The worker's frequent pass reads only unparked links
-- (037's index: exactly that predicate, in poll order), so executions that
-- stay running are not read on every pass, however many there are. Recording
-- a status (Store::upsert_execution_status) unparks its link in the same
-- transaction, and the worker's periodic sweep reads parked links too, so a
-- status written behind the store's back (a runtime's own `executions`
-- relation), a park that raced a report, or a policy swap that changes
-- which statuses are terminal is seen within one poll interval.
--
-- Catalog only (a nullable column without a default), under a lock timeout:
-- the runtime keeps inserting into this table (see 018 and
-- docs/operations.md, "Deploying onto a live database").
SET LOCAL lock_timeout = '500ms';
ALTER TABLE nomos_plan_executions ADD COLUMN IF NOT EXISTS parked TEXT;
