//! A fence confirmation that comes after the store switched primaries.
//!
//! The fence asks the primary whether its standbys have a claim. Once the
//! store has switched to another server, the one it asks is not the one
//! that committed the claim: a promoted standby with no standby of its own
//! confirms anything at once, whether or not it holds the claim. So a call
//! whose claim is of an earlier primary era than the call is not made; it
//! is recorded as a shortage and made later under a claim the primary in
//! use holds. Here the switch is counted while the fence waits for a
//! standby that receives nothing; then the standby catches up, and the
//! fence confirms.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use nomos_continue::clock::ManualClock;
use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue::store::testing::count_primary_switch;
use nomos_continue::store::{DeliveryKind, DeliveryState};
use nomos_continue::worker::{Worker, WorkerConfig};
use nomos_continue_tests::agents::RecordingAgent;
use nomos_continue_tests::wait::until;
use uuid::Uuid;

use super::{approve_and_link, finish, pausable, Paused, SERIAL};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_claimed_before_a_primary_switch_is_not_made_after_it() {
    let _serial = SERIAL.lock().await;
    let Some(Paused {
        primary: _primary,
        store: direct,
        replication,
        standby: _standby,
    }) = pausable("switched").await
    else {
        return;
    };
    replication.pause();
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    approve_and_link(&direct, session, &[execution]).await;
    finish(&direct, execution, "failed").await;

    let agent = Arc::new(RecordingAgent::default());
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let policy = Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy"));
    let worker = Worker::builder(direct.clone(), policy, agent.clone())
        .clock(clock.clone())
        .config(
            WorkerConfig::default()
                .with_worker_id("w1".into())
                .with_standby_fence(Some(Duration::from_secs(120))),
        )
        .build();
    let pass = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run_once().await }
    });
    let claimed = until("the continuation claimed", || async {
        let rows = direct.deliveries_for_session(session).await.ok()?;
        rows.into_iter()
            .find(|d| d.kind == DeliveryKind::Continuation && d.lease_owner.is_some())
    })
    .await;
    // The fence waits for the standby; meanwhile the store switches.
    count_primary_switch(&direct);
    replication.resume();
    pass.await.expect("the pass").expect("a pass without error");
    assert!(
        agent.continuations().is_empty(),
        "the call went out on a claim of the primary before the switch"
    );
    let after = direct
        .delivery(claimed.id)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(after.state, DeliveryState::Pending);
    assert!(
        (after.last_error.as_deref()).is_some_and(|e| e.contains("primary changed")),
        "{after:?}"
    );

    // Its retry claims it again in the store's new era, and the call goes
    // out once, under its key.
    clock.advance(chrono::Duration::minutes(5));
    worker.run_once().await.expect("the retry's pass");
    let sent: Vec<String> = (agent.continuations().iter())
        .map(|c| c.idempotency_key.clone())
        .collect();
    assert_eq!(sent, vec![claimed.idempotency_key.clone()]);
    let settled = direct
        .delivery(claimed.id)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(settled.state, DeliveryState::Delivered);
    direct.close().await;
}
