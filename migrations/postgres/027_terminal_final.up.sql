-- 027_terminal_final: reports that arrive after an execution has finished.
--
-- Terminal is final (DESIGN.md, promise P4): the first report the policy
-- classifies as terminal sets executions.finished_at, and from then on a
-- report for that execution, terminal or not, is not applied (a late
-- "running" would make it unfinished again, and it would never be continued
-- nor announced). Such a report is not thrown away either: it is kept here,
-- for the operator and for the record of what the runtime said. Written in
-- the same transaction that declined to apply it.
CREATE TABLE nomos_late_reports (
    id BIGSERIAL PRIMARY KEY,
    execution_id UUID NOT NULL,
    status TEXT NOT NULL,
    result TEXT NOT NULL,
    reported_at TIMESTAMPTZ NOT NULL
);

-- An execution's late reports, in arrival order.
CREATE INDEX idx_nomos_late_reports_execution ON nomos_late_reports (execution_id, id);
