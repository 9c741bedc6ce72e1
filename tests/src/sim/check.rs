//! The promises, judged after the drain against the ledger, the driver's
//! model and the runtime's record of calls.

use std::collections::{HashMap, HashSet};

use nomos_continue::store::{DeliveryKind, DeliveryState, Settlement};
use uuid::Uuid;

use super::agent::{by_key, Answer};
use super::{lock, Sim, SimReport};

/// The workers' retry budget (the default).
const RETRY_BUDGET: chrono::Duration = chrono::Duration::minutes(15);

pub(super) async fn check(sim: &Sim) -> SimReport {
    let mut report = SimReport::default();
    let mut v: Vec<String> = sim.runtime.violations();
    v.extend(sim.runtime.window_violations());
    let calls = sim.runtime.calls();
    report.calls = calls.len();
    let keyed = by_key(&calls);

    // P2: no call of a key starts after the agent answered a call of it
    // with a clean acceptance, unless that key's call was in flight on a
    // worker that was killed or stalled (its outcome unknown to the engine).
    for (key, calls) in &keyed {
        let accepted = calls
            .iter()
            .filter(|c| c.answer == Answer::Accepted)
            .map(|c| c.answered)
            .min();
        if let Some(at) = accepted {
            let again = calls.iter().filter(|c| c.started > at).count();
            if again > 0 && !sim.unknown.contains(*key) {
                let answers = evidence(calls);
                v.push(format!(
                    "P2: key {key} called {again} more time(s) after the agent accepted it: {answers:?}"
                ));
            }
        }
    }
    // P2: the agent answers at most one call of a key with a clean 2xx
    // (overlapping calls included), outside the same exemption.
    for (key, calls) in &keyed {
        let clean = calls
            .iter()
            .filter(|c| c.answer == Answer::Accepted)
            .count();
        if clean > 1 && !sim.unknown.contains(*key) {
            let answers = evidence(calls);
            v.push(format!("P2: key {key} accepted {clean} times: {answers:?}"));
        }
    }
    // P2: one key per execution.
    let mut keys_of: HashMap<Uuid, HashSet<&str>> = HashMap::new();
    for call in calls.iter().filter(|c| c.continuation) {
        for (id, _) in &call.executions {
            keys_of.entry(*id).or_default().insert(call.key.as_str());
        }
    }
    for (id, keys) in &keys_of {
        if keys.len() > 1 {
            v.push(format!("P2: execution {id} sent under {} keys", keys.len()));
        }
    }

    let mut ledger = Vec::new();
    let mut links = HashMap::new();
    for session in &sim.sessions {
        match sim.store.session_summary(*session).await {
            Ok(summary) => {
                for link in summary.links {
                    links.insert(link.execution_id, link);
                }
                ledger.extend(summary.deliveries);
            }
            Err(e) => v.push(format!("could not read session {session}: {e}")),
        }
    }
    let notices_about = |id: Uuid| {
        ledger
            .iter()
            .filter(|d| d.kind == DeliveryKind::Notice && !d.idempotency_key.starts_with("u-"))
            .filter(|d| d.execution_ids.contains(&id))
            .count()
    };

    for execution in &sim.executions {
        let id = execution.id;
        let link = links.get(&id);
        // P4: the first terminal status stays, in the store and in what the
        // agent was told.
        if let Some(first) = &execution.first_terminal {
            match sim
                .store
                .executions(&[id])
                .await
                .map(|found| found.into_iter().next())
            {
                Ok(Some(row)) if row.status != *first => v.push(format!(
                    "P4: execution {id} first reported {first:?}, now reads {:?}",
                    row.status
                )),
                Err(e) => v.push(format!("could not read execution {id}: {e}")),
                _ => {}
            }
            // A failover that lost the terminal status made it running
            // again for a while: a continuation may have named it so.
            let relapsed = sim.relapsed.contains(&id);
            for call in calls.iter().filter(|c| c.continuation && !relapsed) {
                for (eid, status) in &call.executions {
                    if *eid == id && status != first {
                        v.push(format!(
                            "P4: execution {id} sent as {status:?}, first terminal {first:?}"
                        ));
                    }
                }
            }
        }
        let Some(link) = link else {
            if execution.linked {
                v.push(format!("linked execution {id} has no link row"));
            }
            continue;
        };
        match (&execution.first_terminal, link.outcome) {
            // P1: finished, so settled exactly one way.
            (Some(_), None) => v.push(format!(
                "P1: finished execution {id} is not settled ({:?})",
                link.state()
            )),
            (Some(_), Some(Settlement::Continued)) => {
                report.continued += 1;
                let delivered = link
                    .delivery_id
                    .and_then(|d| ledger.iter().find(|x| x.id == d));
                match delivered {
                    Some(d) if d.state == DeliveryState::Delivered => {
                        let accepted = keyed
                            .get(d.idempotency_key.as_str())
                            .is_some_and(|cs| cs.iter().any(|c| c.answer == Answer::Accepted));
                        if !accepted {
                            v.push(format!("P1: execution {id} marked continued but the agent never accepted key {}", d.idempotency_key));
                        }
                    }
                    other => v.push(format!(
                        "P1: execution {id} continued without a delivered continuation: {other:?}"
                    )),
                }
            }
            (Some(_), Some(outcome)) => {
                if outcome == Settlement::Dropped {
                    report.dropped += 1;
                } else {
                    report.failed += 1;
                }
                let n = notices_about(id);
                if n != 1 {
                    v.push(format!("P1: execution {id} {outcome:?} with {n} notices"));
                }
            }
            (None, Some(Settlement::Continued)) => {
                v.push(format!(
                    "P4: execution {id} continued without a terminal status"
                ));
            }
            (None, _) => {}
        }
    }

    // P6: nothing failed for a shortage within the retry budget; a failure
    // needs a refusal (404) of its key, a worker that kept dying under it,
    // or failed calls spanning the whole budget.
    for d in ledger.iter().filter(|d| d.state == DeliveryState::Failed) {
        let refused = keyed
            .get(d.idempotency_key.as_str())
            .is_some_and(|cs| cs.iter().any(|c| c.answer == Answer::Permanent));
        let crash_loop = d
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("keeps dying"));
        let budget_spent = d
            .first_failed_at
            .is_some_and(|first| d.updated_at - first >= RETRY_BUDGET);
        if !refused && !crash_loop && !budget_spent {
            v.push(format!(
                "P6: delivery {} failed without a refusal: {:?}",
                d.id, d.last_error
            ));
        }
    }
    // P5: the default policy fails on no input.
    let failures = sim.passes.counts().policy_failures;
    if failures > 0 {
        v.push(format!("P5: the policy failed on {failures} inputs"));
    }
    // Drained: nothing pending is left behind.
    for d in ledger.iter().filter(|d| d.state == DeliveryState::Pending) {
        v.push(format!(
            "P1: delivery {} ({:?}) still pending after the drain: {} attempts, \
             next at {}, lease {:?} to {:?}, last error {:?}",
            d.id,
            d.kind,
            d.attempts,
            d.next_attempt_at,
            d.lease_owner,
            d.lease_expires_at,
            d.last_error
        ));
    }
    operator_channel(sim, &ledger, &mut report, &mut v).await;
    report.violations = v;
    report
}

