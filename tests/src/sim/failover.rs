//! A failover that loses the store's last commits
//! ([`SimConfig::losing_store`](super::SimConfig::losing_store)).
//!
//! The standby (`store::testing::replicate`) is brought up to date right
//! before each agent call, which is what the worker's standby fence
//! guarantees of a real one, and lags otherwise; a failover puts it in
//! place of the tables, so everything committed since the last call is
//! gone: statuses, links, approvals and denials, plans, records of accepted
//! calls, notices. Then the driver does what a runtime and an operator are
//! told to do after a failover ("What a failover can lose" in
//! `docs/operations.md`): post lost tool results and report lost statuses
//! again, deny again a window whose denial was lost, approve again one
//! whose approval was. What the engine lost, it must mend alone, and the
//! promises are judged as after any run, with the allowances the same
//! page states: a call whose record or lease renewal was lost may be sent
//! again under its own key; an execution whose terminal status was lost is
//! running again until reported again, and a continuation sent meanwhile
//! may name it so; and a notice lost after its copy reached the operator's
//! channel may reach it again under another key.

use std::collections::{HashMap, HashSet};

use nomos_continue::clock::Clock;
use nomos_continue::store::testing::{fail_over, replicate};
use nomos_continue::store::{Delivery, DeliveryKind, DeliveryState, Route, SessionSummary};
use uuid::Uuid;

use super::agent::Answer;
use super::reports::report_next;
use super::{lock, push, Sim};

impl Sim {
    /// Without the fence (`unfenced_standby`), the standby catches up at
    /// the driver's long waits, whatever calls went out meanwhile.
    pub(super) async fn standby_streams(&mut self) {
        if !(self.config.losing_store && self.config.unfenced_standby) {
            return;
        }
        if let Err(e) = replicate(&self.store, || true).await {
            self.broken
                .push(format!("could not bring the standby up to date: {e}"));
        }
    }

    /// The primary fails over to the lagging standby.
    pub(super) async fn fail_over(&mut self) {
        self.record(format_args!("fail over"));
        // Calls that asked before the failover was counted were fenced:
        // their claims are on the standby.
        let runtime = &self.runtime;
        let every_ask = || {
            let asked = runtime
                .standby_asked
                .load(std::sync::atomic::Ordering::SeqCst);
            runtime.standby_serves(asked)
        };
        if let Err(e) = fail_over(&self.store, every_ask).await {
            self.broken.push(format!("could not fail over: {e}"));
            return;
        }
        self.faults += 1;
        self.failovers += 1;
        // One read of every session as the failover left it.
        let mut summaries = Vec::new();
        for session in &self.sessions {
            match self.store.session_summary(*session).await {
                Ok(summary) => summaries.push(summary),
                Err(e) => {
                    let what = format!("could not read session {session} after a failover: {e}");
                    self.broken.push(what);
                    return;
                }
            }
        }
        let before = self.lost_records;
        self.lost_in_the_ledger(&summaries).await;
        if std::env::var_os("SIM_LOG").is_some() {
            eprintln!(
                "failover at call #{}: {} records of accepted calls lost, notices lost {:?}",
                self.runtime.tick(),
                self.lost_records - before,
                self.lost_notices
            );
        }
        self.windows_again().await;
        let linked = (summaries.iter())
            .flat_map(|s| s.links.iter().map(|l| l.execution_id))
            .collect();
        self.tool_results_and_reports_again(&linked).await;
    }

    /// Finds what the failover took from the ledger that a promise is
    /// judged on: the records of calls the agent accepted and the lease
    /// renewals of calls in flight (their keys may be sent again), and
    /// notices whose copy the operator's channel carried.
    async fn lost_in_the_ledger(&mut self, summaries: &[SessionSummary]) {
        let ledger: HashMap<&str, &Delivery> = (summaries.iter())
            .flat_map(|s| s.deliveries.iter())
            .map(|d| (d.idempotency_key.as_str(), d))
            .collect();
        // A renewal of a lease is lost like any commit: a call in flight
        // may outlive its lease as restored, and another worker may send
        // its key again.
        let held: Vec<_> = (self.workers.iter())
            .flat_map(|w| w.worker.claims_in_flight())
            .collect();
        self.mark_unknown(held).await;
        for call in self.runtime.calls() {
            let recorded = ledger
                .get(call.key.as_str())
                .is_some_and(|d| d.state == DeliveryState::Delivered);
            if call.answer == Answer::Accepted && !recorded && self.unknown.insert(call.key) {
                self.lost_records += 1;
            }
        }
        for key in lock(&self.operator.keys).iter() {
            let kept = ledger
                .get(key.as_str())
                .is_some_and(|d| d.kind == DeliveryKind::Notice);
            if !kept {
                self.lost_notices.insert(key.clone());
            }
        }
    }

