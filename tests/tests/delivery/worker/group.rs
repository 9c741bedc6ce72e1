//! Group commit in the deliver step: calls that end together are recorded
//! together, each still fenced by its own claim, and a claimed batch's
//! continuations are built together without mixing up their executions.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::store::{DeliveryKind, DeliveryState, Route, Store};
use nomos_continue::worker::{Worker, WorkerConfig};
use uuid::Uuid;

use super::promises::eventually;
use super::{policy, Rig};

nomos_continue_tests::on_both_stores!(
    calls_that_end_together_share_one_record,
    a_claim_taken_over_during_its_call_is_lost_alone,
    a_batch_claimed_stale_is_renewed_and_called,
);

/// A clock that moves one millisecond on every reading, so that each record
/// carries its own time: rows recorded in one group share a `delivered_at`.
struct Ticking(Arc<ManualClock>);

impl Clock for Ticking {
    fn now(&self) -> DateTime<Utc> {
        self.0.advance(Duration::milliseconds(1));
        self.0.now()
    }
}

/// `n` approved sessions, each with `per` failed executions whose results
/// name them; returns each session's execution ids.
async fn failed_sessions(rig: &Rig, n: usize, per: usize) -> Vec<(Uuid, Vec<Uuid>)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let session = Uuid::new_v4();
        rig.store
            .approve(session, Route::Api, rig.clock.now(), Duration::minutes(30))
            .await
            .expect("approve");
        let ids: Vec<Uuid> = (0..per).map(|_| Uuid::new_v4()).collect();
        rig.store
            .link(session, &ids, rig.clock.now())
            .await
            .expect("link");
        for id in &ids {
            rig.report(*id, "failed", &format!("result of {id}")).await;
        }
        out.push((session, ids));
    }
    out
}

async fn continuation_of(store: &Store, session: Uuid) -> nomos_continue::store::Delivery {
    store
        .deliveries_for_session(session)
        .await
        .expect("ledger")
        .into_iter()
        .find(|d| d.kind == DeliveryKind::Continuation)
        .expect("a continuation")
}

/// Sixteen calls held by the agent and released at once are recorded in a
/// few transactions, not one each (one record per call cost a commit per
/// continuation); every continuation carried exactly its own session's
/// executions and results.
async fn calls_that_end_together_share_one_record(store: Store) {
    const N: usize = 16;
    let rig = Rig::new(store);
    let sessions = failed_sessions(&rig, N, 2).await;
    rig.worker.plan_once().await.expect("plan");
    let worker = Worker::builder(rig.store.clone(), policy(), rig.agent.clone())
        .clock(Arc::new(Ticking(rig.clock.clone())))
        .config(
            WorkerConfig::default()
                .with_worker_id("grouping".into())
                .with_delivery_concurrency(N),
        )
        .build();
    let gate = rig.agent.hold().await;
    let pass = tokio::spawn(async move { worker.deliver_once().await });
    eventually("every call made", async || {
        rig.agent.continuations().len() == N
    })
    .await;
    drop(gate);
    let report = pass.await.expect("join").expect("pass");
    assert_eq!((report.delivered, report.lease_lost), (N, 0), "{report:?}");

    let mut times = HashSet::new();
    for (session, _) in &sessions {
        let delivered = continuation_of(&rig.store, *session).await;
        assert_eq!(delivered.state, DeliveryState::Delivered);
        times.insert(delivered.delivered_at.expect("delivered at"));
    }
    assert!(
        times.len() <= N / 2,
        "{} records for {N} calls that ended together",
        times.len()
    );
    for call in rig.agent.continuations() {
        let (_, ids) = sessions
            .iter()
            .find(|(s, _)| *s == call.session_id)
            .expect("a known session");
        let mut got: Vec<(Uuid, String)> = call
            .executions
            .iter()
            .map(|e| (e.id, e.result.clone()))
            .collect();
        got.sort();
        let mut want: Vec<(Uuid, String)> = ids
            .iter()
            .map(|id| (*id, format!("result of {id}")))
            .collect();
        want.sort();
        assert_eq!(got, want, "a continuation carries its own executions");
    }
}

/// Two calls run; meanwhile the lease of one lapses and another worker
/// takes it over. When both are accepted, the one still held is recorded
/// and the other is reported lost alone: the new holder's claim is left as
/// it is, and it records its own call.
async fn a_claim_taken_over_during_its_call_is_lost_alone(store: Store) {
    let rig = Rig::new(store);
    failed_sessions(&rig, 2, 1).await;
    rig.worker.plan_once().await.expect("plan");
    let lease = StdDuration::from_secs(60);
    let a = rig.worker(
        WorkerConfig::default()
            .with_worker_id("a".into())
            .with_lease(lease)
            // No renewal within the test: the lease lapses on the moved clock.
            .with_renew_every(Some(StdDuration::from_secs(3600)))
            .with_delivery_concurrency(2)
            // Only the two claims: its own lapsed lease is not claimed again
            // by this pass while the record is being written.
            .with_batch(2),
    );
    let gate = rig.agent.hold().await;
    let pass = tokio::spawn(async move { a.deliver_once().await });
    eventually("both calls made", async || {
        rig.agent.continuations().len() == 2
    })
    .await;
    rig.clock.advance(Duration::seconds(61));
    let taken = rig
        .store
        .claim_deliveries("b", rig.clock.now(), Duration::seconds(60), 1)
        .await
        .expect("claim");
    assert_eq!(taken.len(), 1, "the lapsed lease is taken over");
    drop(gate);
    let report = pass.await.expect("join").expect("pass");
    assert_eq!((report.delivered, report.lease_lost), (1, 1), "{report:?}");

    let row = rig
        .store
        .delivery(taken[0].id)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(
        (row.state, row.lease_owner.as_deref(), row.claim_token),
        (DeliveryState::Pending, Some("b"), taken[0].claim_token),
        "the new holder's claim is untouched"
    );
    let b = taken[0].claim().expect("claimed");
    assert_eq!(
        rig.store
            .complete_deliveries(&[b], rig.clock.now())
            .await
            .expect("record"),
        vec![b.id],
        "the new holder records its own call"
    );
}

/// A lease shorter than the renewal period: every claim is stale by the
/// time its call would start, so the batch's leases are confirmed (renewed
/// in one statement) before the calls, and all of them are made and
/// recorded.
async fn a_batch_claimed_stale_is_renewed_and_called(store: Store) {
    let rig = Rig::new(store);
    let sessions = failed_sessions(&rig, 3, 1).await;
    rig.worker.plan_once().await.expect("plan");
    let worker = rig.worker(
        WorkerConfig::default()
            .with_worker_id("stale".into())
            .with_lease(StdDuration::from_secs(1))
            .with_renew_every(Some(StdDuration::from_secs(10))),
    );
    let report = worker.deliver_once().await.expect("pass");
    assert_eq!((report.delivered, report.lease_lost), (3, 0), "{report:?}");
    assert_eq!(rig.agent.continuations().len(), 3);
    for (session, _) in &sessions {
        assert_eq!(
            continuation_of(&rig.store, *session).await.state,
            DeliveryState::Delivered
        );
    }
}
