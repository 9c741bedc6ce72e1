//! The worker against both stores, with the built-in policy, an injected
//! clock and an in-process recording agent. Each test says what happens in
//! its case; `served.rs` runs the whole assembled system in process; crash
//! and multi-process behaviour is in `worker_faults.rs`.

use std::sync::{Arc, OnceLock};

mod classes;
mod embedded;
mod fold;
mod group;
mod journal;
mod lease_at_call;
mod person;
mod promises;
mod races;
mod served;
mod shadow;
mod starvation;
mod wake;

use nomos_continue::agent::AgentError;
use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue::store::{DeliveryState, Route, Settlement, Store};
use nomos_continue::worker::{Worker, WorkerConfig};
use nomos_continue_tests::agents::RecordingAgent;

use chrono::Duration;
use uuid::Uuid;

fn policy() -> Arc<PolicyRuntime> {
    static POLICY: OnceLock<Arc<PolicyRuntime>> = OnceLock::new();
    POLICY
        .get_or_init(|| {
            Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy loads"))
        })
        .clone()
}

/// The configuration of a system served in process under `worker_id`,
/// polling often (the tests wait for its calls, not for its poll).
fn served_config(worker_id: &str) -> nomos_continue::server::ServeConfig {
    nomos_continue::server::ServeConfig::default().with_worker(
        WorkerConfig::default()
            .with_worker_id(worker_id.into())
            .with_poll_interval(std::time::Duration::from_millis(50)),
    )
}

struct Rig {
    store: Store,
    clock: Arc<ManualClock>,
    agent: Arc<RecordingAgent>,
    worker: Worker,
    session: Uuid,
}

/// The session's one continuation (the ledger also holds its notices).
fn continuation_of(
    summary: &nomos_continue::store::SessionSummary,
) -> &nomos_continue::store::Delivery {
    summary
        .deliveries
        .iter()
        .find(|d| d.kind == nomos_continue::store::DeliveryKind::Continuation)
        .expect("a continuation")
}

impl Rig {
    /// Another worker on the rig's store, agent and clock.
    fn worker(&self, config: WorkerConfig) -> Worker {
        Worker::builder(self.store.clone(), policy(), self.agent.clone())
            .clock(self.clock.clone())
            .config(config)
            .build()
    }

    fn new(store: Store) -> Self {
        let clock = Arc::new(ManualClock::new(
            "2026-11-30T04:00:00Z"
                .parse::<chrono::DateTime<chrono::Utc>>()
                .expect("a valid time"),
        ));
        let agent = Arc::new(RecordingAgent::default());
        let config = WorkerConfig::default().with_worker_id("test-worker".into());
        let worker = Worker::builder(store.clone(), policy(), agent.clone())
            .clock(clock.clone())
            .config(config)
            .build();
        Self {
            store,
            clock,
            agent,
            worker,
            session: Uuid::new_v4(),
        }
    }

    async fn approve(&self) {
        self.store
            .approve(
                self.session,
                Route::Button,
                self.clock.now(),
                Duration::minutes(30),
            )
            .await
            .expect("approve");
    }

    async fn link(&self, ids: &[Uuid]) {
        self.store
            .link(self.session, ids, self.clock.now())
            .await
            .expect("link");
    }

    /// Reports a status as the API does: finished only when the policy
    /// classifies it as terminal (a "running" that finished the execution
    /// would make the later terminal report a late one: terminal is final).
    async fn report(&self, id: Uuid, status: &str, result: &str) {
        let finished = matches!(
            policy().classify(status).value,
            Ok(nomos_continue::policy::types::StatusClass::Terminal(_))
        );
        self.store
            .upsert_execution_status(id, status, result, self.clock.now(), finished)
            .await
            .expect("status");
    }
}

nomos_continue_tests::on_both_stores!(
    finished_executions_of_a_session_fold_into_one_continuation,
    running_executions_wait_and_are_continued_when_they_finish,
    without_a_window_a_completion_is_dropped_with_one_notice,
    after_a_deny_a_completion_is_not_continued,
    after_the_window_expires_a_completion_is_not_continued,
    the_loop_guard_stops_continuations_at_the_cap,
    a_failed_delivery_is_retried_with_the_same_key_and_blocks_the_session,
    a_permanent_failure_ends_in_a_visible_failed_state,
    an_expired_lease_is_redelivered_with_the_same_key,
    a_delivery_that_keeps_killing_its_worker_ends_failed,
);