    /// Each window as the operator last left it: a window the failover
    /// opened again (its denial lost) is denied again at once, one it closed
    /// or shortened (its approval lost) approved again until the end the
    /// operator gave. The model notes the window the store holds first: it
    /// is what the engine judges by until the operator acts.
    async fn windows_again(&mut self) {
        let now = self.clock.now();
        for session in self.sessions.clone() {
            let stored = match self.store.window(session).await {
                Ok(w) => w
                    .filter(|w| w.closed_at.is_none() && now < w.expires_at)
                    .map(|w| w.expires_at),
                Err(e) => {
                    self.broken
                        .push(format!("could not read the window of {session}: {e}"));
                    continue;
                }
            };
            let meant = lock(&self.windows).open_until(session, now);
            if stored == meant {
                continue;
            }
            if let Some(until) = stored {
                lock(&self.windows).approved(session, now, until);
                if let Ok(Some(_)) = self.store.deny(session, now).await {
                    lock(&self.windows).denied(session, now);
                }
            }
            if let Some(until) = meant {
                if let Ok(w) = (self.store)
                    .approve(session, Route::Button, now, until - now)
                    .await
                {
                    lock(&self.windows).approved(session, w.opened_at, w.expires_at);
                }
            }
        }
    }

    /// The tool results whose links the failover lost (not in `linked`)
    /// are posted again (every task registered again: its token may be
    /// lost alone), and the terminal statuses it lost are reported again.
    async fn tool_results_and_reports_again(&mut self, linked: &HashSet<Uuid>) {
        let ids: Vec<_> = self.executions.iter().map(|e| e.id).collect();
        let statuses: HashMap<_, _> = match self.store.executions(&ids).await {
            Ok(rows) => rows.into_iter().map(|r| (r.id, r.status)).collect(),
            Err(e) => {
                let what = format!("could not read the executions after a failover: {e}");
                self.broken.push(what);
                return;
            }
        };
        for i in 0..self.executions.len() {
            let execution = &mut self.executions[i];
            if execution.linked && !linked.contains(&execution.id) {
                execution.linked = false;
                execution.relink = true;
            }
            let lost = (execution.first_terminal.as_ref())
                .is_some_and(|first| statuses.get(&execution.id) != Some(first));
            if lost {
                self.relapsed.insert(execution.id);
                if let Some(report) = execution.terminal_report.take() {
                    execution.first_terminal = None;
                    execution.script.push(report);
                }
            }
            if execution.relink || execution.task.is_some() {
                self.post_again(i).await;
            }
            if lost {
                let execution = &mut self.executions[i];
                let broken = report_next(&self.store, &self.policy, &self.clock, execution).await;
                self.broken.extend(broken);
            }
        }
    }

    /// Posts execution `i`'s tool result again if its link is lost, and
    /// registers its task again; whether the store took both. What it did
    /// not take stays to post (`relink`), as after a refusal.
    pub(super) async fn post_again(&mut self, i: usize) -> bool {
        let (session, id) = (self.executions[i].session, self.executions[i].id);
        let now = self.clock.now();
        let linked =
            self.executions[i].linked || self.store.link(session, &[id], now).await.is_ok();
        let registered = match self.executions[i].task.clone() {
            Some(task) => push::register(&self.store, id, &task, &self.clock).await,
            None => true,
        };
        let execution = &mut self.executions[i];
        execution.linked = linked;
        execution.relink = !(linked && registered);
        linked && registered
    }
}
