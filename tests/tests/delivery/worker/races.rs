//! Delivery promises that hinge on timing and on faults of single inputs:
//! skewed replica clocks, an approval racing a drop, an input the policy
//! traps on, a status the policy cannot classify.

use std::sync::Arc;

use chrono::{Duration, Utc};
use nomos_continue::clock::{Clock, ManualClock, OffsetClock};
use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue::store::{Notice, Route, Settlement, Store};
use nomos_continue::worker::{Worker, WorkerConfig};
use nomos_continue_tests::agents::RecordingAgent;
use uuid::Uuid;

use super::{policy, Rig};

nomos_continue_tests::on_both_stores!(
    replicas_with_skewed_clocks_agree_on_the_window,
    a_replica_a_little_behind_the_approver_continues_at_once,
    an_approval_after_a_drop_decision_keeps_the_link,
    an_input_the_policy_traps_on_fails_alone,
    a_status_the_policy_cannot_classify_is_told_once,
);

/// Item 7: replica A's clock runs 2 s behind replica B's. A takes a
/// one-second approval, B plans a failure that arrives at once. Timed by
/// their own clocks the window expired a second before B looks and the
/// failure is dropped; timed by the database's clock (each replica's offset
/// measured against it) it is continued.
async fn replicas_with_skewed_clocks_agree_on_the_window(store: Store) {
    let real = Utc::now();
    let run = |synced: bool| {
        let store = store.clone();
        async move {
            let a_local = Arc::new(ManualClock::new(real - Duration::seconds(2)));
            let b_local = Arc::new(ManualClock::new(real));
            let (a, b): (Arc<dyn Clock>, Arc<dyn Clock>) = if synced {
                let a = OffsetClock::new(a_local);
                a.sync(store.database_now()).await.expect("sync A");
                let b = OffsetClock::new(b_local);
                b.sync(store.database_now()).await.expect("sync B");
                (Arc::new(a), Arc::new(b))
            } else {
                (a_local, b_local)
            };
            let agent = Arc::new(RecordingAgent::default());
            let worker = Worker::builder(store.clone(), policy(), agent.clone())
                .clock(b.clone())
                .config(WorkerConfig::default())
                .build();
            let (session, id) = (Uuid::new_v4(), Uuid::new_v4());
            store
                .approve(session, Route::Button, a.now(), Duration::seconds(1))
                .await
                .expect("approve on A");
            store.link(session, &[id], b.now()).await.expect("link");
            store
                .upsert_execution_status(id, "failed", "boom", b.now(), true)
                .await
                .expect("report");
            worker.run_once().await.expect("pass on B");
            worker.run_once().await.expect("the notice, if any");
            (agent.continuations().len(), agent.notices())
        }
    };
    let (continued, notices) = run(false).await;
    assert_eq!(continued, 0, "the skew itself drops the failure");
    assert!(
        notices[0].message.contains("expired at"),
        "{}",
        notices[0].message
    );
    let (continued, notices) = run(true).await;
    assert_eq!((continued, notices.len()), (1, 0), "{notices:?}");
}

/// A window is stamped with the approving replica's clock; a replica whose
/// clock is a little behind (the sync error of two replicas, here 50 ms)
/// sees the approval at once, and continues the failure it was approved for
/// rather than dropping it as "not open yet" (seen on PostgreSQL with three
/// `serve` processes: a notice instead of the continuation).
async fn a_replica_a_little_behind_the_approver_continues_at_once(store: Store) {
    let rig = Rig::new(store);
    let now = rig.clock.now();
    let id = Uuid::new_v4();
    rig.store
        .approve(
            rig.session,
            Route::Button,
            now + Duration::milliseconds(50),
            Duration::minutes(30),
        )
        .await
        .expect("approve on the replica ahead");
    rig.store.link(rig.session, &[id], now).await.expect("link");
    rig.store
        .upsert_execution_status(id, "failed", "boom", now, true)
        .await
        .expect("report");
    rig.worker.run_once().await.expect("pass");
    rig.worker.run_once().await.expect("a notice, if any");
    assert_eq!(
        (rig.agent.continuations().len(), rig.agent.notices().len()),
        (1, 0),
        "{:?}",
        rig.agent.notices()
    );
}

