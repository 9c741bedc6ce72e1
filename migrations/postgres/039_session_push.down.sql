-- Reverses 039: session push configurations are forgotten; the tasks their
-- pushes linked stay linked (and report through a per-task configuration
-- or the poller, if one was registered).
DROP TABLE IF EXISTS nomos_session_push;
