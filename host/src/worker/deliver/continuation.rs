//! The agent's view of a continuation, built when it is sent: each
//! execution's status and result, and how the policy classifies it; and a
//! claimed batch readied for its calls.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::record::Recorded;
use super::{DeliverReport, Deliverer, Ready};
use crate::agent::{Continuation, ExecutionReport};
use crate::classes::{still_running, Class};
use crate::policy::types as t;
use crate::store::{
    dedup, Claim, Delivery, DeliveryKind, Execution, InputParts, LinkTrace, ReadyLink,
};
use crate::worker::handover::Read;
use crate::worker::recorded::input_parts;
use crate::worker::WorkerError;
use uuid::Uuid;

impl Deliverer {
    /// Readies a claimed batch for its calls: the claims no longer held are
    /// set aside (see [`Self::still_held`]), and the continuations are
    /// built together (two reads for the batch), while the trace contexts
    /// the calls are made under are read (one).
    /// `read` is what the plan read for this batch, if it claimed it (see
    /// [`Claimed`](crate::worker::handover::Claimed)): what it holds is not
    /// read again.
    pub(super) async fn prepare(
        &self,
        batch: Vec<Delivery>,
        read: Option<Read>,
        soul: &str,
        report: &mut DeliverReport,
    ) -> Vec<(Delivery, Claim, Result<Ready, String>, Option<LinkTrace>)> {
        let claims: Vec<Claim> = batch.iter().filter_map(Delivery::claim).collect();
        let held = self.still_held(&claims).await;
        let mut ready = Vec::with_capacity(batch.len());
        for delivery in batch {
            let Some(claim) = delivery.claim() else {
                continue;
            };
            if held.contains(&claim) {
                ready.push((delivery, claim));
            } else {
                self.lock_in_flight().remove(&claim);
                report.tally(self, Recorded::LeaseLost);
            }
        }
        let wanted: Vec<&Delivery> = ready
            .iter()
            .map(|(d, _)| d)
            .filter(|d| d.kind == DeliveryKind::Continuation && self.lost_claims(d).is_none())
            .collect();
        let mut built: HashMap<Uuid, Continuation> = HashMap::with_capacity(wanted.len());
        let mut unloaded = String::from("not loaded");
        let (executions, traces) = read.map(|r| (r.executions, r.traces)).unzip();
        let (continuations, mut traces) = tokio::join!(
            self.continuations(&wanted, soul, executions),
            self.traces(ready.iter().map(|(d, _)| d), traces)
        );
        match self.loads.observe(continuations) {
            Ok(continuations) => built.extend(wanted.iter().map(|d| d.id).zip(continuations)),
            Err(e) => unloaded = e.to_string(),
        }
        ready
            .into_iter()
            .map(|(delivery, claim)| {
                let prepared = match (delivery.kind, built.remove(&delivery.id)) {
                    (DeliveryKind::Notice, _) => Ok(Ready::Notice),
                    (DeliveryKind::Continuation, Some(c)) => Ok(Ready::Continuation(Box::new(c))),
                    (DeliveryKind::Continuation, None) => Err(unloaded.clone()),
                };
                let trace = traces.remove(&delivery.id);
                (delivery, claim, prepared, trace)
            })
            .collect()
    }

    /// The agent's view of each of `deliveries` (continuations), in order:
    /// each execution's latest status and result, and how the policy
    /// classifies it. The executions of all of them are loaded in one query
    /// and each distinct status's class is read from those kept for the
    /// active revision (the policy is asked only about a status it has not
    /// classified): a claimed batch costs two round trips, not two per
    /// continuation, nor one per execution. With `read` (the plan's read of
    /// them), the executions are not read again if each was read finished
    /// (and so cannot have changed since).
    pub(super) async fn continuations(
        &self,
        deliveries: &[&Delivery],
        soul: &str,
        read: Option<HashMap<Uuid, Execution>>,
    ) -> Result<Vec<Continuation>, WorkerError> {
        let ids: Vec<Uuid> = deliveries
            .iter()
            .flat_map(|d| dedup(&d.execution_ids))
            .collect();
        if ids.is_empty() {
            return Ok(deliveries
                .iter()
                .map(|d| continuation(d, Vec::new(), soul))
                .collect());
        }
        let loaded = match read.and_then(|read| finished_among(read, &ids)) {
            Some(loaded) => loaded,
            None => self.store.executions(&ids).await?,
        };
        let statuses: Vec<String> = loaded.iter().map(|e| e.status.clone()).collect();
        let outcomes: HashMap<String, String> = self
            .classes
            .classes(statuses)
            .await?
            .into_iter()
            .map(|(status, class)| {
                let outcome = match class {
                    Class::Terminal(o) => o.as_str(),
                    _ => "unknown",
                };
                (status, outcome.to_string())
            })
            .collect();
        // An execution is moved into the last continuation that names it
        // and cloned only for the others (results can be large).
        let mut uses: HashMap<Uuid, usize> = HashMap::new();
        for id in &ids {
            *uses.entry(*id).or_default() += 1;
        }
        let mut by_id: HashMap<Uuid, Execution> = loaded.into_iter().map(|e| (e.id, e)).collect();
        let now = self.clock.now();
        let mut out = Vec::with_capacity(deliveries.len());
        for delivery in deliveries {
            let mut executions = Vec::with_capacity(delivery.execution_ids.len());
            let mut finished_latest: Option<DateTime<Utc>> = None;
            for id in dedup(&delivery.execution_ids) {
                let left = uses.get_mut(&id).map_or(0, |n| {
                    *n -= 1;
                    *n
                });
                let execution = if left == 0 {
                    by_id.remove(&id)
                } else {
                    by_id.get(&id).cloned()
                };
                let Some(execution) = execution else {
                    continue;
                };
                let finished = execution.finished_at.unwrap_or(execution.updated_at);
                finished_latest = Some(finished_latest.map_or(finished, |f| f.max(finished)));
                let outcome = outcomes
                    .get(&execution.status)
                    .cloned()
                    .unwrap_or_else(|| "unknown".to_string());
                executions.push(ExecutionReport {
                    id: execution.id,
                    status: execution.status,
                    outcome,
                    result: execution.result,
                });
            }
            if let Some(finished) = finished_latest {
                let latency = now - finished;
                self.metrics
                    .pickup_latency(latency.to_std().unwrap_or(Duration::ZERO));
            }
            out.push(continuation(delivery, executions, soul));
        }
        Ok(out)
    }
}

