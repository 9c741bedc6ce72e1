//! The retention of tool output on both backends, through the retention
//! task on an injected clock: settled deliveries past
//! `--delivery-retention` lose their note and error (and cannot be
//! retried), idle sessions' chat turns and notices past
//! `--chat-retention` are deleted, and what is recent or still needed
//! (a pending delivery, a notice the operator's channel has not finished,
//! the history of a session with an unsettled link or an open window) is
//! kept.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::maintenance::{Retention, TextPurged, TextRetention};
use nomos_continue::metrics::Metrics;
use nomos_continue::store::{DeliveryState, NoticeAbout, RetryOutcome, Role, Route, Store};
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    settled_deliveries_are_scrubbed_past_their_retention,
    idle_sessions_lose_old_chat_history,
    nothing_is_purged_with_retention_off,
);

fn t0() -> DateTime<Utc> {
    "2026-10-01T04:00:00Z".parse().expect("a valid time")
}

const MONTH: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// A retention task keeping a month of both, on a clock 31 days after t0.
fn retention(store: &Store) -> (Retention, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(t0() + Duration::days(31)));
    let retention = Retention::new(store.clone(), clock.clone(), Arc::new(Metrics::new()), None)
        .with_text(TextRetention {
            deliveries: Some(MONTH),
            chat: Some(MONTH),
        });
    (retention, clock)
}

/// A notice delivery recorded at `at` (so last updated then), its text
/// naming a secret.
async fn notice(store: &Store, at: DateTime<Utc>) -> Uuid {
    notice_in(store, Uuid::new_v4(), at, "tool said: password=hunter2").await
}

/// A notice about `session` saying `text`, recorded at `at` under a key of
/// its own; returns its ledger row's id.
pub(crate) async fn notice_in(store: &Store, session: Uuid, at: DateTime<Utc>, text: &str) -> Uuid {
    let about = NoticeAbout {
        session_id: session,
        execution_ids: &[],
        policy_revision: "rev",
    };
    let key = format!("notice-{}", Uuid::new_v4());
    assert!(store
        .record_notice(about, &key, text, at)
        .await
        .expect("record notice"));
    store
        .deliveries_for_session(session)
        .await
        .expect("read the ledger")
        .into_iter()
        .find(|d| d.idempotency_key == key)
        .expect("the notice's row")
        .id
}

/// Ends a delivery `state` with an error, keeping its last update, and
/// (with `operator_done`) its operator notice delivered.
async fn settle(store: &Store, id: Uuid, state: &str, operator_done: bool) {
    let delivered_at = if state == "delivered" {
        "updated_at"
    } else {
        "NULL"
    };
    store
        .execute_raw(&format!(
            "UPDATE nomos_deliveries SET state = '{state}', delivered_at = {delivered_at}, \
             last_error = 'HTTP 500: token=hunter2' WHERE id = '{id}'"
        ))
        .await
        .expect("settle the delivery");
    if operator_done {
        store
            .execute_raw(&format!(
                "UPDATE nomos_operator_notices SET state = 'delivered', delivered_at = updated_at \
                 WHERE notice_id = '{id}'"
            ))
            .await
            .expect("settle the operator notice");
    }
}

async fn settled_deliveries_are_scrubbed_past_their_retention(store: Store) {
    let old_failed = notice(&store, t0()).await;
    settle(&store, old_failed, "failed", true).await;
    let old_delivered = notice(&store, t0()).await;
    settle(&store, old_delivered, "delivered", true).await;
    let old_pending = notice(&store, t0()).await;
    let old_operator_pending = notice(&store, t0()).await;
    settle(&store, old_operator_pending, "delivered", false).await;
    let recent = notice(&store, t0() + Duration::days(20)).await;
    settle(&store, recent, "failed", true).await;

    let (retention, _clock) = retention(&store);
    let purged = retention.purge_text().await.expect("purge");
    assert_eq!(purged.deliveries, 2, "{purged:?}");
    for id in [old_failed, old_delivered] {
        let row = store.delivery(id).await.expect("read").expect("kept");
        assert_eq!((row.note.as_str(), row.last_error), ("", None), "{id}");
        assert_eq!(row.updated_at, t0(), "the row's times are kept");
    }
    let delivered = store
        .delivery(old_delivered)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(delivered.state, DeliveryState::Delivered);
    for id in [old_pending, old_operator_pending, recent] {
        let row = store.delivery(id).await.expect("read").expect("kept");
        assert!(row.note.contains("hunter2"), "{id} lost its note");
    }
    let pending = store
        .delivery(old_pending)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(pending.state, DeliveryState::Pending);

    // Nothing is left to send: a retry of the scrubbed row is refused.
    let retried = store
        .retry_delivery(old_failed, t0() + Duration::days(31))
        .await
        .expect("retry");
    assert!(matches!(retried, RetryOutcome::Purged), "{retried:?}");
    // A second pass finds nothing more.
    assert_eq!(
        retention.purge_text().await.expect("again"),
        TextPurged::default()
    );
}

