//! The stuck watch on both stores with an injected clock: an execution
//! linked in an open window that has not finished after the threshold gets
//! one notice, one more when its window is about to close, and nothing
//! after; a finished one, or one outside a window, gets none.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::Duration;
use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::maintenance::StuckWatch;
use nomos_continue::store::{DeliveryKind, Route, Store};
use uuid::Uuid;

async fn notices(store: &Store, session: Uuid) -> Vec<String> {
    store
        .deliveries_for_session(session)
        .await
        .expect("ledger")
        .into_iter()
        .filter(|d| d.kind == DeliveryKind::Notice)
        .map(|d| d.note)
        .collect()
}

async fn one_notice_then_one_before_the_window_closes(store: Store) {
    let clock = Arc::new(ManualClock::new(
        "2026-12-01T03:00:00Z".parse().expect("a time"),
    ));
    let watch = StuckWatch::new(
        store.clone(),
        clock.clone(),
        StdDuration::from_secs(600),
        StdDuration::from_secs(15),
    );
    let session = Uuid::new_v4();
    let t0 = clock.now();
    store
        .approve(session, Route::Button, t0, Duration::minutes(30))
        .await
        .expect("approve");
    let (slow, quick) = (Uuid::new_v4(), Uuid::new_v4());
    store.link(session, &[slow, quick], t0).await.expect("link");
    store
        .upsert_execution_status(slow, "running", "", t0, false)
        .await
        .expect("running");
    store
        .upsert_execution_status(quick, "completed", "ok", t0, true)
        .await
        .expect("done");

    clock.advance(Duration::minutes(9));
    assert_eq!(watch.run_once().await.expect("pass"), 0, "not yet stuck");
    clock.advance(Duration::minutes(1));
    assert_eq!(watch.run_once().await.expect("pass"), 1);
    assert_eq!(watch.run_once().await.expect("pass"), 0, "told once");
    let told = notices(&store, session).await;
    assert_eq!(told.len(), 1);
    assert!(told[0].contains(&slow.to_string()), "{}", told[0]);
    assert!(told[0].contains("10 min"), "{}", told[0]);
    assert!(told[0].contains("status: running"), "{}", told[0]);

    clock.advance(Duration::minutes(17)); // 3 minutes left
    assert_eq!(watch.run_once().await.expect("pass"), 0);
    clock.advance(Duration::minutes(1)); // 2 minutes left
    assert_eq!(watch.run_once().await.expect("pass"), 1);
    assert_eq!(watch.run_once().await.expect("pass"), 0);
    let told = notices(&store, session).await;
    assert_eq!(told.len(), 2);
    assert!(told.iter().any(|n| n.contains("window closes")), "{told:?}");

    // Outside a window nothing more is said.
    clock.advance(Duration::minutes(5));
    assert_eq!(watch.run_once().await.expect("pass"), 0);
}

#[tokio::test]
async fn sqlite() {
    let (store, _dir) = nomos_continue_tests::db::fresh_sqlite().await;
    one_notice_then_one_before_the_window_closes(store.clone()).await;
    store.close().await;
}

#[tokio::test]
async fn postgres() {
    let Some(db) = nomos_continue_tests::db::fresh_postgres_db().await else {
        return;
    };
    one_notice_then_one_before_the_window_closes(db.store.clone()).await;
    db.cleanup().await;
}