/// The executions of `ids` in `read`, if every one of them is there and
/// finished; `None` sends the caller back to the store.
fn finished_among(mut read: HashMap<Uuid, Execution>, ids: &[Uuid]) -> Option<Vec<Execution>> {
    let all = (ids.iter()).all(|id| read.get(id).is_some_and(|e| e.finished_at.is_some()));
    all.then(|| ids.iter().filter_map(|id| read.remove(id)).collect())
}

fn continuation(delivery: &Delivery, executions: Vec<ExecutionReport>, soul: &str) -> Continuation {
    Continuation {
        session_id: delivery.session_id,
        idempotency_key: delivery.idempotency_key.clone(),
        executions,
        note: delivery.note.clone(),
        soul: soul.to_string(),
        // Set at the call, to its `deliver` span's context.
        traceparent: None,
        tracestate: None,
    }
}

impl Deliverer {
    /// Before a retry, asks the policy again about each execution, now with
    /// the failed attempts the delivery has had (shortages not counted: an
    /// agent that was down did not answer), so a policy can give up on a
    /// continuation the runtime keeps refusing. Returns the reason if the
    /// policy now drops any of them; a policy that fails here does not stop
    /// the retry (its fault is not the delivery's).
    pub(super) async fn redecide(
        &self,
        delivery: &Delivery,
    ) -> Result<Option<String>, WorkerError> {
        let failed = delivery.attempts - delivery.shortages;
        if failed <= 0 {
            return Ok(None);
        }
        let now = self.clock.now();
        let loaded = self.store.executions(&delivery.execution_ids).await?;
        let snapshot = self
            .store
            .session_snapshot(delivery.session_id, now)
            .await?;
        // As before: only the links whose execution has not reported count
        // as running here.
        let running = still_running(&snapshot, |_| true);
        let tasks = self.store.link_tasks(&delivery.execution_ids).await?;
        let inputs: Vec<t::DecisionInput> = loaded
            .into_iter()
            .map(|e| {
                let link = ReadyLink {
                    execution_id: e.id,
                    session_id: delivery.session_id,
                    linked_at: e.updated_at,
                    status: e.status,
                    result_bytes: i64::try_from(e.result.len()).unwrap_or(i64::MAX),
                    updated_at: e.updated_at,
                    finished_at: e.finished_at,
                };
                let task = tasks.get(&link.execution_id);
                let mut input =
                    self.decision_input(&link, e.result, &snapshot, &running, task, now);
                input.attempts = u32::try_from(failed).unwrap_or(0);
                input
            })
            .collect();
        let logged: Vec<(Uuid, InputParts)> = match self.config.log_decisions {
            true => (inputs.iter())
                .filter_map(|i| {
                    let parts = input_parts(i, self.config.max_result_bytes)?;
                    Some((i.execution.id.parse().ok()?, parts))
                })
                .collect(),
            false => Vec::new(),
        };
        let evaluated = self.policy.decide_batch(inputs).await?;
        let entries = crate::worker::journal::redecided(delivery, logged, &evaluated);
        let written = self.store.record_decisions(&entries, now).await;
        if self.decision_log.observe(written).is_err() {
            self.metrics.decision_log_failed();
        }
        Ok(evaluated.value.ok().and_then(|decisions| {
            decisions.into_iter().find_map(|d| match d {
                t::Decision::Drop { reason } => Some(reason),
                _ => None,
            })
        }))
    }
}
