//! A deny that lands while the standby fence holds a continuation back.
//! The claim found the window open; the call, made only once the standby
//! has the plan, would go out after the deny. After a fence wait the
//! window is read again, so the continuation is dropped with one notice
//! and never sent (P3: judged at the moment of the call).

use chrono::Utc;
use nomos_continue::store::{DeliveryKind, DeliveryState};
use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::until;
use uuid::Uuid;

use super::{approve_and_link, finish, keys, pausable, Paused, DB, SERIAL};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_while_the_fence_waits_drops_the_continuation_unsent() {
    let _serial = SERIAL.lock().await;
    let Some(Paused {
        primary,
        store: direct,
        replication,
        standby: _standby,
    }) = pausable("denied").await
    else {
        return;
    };
    // From here on the standby lacks every write: the fence waits for any
    // claim, whenever it first looks.
    replication.pause();
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    approve_and_link(&direct, session, &[execution]).await;
    finish(&direct, execution, "failed").await;

    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");
    let mut options = ReplicaOptions::new(&primary.url(DB), &server.url("/hook"), "w1");
    options.extra_args = vec!["--standby-fence-timeout".into(), "120s".into()];
    let replica = Replica::start(&options).await;
    until("the continuation claimed", || async {
        let rows = direct.deliveries_for_session(session).await.ok()?;
        rows.into_iter()
            .find(|d| d.kind == DeliveryKind::Continuation && d.lease_owner.is_some())
    })
    .await;
    direct
        .deny(session, Utc::now())
        .await
        .expect("deny")
        .expect("an open window to close");
    assert!(
        server.requests().is_empty(),
        "the agent was called while the standby lacked the plan"
    );
    replication.resume();

    until("the continuation dropped", || async {
        let rows = direct.deliveries_for_session(session).await.ok()?;
        rows.into_iter()
            .find(|d| d.kind == DeliveryKind::Continuation && d.state == DeliveryState::Dropped)
    })
    .await;
    until("the drop's notice delivered", || async {
        let rows = direct.deliveries_for_session(session).await.ok()?;
        let notices: Vec<_> = rows
            .into_iter()
            .filter(|d| d.kind == DeliveryKind::Notice)
            .collect();
        (notices.len() == 1 && notices[0].state == DeliveryState::Delivered).then_some(())
    })
    .await;
    let (by_execution, _) = keys(&server.requests());
    assert!(
        by_execution.is_empty(),
        "a continuation went out after the deny: {by_execution:?}"
    );
    drop(replica);
    direct.close().await;
}