/// Each call of a key: its answer, when it started and was answered, and
/// the ledger's row then.
fn evidence(calls: &[&super::agent::Call]) -> Vec<String> {
    (calls.iter())
        .map(|c| {
            format!(
                "{:?} #{}-{} [{}]",
                c.answer, c.started, c.answered, c.evidence
            )
        })
        .collect()
}

/// P1 with the operator's channel: every notice reaches a person (the
/// agent accepted it, or its copy reached the operator's channel) or is
/// one the undelivered count finds; the channel carried nothing but
/// notices; and a channel that was up at the drain got every notice the
/// agent did not take.
async fn operator_channel(
    sim: &Sim,
    ledger: &[nomos_continue::store::Delivery],
    report: &mut SimReport,
    v: &mut Vec<String>,
) {
    use nomos_continue::store::OperatorState;
    let notices: HashMap<&str, &nomos_continue::store::Delivery> = ledger
        .iter()
        .filter(|d| d.kind == DeliveryKind::Notice)
        .map(|d| (d.idempotency_key.as_str(), d))
        .collect();
    for key in lock(&sim.operator.keys).iter() {
        if !notices.contains_key(key.as_str()) && !sim.lost_notices.contains(key) {
            v.push(format!(
                "operator channel carried {key}, which is no notice"
            ));
        }
    }
    for notice in notices.values() {
        let copy = match sim.store.operator_copy(notice.id).await {
            Ok(Some(copy)) => copy,
            Ok(None) => {
                v.push(format!("P1: notice {} has no operator copy", notice.id));
                continue;
            }
            Err(e) => {
                v.push(format!("could not read notice {}'s copy: {e}", notice.id));
                continue;
            }
        };
        let agent_took_it = notice.state == DeliveryState::Delivered;
        match copy.state {
            OperatorState::Delivered => report.told_operator += 1,
            OperatorState::Pending => v.push(format!(
                "P1: notice {}'s operator copy still pending after the drain",
                notice.id
            )),
            // Counted by the undelivered query when the agent did not take
            // it either (its predicate: agent failed or dropped, copy
            // failed, expired or none).
            ended => {
                if !agent_took_it {
                    report.reached_no_one += 1;
                    if !sim.config.operator_down_for_good {
                        v.push(format!(
                            "P1: notice {} reached no one though the operator's channel was up ({ended:?}, {:?})",
                            notice.id, copy.last_error
                        ));
                    }
                }
            }
        }
    }
}
