//! The simulator's own model of what the engine was told: when each
//! session's window was open, and each execution's first terminal status.
//! The invariants are judged against this, not against the engine's state.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// An interval `[from, until)`.
type Span = (DateTime<Utc>, DateTime<Utc>);

/// Intervals during which each session's window was open.
#[derive(Debug, Default)]
pub struct Windows {
    open: HashMap<Uuid, Vec<Span>>,
}

impl Windows {
    /// An approval as the store answered it: the window is open from
    /// `opened_at` to `expires_at` (extending the interval it continues).
    pub fn approved(&mut self, session: Uuid, opened_at: DateTime<Utc>, expires_at: DateTime<Utc>) {
        let spans = self.open.entry(session).or_default();
        match spans.last_mut() {
            Some(last) if last.0 == opened_at => last.1 = last.1.max(expires_at),
            _ => spans.push((opened_at, expires_at)),
        }
    }

    /// A deny at `at` ends the interval open then, if any.
    pub fn denied(&mut self, session: Uuid, at: DateTime<Utc>) {
        if let Some(last) = self.open.get_mut(&session).and_then(|s| s.last_mut()) {
            if last.0 <= at && at < last.1 {
                last.1 = at;
            }
        }
    }

    /// Until when the window is open at `at` (the latest end of an
    /// interval holding `at`, the end excluded as the store excludes it).
    pub fn open_until(&self, session: Uuid, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        (self.open.get(&session)?.iter())
            .filter(|(from, until)| *from <= at && at < *until)
            .map(|(_, until)| *until)
            .max()
    }

    /// The session's open intervals, for a violation's evidence.
    pub fn spans(&self, session: Uuid) -> Vec<Span> {
        self.open.get(&session).cloned().unwrap_or_default()
    }

    /// Whether the window was open at `at`. A claim at the very instant of
    /// a deny is ambiguous on a stopped clock (the claim may have come
    /// first), so the deny's instant itself counts as open; the engine's
    /// claim refuses it when the deny came first.
    pub fn open_at(&self, session: Uuid, at: DateTime<Utc>) -> bool {
        self.open.get(&session).is_some_and(|spans| {
            spans
                .iter()
                .any(|(from, until)| *from <= at && at <= *until)
        })
    }
}

/// What the driver told the engine about one execution.
#[derive(Debug, Clone)]
pub struct ExecutionModel {
    pub id: Uuid,
    /// The session whose tool result named it.
    pub session: Uuid,
    /// Linked yet (a status may come first).
    pub linked: bool,
    /// The store refused its tool result (the link or the task's
    /// registration): the runtime posts it again, in the drain.
    pub relink: bool,
    /// Statuses still to report, in order.
    pub script: Vec<(&'static str, String)>,
    /// The first terminal status reported, which must stay.
    pub first_terminal: Option<String>,
    /// That report as the driver sent it (its scripted status and result),
    /// to send again when a failover lost it (`failover`).
    pub terminal_report: Option<(&'static str, String)>,
    /// The A2A task the execution is, reported by pushes (`push`).
    pub task: Option<SimTask>,
    /// The last push sent, to send again (at least once).
    pub last_push: Option<(&'static str, String)>,
}

/// An A2A task of the simulation: its id and its push token.
#[derive(Debug, Clone)]
pub struct SimTask {
    pub task_id: String,
    pub token: String,
}