async fn idle_sessions_lose_old_chat_history(store: Store) {
    let (retention, clock) = retention(&store);
    let now = clock.now();
    let idle = Uuid::new_v4();
    let linked = Uuid::new_v4();
    let open = Uuid::new_v4();
    for session in [idle, linked, open] {
        store
            .append_turn(session, Role::User, "my token is hunter2", t0())
            .await
            .expect("old turn");
        store
            .append_notice(session, "tool output: hunter2", "old", t0())
            .await
            .expect("old notice");
    }
    store
        .append_turn(idle, Role::Assistant, "recent", t0() + Duration::days(20))
        .await
        .expect("recent turn");
    store
        .append_notice(idle, "recent", "recent", t0() + Duration::days(20))
        .await
        .expect("recent notice");
    // An execution still running holds its session's history.
    store
        .link(linked, &[Uuid::new_v4()], t0())
        .await
        .expect("link");
    // So does an open window (the next continuation replays it).
    store
        .approve(open, Route::Api, now, Duration::minutes(30))
        .await
        .expect("approve");

    let purged = retention.purge_text().await.expect("purge");
    assert_eq!(
        (purged.chat_turns, purged.chat_notices),
        (1, 1),
        "{purged:?}"
    );
    let turns = store.turns(idle).await.expect("turns");
    assert_eq!(
        turns.iter().map(|t| t.content.as_str()).collect::<Vec<_>>(),
        ["recent"]
    );
    for session in [linked, open] {
        assert_eq!(store.turns(session).await.expect("turns").len(), 1);
    }
    let kept = |notices: Vec<nomos_continue::store::SessionNotice>| {
        notices.into_iter().map(|n| n.message).collect::<Vec<_>>()
    };
    assert_eq!(
        kept(store.notices(idle).await.expect("notices")),
        ["recent"]
    );
    for session in [linked, open] {
        assert_eq!(store.notices(session).await.expect("notices").len(), 1);
    }

    // Once the window has closed, the open session's history goes too.
    clock.advance(Duration::minutes(31));
    let purged = retention.purge_text().await.expect("purge");
    assert_eq!(
        (purged.chat_turns, purged.chat_notices),
        (1, 1),
        "{purged:?}"
    );
    assert!(store.turns(open).await.expect("turns").is_empty());
    assert!(store.notices(open).await.expect("notices").is_empty());
    assert_eq!(store.turns(linked).await.expect("turns").len(), 1);
}

async fn nothing_is_purged_with_retention_off(store: Store) {
    let id = notice(&store, t0()).await;
    settle(&store, id, "failed", true).await;
    let session = Uuid::new_v4();
    store
        .append_turn(session, Role::User, "hunter2", t0())
        .await
        .expect("turn");
    let clock = Arc::new(ManualClock::new(t0() + Duration::days(3650)));
    let keeping = Retention::new(store.clone(), clock, Arc::new(Metrics::new()), None);
    assert_eq!(
        keeping.purge_text().await.expect("purge"),
        TextPurged::default()
    );
    let row = store.delivery(id).await.expect("read").expect("kept");
    assert!(row.note.contains("hunter2"));
    assert_eq!(store.turns(session).await.expect("turns").len(), 1);
}