/// Two executions finish together: one agent call carries both notes, the
/// ledger records it, the links are continued, and a second pass is idle.
async fn finished_executions_of_a_session_fold_into_one_continuation(store: Store) {
    let rig = Rig::new(store);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    rig.approve().await;
    rig.link(&[a, b]).await;
    rig.report(a, "failed", "ssh: connection refused").await;
    rig.report(b, "completed", "container 101 created").await;

    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!((tick.plan.planned, tick.deliver.delivered), (1, 1));
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(call.session_id, rig.session);
    assert!(
        call.note
            .contains(&format!("execution {a} failed: ssh: connection refused")),
        "{}",
        call.note
    );
    assert!(call
        .note
        .contains(&format!("execution {b} completed: container 101 created")));
    assert!(call.soul.contains("re-invokes you"));
    let mut ids: Vec<Uuid> = call.executions.iter().map(|e| e.id).collect();
    ids.sort();
    let mut want = vec![a, b];
    want.sort();
    assert_eq!(ids, want);

    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    assert!(summary
        .links
        .iter()
        .all(|l| l.outcome == Some(Settlement::Continued)));
    assert_eq!(summary.deliveries.len(), 1);
    assert_eq!(summary.deliveries[0].state, DeliveryState::Delivered);
    assert_eq!(summary.deliveries[0].idempotency_key, call.idempotency_key);
    assert_eq!(summary.window.expect("window").continuations, 1);

    let idle = rig.worker.run_once().await.expect("second pass");
    assert_eq!((idle.plan.planned, idle.deliver.attempted), (0, 0));
    assert_eq!(rig.agent.continuations().len(), 1);
}

/// A running execution is waited for; the later completion is continued
/// and the note lists the other execution still running.
async fn running_executions_wait_and_are_continued_when_they_finish(store: Store) {
    let rig = Rig::new(store);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    rig.approve().await;
    rig.link(&[a, b]).await;
    rig.report(a, "running", "").await;
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!((tick.plan.waiting, tick.plan.planned), (1, 0));
    assert!(rig.agent.continuations().is_empty());

    rig.clock.advance(Duration::seconds(30));
    rig.report(a, "succeeded", "packages installed").await;
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 1);
    let note = &rig.agent.continuations()[0].note;
    assert!(note.starts_with(&format!("execution {a} completed: packages installed")));
    assert!(
        note.contains(&format!("- execution {b}")),
        "b is still running: {note}"
    );
}

/// No approval: the completion is settled as dropped, and exactly one
/// notice reaches the agent runtime, however many passes run.
async fn without_a_window_a_completion_is_dropped_with_one_notice(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.link(&[a]).await;
    rig.report(a, "failed", "boom").await;
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!((tick.plan.dropped, tick.plan.planned), (1, 0));
    for _ in 0..3 {
        rig.worker.run_once().await.expect("pass");
    }
    assert!(rig.agent.continuations().is_empty());
    rig.agent
        .the_one_notice(&[&a.to_string(), "assent window closed"]);
    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    assert_eq!(summary.links[0].outcome, Some(Settlement::Dropped));
}

/// A deny closes the window: a later completion is dropped, not continued.
async fn after_a_deny_a_completion_is_not_continued(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.clock.advance(Duration::minutes(1));
    rig.store
        .deny(rig.session, rig.clock.now())
        .await
        .expect("deny");
    rig.report(a, "completed", "ok").await;
    rig.worker.run_once().await.expect("pass");
    assert!(rig.agent.continuations().is_empty());
    assert_eq!(rig.agent.notices().len(), 1);
}

/// Thirty minutes after the approval the window is closed.
async fn after_the_window_expires_a_completion_is_not_continued(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.clock.advance(Duration::minutes(30));
    rig.report(a, "completed", "ok").await;
    rig.worker.run_once().await.expect("pass");
    assert!(rig.agent.continuations().is_empty());
    rig.agent.the_one_notice(&["expired"]);
}

/// The policy's cap (20 per window): the 21st completion is dropped by the
/// loop guard.
async fn the_loop_guard_stops_continuations_at_the_cap(store: Store) {
    let rig = Rig::new(store);
    rig.approve().await;
    for i in 0..21 {
        let id = Uuid::new_v4();
        rig.link(&[id]).await;
        rig.report(id, "failed", &format!("attempt {i} failed"))
            .await;
        rig.clock.advance(Duration::seconds(10));
        rig.worker.run_once().await.expect("pass");
    }
    assert_eq!(rig.agent.continuations().len(), 20);
    rig.agent.the_one_notice(&["loop guard"]);
}

