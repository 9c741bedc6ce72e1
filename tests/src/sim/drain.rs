//! The drain: calm weather, every status reported, every held call
//! released, and time moving on until no pass finds anything to do; the
//! promises are judged after it.

use chrono::Duration;
use nomos_continue::store::DeliveryState;

use super::reports::report_next;
use super::{lock, Sim};

/// The most statuses a script holds (running ones, a terminal one, a late
/// regression).
const STATUSES: usize = 5;

impl Sim {
    /// Calm weather, every status reported, every held call released, and
    /// time moving on until no pass finds anything to do.
    pub(super) async fn drain(&mut self) {
        self.end_refusal().await;
        {
            let mut weather = lock(&self.runtime.weather);
            weather.calm = true;
            weather.down_until = None;
        }
        self.operator
            .calm
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for incarnation in &mut self.workers {
            if let Some(pass) = incarnation.pass.take() {
                // Held calls must be let go for the pass to end.
                while !pass.is_finished() {
                    self.runtime.release_held();
                    tokio::task::yield_now().await;
                }
                let _ = pass.await;
            }
        }
        self.post_refused_tool_results().await;
        for i in 0..self.executions.len() {
            // A report the store did not take is sent again; a few times,
            // since the store takes writes again by now.
            let mut tries = 0;
            while !self.executions[i].script.is_empty() && tries < 3 * STATUSES {
                tries += 1;
                let execution = &mut self.executions[i];
                let broken = report_next(&self.store, &self.policy, &self.clock, execution).await;
                self.broken.extend(broken);
            }
            if !self.executions[i].script.is_empty() {
                let id = self.executions[i].id;
                self.broken.push(format!(
                    "the store never took the reports of execution {id}"
                ));
            }
        }
        for _ in 0..60 {
            self.advance(Duration::seconds(61)).await;
            let mut busy = false;
            for incarnation in &self.workers {
                match incarnation.worker.run_once().await {
                    Ok(r) => {
                        self.passes.policy_failures(r.plan.policy_failures);
                        busy |= r.plan.planned
                            + r.plan.dropped
                            + r.deliver.attempted
                            + r.deliver.dropped_unsent
                            > 0;
                    }
                    Err(e) => self.passes.failed("worker", &e),
                }
            }
            busy |= self.notify().await;
            // A pass with nothing to do is not the end while a retry is
            // still waiting for its time (an agent's `Retry-After` may be
            // longer than one step).
            if !busy && !self.anything_pending().await {
                break;
            }
        }
    }

    /// Whether any session's ledger still holds a pending delivery, or
    /// the operator channel a copy to send.
    async fn anything_pending(&self) -> bool {
        if self.store.pending_operator_notices().await.unwrap_or(0) > 0 {
            return true;
        }
        for session in &self.sessions {
            match self.store.session_summary(*session).await {
                Ok(summary) => {
                    if (summary.deliveries.iter()).any(|d| d.state == DeliveryState::Pending) {
                        return true;
                    }
                }
                // The check after the drain reports an unreadable session.
                Err(_) => return false,
            }
        }
        false
    }

    /// The tool results the store refused or a failover lost, posted
    /// again as the runtime does after a 503: links and task registrations.
    async fn post_refused_tool_results(&mut self) {
        for i in 0..self.executions.len() {
            if self.executions[i].relink && !self.post_again(i).await {
                let id = self.executions[i].id;
                self.broken
                    .push(format!("the store never took the tool result of {id}"));
            }
        }
    }
}
