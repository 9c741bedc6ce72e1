//! Where the store's rows meet the policy's types: the mappings the worker
//! builds decision inputs with (`.into()`, never field by field).
//!
//! Why here and not in `policy/`: the sandbox knows no database, and the
//! store knows nothing above it; the worker is the one place that holds both.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::context::Context;
use crate::policy::types as t;
use crate::store::{self, LinkTask, ReadyLink, SessionSnapshot, TaskSource};

impl From<store::Route> for t::ApprovalRoute {
    fn from(route: store::Route) -> Self {
        match route {
            store::Route::Button => t::ApprovalRoute::Button,
            store::Route::Chat => t::ApprovalRoute::Chat,
            store::Route::Api => t::ApprovalRoute::Api,
        }
    }
}

/// A window row as the policy sees it. Whether the row is still open (a
/// denial closes it) is the caller's question, not this mapping's.
impl From<&store::Window> for t::Window {
    fn from(row: &store::Window) -> Self {
        t::Window {
            opened_at: row.opened_at.into(),
            expires_at: row.expires_at.into(),
            route: row.route.into(),
        }
    }
}

impl Context {
    /// The policy's input for one link of a session; `still_running` is the
    /// session's (see [`still_running`]), of which the link itself is left
    /// out; `task` is the protocol task the link stands for, if any, so the
    /// note can name it as the runtime knows it.
    pub(super) fn decision_input(
        &self,
        link: &ReadyLink,
        result: String,
        snapshot: &SessionSnapshot,
        still_running: &[Uuid],
        task: Option<&LinkTask>,
        now: DateTime<Utc>,
    ) -> t::DecisionInput {
        // The host's "now" is never before the window's opening: the window
        // was stamped by the approving replica, whose clock may run a few
        // milliseconds ahead of this one (see `Window::is_open_at`), and a
        // policy must not see an approval as lying in the future.
        let opened = snapshot.window.as_ref().map(|w| w.opened_at);
        // Whole microseconds, as the database keeps times: the decision log
        // keeps `now` there and must give back the input the policy saw.
        let now = DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now);
        t::DecisionInput {
            now: opened.map_or(now, |at| now.max(at)).into(),
            execution: t::Execution {
                id: link.execution_id.to_string(),
                status: link.status.clone(),
                result: cut_middle(result, self.config.max_result_bytes),
                finished_at: link.finished_at.map(Into::into),
                task: task.map(|task| t::TaskRef {
                    protocol: match task.source {
                        TaskSource::Mcp => t::TaskProtocol::Mcp,
                        TaskSource::A2a => t::TaskProtocol::A2a,
                    },
                    id: task.task_id.clone(),
                }),
            },
            session: t::Session {
                id: snapshot.session_id.to_string(),
                // A denied window is no window to the policy.
                window: snapshot
                    .window
                    .as_ref()
                    .filter(|w| w.closed_at.is_none())
                    .map(t::Window::from),
                continuations_in_window: u32::try_from(snapshot.continuations_in_window)
                    .unwrap_or(0),
                still_running: still_running
                    .iter()
                    .filter(|id| **id != link.execution_id)
                    .map(Uuid::to_string)
                    .collect(),
            },
            attempts: 0,
        }
    }
}

/// Keeps the head and tail of `text` within `limit` bytes; a text within
/// the limit is moved, not copied.
pub(crate) fn cut_middle(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let half = limit / 2;
    let head = (0..=half)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let tail = (text.len() - half..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    format!(
        "{}\n[… {} bytes cut by nomos-continue …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_middle_keeps_both_ends_on_char_boundaries() {
        let text = format!("START{}END", "é".repeat(1000));
        let cut = cut_middle(text, 100);
        assert!(cut.starts_with("START") && cut.ends_with("END") && cut.contains("bytes cut"));
        assert_eq!(cut_middle("short".into(), 100), "short");
    }
}
