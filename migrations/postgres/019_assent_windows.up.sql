-- 019_assent_windows: one assent window per chat session.
--
-- Approving a step by any route (button, chat assent, API) opens the window,
-- or extends it while it is still open; denying closes it. The worker only
-- re-invokes the agent while opened_at <= now < expires_at and closed_at IS
-- NULL. The 30-minute ceiling is enforced by the store (Store::approve refuses
-- a duration over 30 minutes): a CHECK (expires_at <= opened_at + 30 min)
-- cannot express "extended by a later approval". continuations counts the
-- re-invocations planned inside the current window (the loop guard); a new
-- window starts it again at 0.
CREATE TABLE nomos_assent_windows (
    session_id UUID PRIMARY KEY,
    opened_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    route TEXT NOT NULL CHECK (route IN ('button', 'chat', 'api')),
    continuations INTEGER NOT NULL DEFAULT 0 CHECK (continuations >= 0),
    closed_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