/// A 5xx-like failure: the delivery stays pending with a backoff; while it
/// is in flight a second completion of the session waits; the retry carries
/// the same idempotency key; then the second completion goes out.
async fn a_failed_delivery_is_retried_with_the_same_key_and_blocks_the_session(store: Store) {
    let rig = Rig::new(store);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    rig.approve().await;
    rig.link(&[a, b]).await;
    rig.agent
        .script([Err(AgentError::Retryable("503 from runtime".into()))]);
    rig.report(a, "failed", "first").await;
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.retried, 1);

    rig.report(b, "completed", "second").await;
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(
        (tick.plan.busy, tick.deliver.attempted),
        (1, 0),
        "backoff not over, session busy"
    );

    rig.clock.advance(Duration::seconds(2));
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 1);
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 1);
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 3);
    assert_eq!(
        calls[0].idempotency_key, calls[1].idempotency_key,
        "the retry reuses the key"
    );
    assert_ne!(calls[1].idempotency_key, calls[2].idempotency_key);
    assert_eq!(calls[2].executions[0].id, b);
}

/// A 4xx-like failure is not retried: the continuation and its link end
/// `failed`, visible in the summary.
async fn a_permanent_failure_ends_in_a_visible_failed_state(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.agent
        .script([Err(AgentError::Permanent("404 unknown session".into()))]);
    rig.report(a, "failed", "boom").await;
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.gave_up, 1);
    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    let continuation = continuation_of(&summary);
    assert_eq!(continuation.state, DeliveryState::Failed);
    assert_eq!(summary.links[0].outcome, Some(Settlement::Failed));
    assert!(continuation
        .last_error
        .as_deref()
        .unwrap_or("")
        .contains("404"));
    rig.clock.advance(Duration::hours(1));
    rig.worker.run_once().await.expect("pass");
    assert_eq!(
        rig.agent.continuations().len(),
        1,
        "no retry after a permanent failure"
    );
}

/// A worker that claimed a delivery and died: once its lease expires,
/// another worker delivers it with the same key.
async fn an_expired_lease_is_redelivered_with_the_same_key(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.report(a, "failed", "boom").await;
    rig.worker.plan_once().await.expect("plan");
    let lease = Duration::seconds(60);
    let taken = rig
        .store
        .claim_deliveries("dead-worker", rig.clock.now(), lease, 10)
        .await
        .expect("claim");
    assert_eq!(taken.len(), 1);
    let tick = rig.worker.deliver_once().await.expect("deliver");
    assert_eq!(tick.attempted, 0, "the dead worker's lease still holds");

    rig.clock.advance(Duration::seconds(61));
    let tick = rig.worker.deliver_once().await.expect("deliver");
    assert_eq!(tick.delivered, 1);
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].idempotency_key, taken[0].idempotency_key);
    let stale = taken[0].claim().expect("claimed");
    assert!(
        rig.store
            .complete_deliveries(&[stale], rig.clock.now())
            .await
            .expect("cas")
            .is_empty(),
        "the dead worker's late completion changes nothing"
    );
}

/// A delivery whose workers die mid-call every time (claimed, then never a
/// result) is not redelivered forever: after `max_lost_claims` lost claims
/// it ends `failed`, visibly, without another agent call.
async fn a_delivery_that_keeps_killing_its_worker_ends_failed(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.report(a, "failed", "poison").await;
    rig.worker.plan_once().await.expect("plan");
    let lost = rig.worker.config().max_lost_claims;
    for i in 0..lost {
        let taken = rig
            .store
            .claim_deliveries(
                &format!("doomed-{i}"),
                rig.clock.now(),
                Duration::seconds(60),
                10,
            )
            .await
            .expect("claim");
        assert_eq!(taken.len(), 1);
        rig.clock.advance(Duration::seconds(61));
    }
    let tick = rig.worker.deliver_once().await.expect("deliver");
    assert_eq!(tick.gave_up, 1);
    assert!(
        rig.agent.continuations().is_empty(),
        "no call for a delivery that kills its workers"
    );
    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    let continuation = continuation_of(&summary);
    assert_eq!(continuation.state, DeliveryState::Failed);
    assert!(continuation
        .last_error
        .as_deref()
        .unwrap_or("")
        .contains("keeps dying"));
    assert_eq!(summary.links[0].outcome, Some(Settlement::Failed));
}
