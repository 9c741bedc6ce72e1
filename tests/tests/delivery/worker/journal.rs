//! The decision log as the worker writes it: one row per decision the
//! policy took, kept compactly (the input's parts and hash, rebuilt with
//! the execution's result into exactly what the policy saw; the answer's
//! kind and hash),
//! the revision, and what the host then did (continued under the key,
//! dropped, refused by a host guard, deferred behind a busy session, or
//! the retry a re-decision let go on). Nothing is logged when it is off.

use chrono::Duration;
use nomos_continue::agent::AgentError;
use nomos_continue::clock::Clock;
use nomos_continue::policy::codec;
use nomos_continue::policy::types::DecisionInput;
use nomos_continue::store::{DecisionFilter, LoggedDecision, Recorded, Store};
use nomos_continue::worker::{recorded_inputs, WorkerConfig};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{continuation_of, policy, Rig};

nomos_continue_tests::on_both_stores!(
    each_decision_is_logged_with_what_the_host_did,
    a_host_guard_and_a_busy_session_are_logged_as_such,
    with_the_log_off_nothing_is_logged,
);

async fn logged(store: &Store, session: Uuid) -> Vec<LoggedDecision> {
    let filter = DecisionFilter {
        session_id: Some(session),
        ..DecisionFilter::default()
    };
    store.decisions(filter, 100).await.expect("read the log")
}

/// The input `d` recorded, rebuilt and checked against its hash.
async fn input_of(store: &Store, d: &LoggedDecision) -> DecisionInput {
    let mut inputs = recorded_inputs(store, std::slice::from_ref(d))
        .await
        .expect("read the results");
    inputs
        .pop()
        .expect("one")
        .expect("the input the policy saw")
}

/// A compact row's answer kind and hash.
fn answer(d: &LoggedDecision) -> (&str, &[u8]) {
    match &d.decision.recorded {
        Recorded::Compact {
            answer,
            answer_hash,
            ..
        } => (answer.as_str(), answer_hash.as_slice()),
        Recorded::Whole { .. } => panic!("the worker writes compact rows: {d:?}"),
    }
}

async fn each_decision_is_logged_with_what_the_host_did(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.report(a, "failed", "ssh: connection refused").await;
    rig.worker.run_once().await.expect("pass");

    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    let key = continuation_of(&summary).idempotency_key.clone();
    let log = logged(&rig.store, rig.session).await;
    assert_eq!(log.len(), 1, "{log:?}");
    let d = &log[0].decision;
    assert_eq!((d.execution_id, d.action.as_str()), (a, "continued"));
    assert_eq!(d.idempotency_key.as_deref(), Some(key.as_str()));
    assert_eq!(d.revision, policy().active_revision().0);
    assert_eq!(log[0].decided_at, rig.clock.now());
    // The input rebuilt from its parts and the execution's result is the
    // one the policy saw (its hash says so), and the built-in policy
    // answers it with the recorded answer again.
    let input = input_of(&rig.store, &log[0]).await;
    assert_eq!(input.execution.id, a.to_string());
    assert_eq!(input.execution.result, "ssh: connection refused");
    assert!(input.session.window.is_some());
    let again = policy().decide_batch(&[input]).value.expect("decides");
    let line = codec::answer_line(&again[0]).expect("a line");
    let hash = Sha256::digest(line.trim_end().as_bytes());
    assert_eq!(answer(&log[0]), ("continue", &hash[..16]));
    // Nothing the system keeps elsewhere is copied into the row.
    match &d.recorded {
        Recorded::Compact { input, .. } => assert_eq!(input.hash.len(), 16),
        Recorded::Whole { .. } => panic!("a whole row"),
    }

    // Without a window the policy drops: logged with its reason.
    let b = Uuid::new_v4();
    let other = Uuid::new_v4();
    rig.store
        .link(other, &[b], rig.clock.now())
        .await
        .expect("link");
    rig.report(b, "completed", "done").await;
    rig.worker.run_once().await.expect("pass");
    let log = logged(&rig.store, other).await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].decision.action, "dropped");
    assert_eq!(answer(&log[0]).0, "drop");
    let reason = log[0].decision.detail.as_deref().unwrap_or_default();
    assert!(reason.contains("assent window closed"), "{reason}");
}

async fn a_host_guard_and_a_busy_session_are_logged_as_such(store: Store) {
    let rig = Rig::new(store);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    rig.approve().await;
    rig.link(&[a, b]).await;
    // The first call fails: the continuation stays in flight, so the next
    // finished execution of the session is deferred, not planned.
    rig.agent
        .script([Err(AgentError::Retryable("500 from runtime".into()))]);
    rig.report(a, "failed", "first").await;
    rig.worker.run_once().await.expect("pass");
    rig.report(b, "completed", "second").await;
    rig.worker.run_once().await.expect("pass");
    let log = logged(&rig.store, rig.session).await;
    let actions: Vec<(Uuid, &str)> = log
        .iter()
        .map(|l| (l.decision.execution_id, l.decision.action.as_str()))
        .collect();
    assert_eq!(actions, [(a, "continued"), (b, "deferred")], "{log:?}");
    let busy = log[1].decision.detail.as_deref().unwrap_or_default();
    assert!(busy.contains("in flight"), "{busy}");

    // The retry asks the policy again with the failed attempt counted: the
    // re-decision is logged, under the same key, with the attempts seen.
    rig.clock.advance(Duration::seconds(2));
    rig.worker.run_once().await.expect("retry");
    let log = logged(&rig.store, rig.session).await;
    // The deferral that repeated in that pass's plan is not logged twice.
    assert_eq!(log.len(), 3, "{log:?}");
    let retry = &log[2].decision;
    assert_eq!(
        (retry.execution_id, retry.action.as_str()),
        (a, "continued")
    );
    assert_eq!(retry.idempotency_key, log[0].decision.idempotency_key);
    let input = input_of(&rig.store, &log[2]).await;
    assert_eq!(input.attempts, 1);

    // A host guard the policy never sees: a hard cap of 0 refuses the
    // policy's continue, which is logged as refused with the guard's reason.
    let capped = rig.worker(
        WorkerConfig::default()
            .with_worker_id("capped".into())
            .with_hard_cap(0),
    );
    let session = Uuid::new_v4();
    let c = Uuid::new_v4();
    rig.store
        .approve(
            session,
            nomos_continue::store::Route::Api,
            rig.clock.now(),
            Duration::minutes(30),
        )
        .await
        .expect("approve");
    rig.store
        .link(session, &[c], rig.clock.now())
        .await
        .expect("link");
    rig.report(c, "completed", "ok").await;
    capped.run_once().await.expect("pass");
    let log = logged(&rig.store, session).await;
    assert_eq!(log.len(), 1, "{log:?}");
    let refused = &log[0].decision;
    assert_eq!(answer(&log[0]).0, "continue");
    assert_eq!(
        (refused.action.as_str(), refused.idempotency_key.as_deref()),
        ("refused", None)
    );
    let guard = refused.detail.as_deref().unwrap_or_default();
    assert!(guard.contains("hard cap of 0"), "{guard}");
}

async fn with_the_log_off_nothing_is_logged(store: Store) {
    let rig = Rig::new(store);
    let quiet = rig.worker(
        WorkerConfig::default()
            .with_worker_id("quiet".into())
            .with_log_decisions(false),
    );
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.report(a, "completed", "ok").await;
    let tick = quiet.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 1);
    assert!(logged(&rig.store, rig.session).await.is_empty());
}
