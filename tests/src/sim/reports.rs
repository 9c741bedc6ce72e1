//! The reports the driver sends: a status as the API would record it, or
//! for an A2A task a push (`push`), some sent twice and some forged.

use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::policy::PolicyRuntime;
use nomos_continue::store::Store;
use rand::seq::SliceRandom;
use rand::Rng;

use super::model::ExecutionModel;
use super::{push, Sim};

impl Sim {
    pub(super) async fn report(&mut self) {
        let pending: Vec<usize> = (0..self.executions.len())
            .filter(|&i| !self.executions[i].script.is_empty())
            .collect();
        let Some(&i) = pending.choose(&mut self.rng) else {
            return;
        };
        let id = self.executions[i].id;
        let broken = if self.rng.gen_bool(0.1) {
            self.record(format_args!("repush {id}"));
            self.repush(i).await
        } else if self.rng.gen_bool(0.05) {
            self.record(format_args!("forge {id}"));
            self.forge(i).await
        } else {
            self.record(format_args!("report {id}"));
            let execution = &mut self.executions[i];
            report_next(&self.store, &self.policy, &self.clock, execution).await
        };
        self.broken.extend(broken);
    }

    /// A task's last push sent again, as an at-least-once sender may.
    async fn repush(&mut self, i: usize) -> Option<String> {
        let execution = &mut self.executions[i];
        let (Some(task), Some((status, result))) =
            (execution.task.clone(), execution.last_push.clone())
        else {
            return None;
        };
        self.faults += 1;
        let sent = (status, result.as_str());
        // A repeat the store refused is lost with nothing lost: the first
        // one was stored.
        push::push(
            &self.store,
            &self.policy,
            &self.clock,
            execution,
            &task,
            sent,
        )
        .await
        .unwrap_or(None)
    }

    /// A push for this task sent with another task's token.
    async fn forge(&mut self, i: usize) -> Option<String> {
        let victim = self.executions[i].id;
        let other = self
            .executions
            .iter()
            .filter(|e| e.id != victim)
            .filter_map(|e| e.task.clone())
            .collect::<Vec<_>>();
        let other = other.choose(&mut self.rng)?;
        self.faults += 1;
        push::forge(&self.store, &self.clock, victim, other).await
    }
}

/// Reports an execution's next scripted status, as the API would: the
/// policy classifies it, and the store keeps the first terminal one. A
/// task's is a push (`push`); what it returns is a broken promise. A
/// report the store refused stays next in the script: its sender sends it
/// again (the drain reports every script to its end).
pub(super) async fn report_next(
    store: &Store,
    policy: &PolicyRuntime,
    clock: &ManualClock,
    execution: &mut ExecutionModel,
) -> Option<String> {
    let (status, result) = execution.script.pop()?;
    if let Some(task) = execution.task.clone() {
        execution.last_push = Some((status, result.clone()));
        let sent = push::push(store, policy, clock, execution, &task, (status, &result)).await;
        return match sent {
            Ok(broken) => broken,
            Err(push::NotStored) => {
                execution.script.push((status, result));
                None
            }
        };
    }
    let finished = matches!(
        policy.classify(status).value,
        Ok(nomos_continue::policy::types::StatusClass::Terminal(_))
    );
    let stored = store
        .upsert_execution_status(execution.id, status, &result, clock.now(), finished)
        .await
        .is_ok();
    if !stored {
        execution.script.push((status, result));
    } else if finished && execution.first_terminal.is_none() {
        execution.first_terminal = Some(status.to_string());
        execution.terminal_report = Some((status, result));
    }
    None
}