/// Item 11: the policy decided "drop, no window" on a snapshot; the
/// operator approves before the drop is written. The drop is not written
/// (the window row changed since it was read), and the next pass continues
/// the execution.
async fn an_approval_after_a_drop_decision_keeps_the_link(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.link(&[a]).await;
    rig.report(a, "failed", "boom").await;
    let seen = rig.store.window(rig.session).await.expect("window");
    assert!(seen.is_none());
    rig.approve().await;
    let notice = Notice {
        idempotency_key: "n-race",
        message: "dropped",
        policy_revision: "rev",
    };
    let out = rig
        .store
        .drop_links_seen(
            rig.session,
            &[a],
            "assent window closed",
            Some(notice),
            rig.clock.now(),
            Some(None),
        )
        .await
        .expect("drop");
    assert!(out.dropped.is_empty() && out.notice.is_none(), "{out:?}");
    rig.worker.run_once().await.expect("pass");
    assert_eq!(rig.agent.continuations().len(), 1);
    assert!(rig.agent.notices().is_empty());
}

/// A worker on the hostile test policy, whose decision traps on the status
/// "trap" and whose classification traps on "classify-trap".
fn hostile_rig(store: Store) -> (Rig, Worker) {
    let rig = Rig::new(store);
    let bytes = std::fs::read(env!("HOSTILE_WASM")).expect("hostile policy built");
    let hostile = Arc::new(PolicyRuntime::with_policy(Limits::default(), &bytes).expect("loads"));
    let worker = Worker::builder(rig.store.clone(), hostile, rig.agent.clone())
        .clock(rig.clock.clone())
        .config(WorkerConfig::default())
        .build();
    (rig, worker)
}

/// Item 4 / P5: one input traps the policy; the other executions decided in
/// the same pass are continued, and only the trapping one is dropped, with
/// one notice naming the failure.
async fn an_input_the_policy_traps_on_fails_alone(store: Store) {
    let (rig, worker) = hostile_rig(store);
    rig.approve().await;
    let ids: Vec<Uuid> = (0..5).map(|_| Uuid::new_v4()).collect();
    rig.link(&ids).await;
    for (i, id) in ids.iter().enumerate() {
        let status = if i == 2 { "trap" } else { "failed" };
        rig.store
            .upsert_execution_status(*id, status, "out", rig.clock.now(), true)
            .await
            .expect("report");
    }
    let tick = worker.run_once().await.expect("pass");
    assert_eq!(tick.plan.policy_failures, 1, "{tick:?}");
    worker.run_once().await.expect("the notice");
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].executions.len(), 4, "the others fold into one");
    rig.agent
        .the_one_notice(&[&ids[2].to_string(), "policy failed"]);
    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    let trapped = summary
        .links
        .iter()
        .find(|l| l.execution_id == ids[2])
        .expect("link");
    assert_eq!(trapped.outcome, Some(Settlement::Dropped));
}

/// Item 11: a status the policy fails to classify leaves its execution
/// waiting, but not silently: one notice, however many passes; a later
/// status it can classify is continued.
async fn a_status_the_policy_cannot_classify_is_told_once(store: Store) {
    let (rig, worker) = hostile_rig(store);
    rig.approve().await;
    let a = Uuid::new_v4();
    rig.link(&[a]).await;
    rig.store
        .upsert_execution_status(a, "classify-trap", "", rig.clock.now(), false)
        .await
        .expect("report");
    for _ in 0..3 {
        worker.run_once().await.expect("pass");
    }
    rig.agent.the_one_notice(&["cannot tell"]);
    rig.store
        .upsert_execution_status(a, "failed", "boom", rig.clock.now(), true)
        .await
        .expect("report");
    worker.run_once().await.expect("pass");
    assert_eq!(rig.agent.continuations().len(), 1);
}
