//! The stuck watch: an execution linked in an open assent window that has
//! not finished after a threshold (`serve --stuck-after`, ten minutes by
//! default) gets one notice, and one more when its window is about to close
//! with it still running. Without it, an execution that reports `running`
//! for an hour is silent until the window closes, and then its result is
//! dropped.
//!
//! Why the host and not the policy: the policy decides about finished
//! executions; a threshold on time is an operator's setting. Why notices
//! keyed by the execution: every replica runs the watch, and the notice
//! table's unique key makes the second writer's insert a no-op.

use std::sync::Arc;
use std::time::Duration;

use chrono::SecondsFormat;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::store::{NoticeAbout, Store, StoreError, StuckExecution, STUCK_CLOSING_KEY, STUCK_KEY};

/// The default threshold.
pub const DEFAULT_STUCK_AFTER: Duration = Duration::from_secs(600);
/// How close to its window's end a stuck execution gets its second notice:
/// enough for a person to extend the window.
pub const CLOSING_MARGIN: Duration = Duration::from_secs(120);
/// Written as the notices' policy revision: the host decided, not a policy.
pub const STUCK_REVISION: &str = "host:stuck-watch";

/// Writes the notices about stuck executions on an interval.
pub struct StuckWatch {
    store: Store,
    clock: Arc<dyn Clock>,
    after: Duration,
    interval: Duration,
}

impl StuckWatch {
    /// A watch with threshold `after`, looking every `interval`.
    pub fn new(store: Store, clock: Arc<dyn Clock>, after: Duration, interval: Duration) -> Self {
        Self {
            store,
            clock,
            after,
            interval,
        }
    }

    /// One pass; returns how many notices it wrote.
    pub async fn run_once(&self) -> Result<u64, StoreError> {
        let now = self.clock.now();
        let after = chrono::Duration::from_std(self.after).unwrap_or(chrono::Duration::minutes(10));
        let margin = chrono::Duration::from_std(CLOSING_MARGIN).unwrap_or_default();
        let mut written = 0;
        for stuck in self.store.stuck_executions(now, after).await? {
            let closing = stuck.window_expires_at - now <= margin;
            let mut notices = Vec::new();
            if !stuck.noticed {
                notices.push((STUCK_KEY, still_running(&stuck, now)));
            }
            if closing && !stuck.closing_noticed {
                notices.push((STUCK_CLOSING_KEY, window_closing(&stuck)));
            }
            for (prefix, message) in notices {
                let about = NoticeAbout {
                    session_id: stuck.session_id,
                    execution_ids: std::slice::from_ref(&stuck.execution_id),
                    policy_revision: STUCK_REVISION,
                };
                let key = format!("{prefix}{}", stuck.execution_id);
                if self.store.record_notice(about, &key, &message, now).await? {
                    written += 1;
                }
            }
        }
        if written > 0 {
            tracing::info!(written, "notices about stuck executions");
        }
        Ok(written)
    }

    /// Runs passes until `shutdown` is cancelled.
    pub async fn run(self, shutdown: CancellationToken) {
        super::every(self.interval, shutdown, "stuck watch pass", || {
            self.run_once()
        })
        .await;
    }
}

/// Whole minutes, for people.
fn minutes(d: chrono::Duration) -> i64 {
    d.num_minutes().max(0)
}

fn still_running(stuck: &StuckExecution, now: chrono::DateTime<chrono::Utc>) -> String {
    let status = stuck.status.as_deref().unwrap_or("no status reported yet");
    format!(
        "Execution {} of session {} has run for {} min without finishing (status: {status}); \
         its assent window is open until {}.",
        stuck.execution_id,
        stuck.session_id,
        minutes(now - stuck.linked_at),
        stuck
            .window_expires_at
            .to_rfc3339_opts(SecondsFormat::Secs, true)
    )
}

fn window_closing(stuck: &StuckExecution) -> String {
    format!(
        "Execution {} of session {} is still running and its assent window closes at {}: \
         if it finishes after that, its result will not be continued unless the plan is \
         approved again.",
        stuck.execution_id,
        stuck.session_id,
        stuck
            .window_expires_at
            .to_rfc3339_opts(SecondsFormat::Secs, true)
    )
}
