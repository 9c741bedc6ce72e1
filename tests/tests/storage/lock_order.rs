//! The lock order of the transactions that lock windows, deliveries and
//! links (the module doc of `store::deliveries`), on PostgreSQL: two
//! workers' transactions are made to cross on two windows, in the order
//! that deadlocked the soak, and both must still finish.
//!
//! SQLite has no row locks (a transaction takes the one write lock), so
//! there is nothing to cross there.
//!
//! How the crossing is made without timing: a third connection holds one
//! window `FOR SHARE`, which a planner's lock must wait for and a claim's
//! need not. Each step waits for the one before it to be seen waiting on a
//! lock (`pg_stat_activity.wait_event_type = 'Lock'`), not for a while.

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{PlanOutcome, Route};
use nomos_continue_tests::db::fresh_postgres_db;
use nomos_continue_tests::wait;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use super::store_batch::plan;

fn at(seconds: i64) -> DateTime<Utc> {
    "2026-11-30T04:00:00Z"
        .parse::<DateTime<Utc>>()
        .expect("a valid time")
        + Duration::seconds(seconds)
}

/// Backends of database `name` waiting for a lock.
async fn lock_waits(watch: &mut PgConnection, name: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'",
    )
    .bind(name)
    .fetch_one(watch)
    .await
    .expect("read pg_stat_activity")
}

/// The soak's deadlock: a claim share-locked the windows of the
/// continuations it picked in their due order while a planner locked its
/// windows in session order. Here the claim picks the second session's
/// continuation first (it is due first) and the planner plans both
/// sessions: the planner holds the first window and waits for the second
/// (held by the third connection), the claim takes the second window and
/// then needs the first. Before the fix PostgreSQL aborted one of them with
/// `deadlock detected` once the third connection let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_and_a_plan_crossing_on_two_windows_both_finish() {
    let Some(db) = fresh_postgres_db().await else {
        return;
    };
    let store = db.store.clone();
    let mut sessions = [Uuid::new_v4(), Uuid::new_v4()];
    sessions.sort();
    let [first, second] = sessions;
    let links: Vec<[Uuid; 2]> = (0..2).map(|_| [Uuid::new_v4(), Uuid::new_v4()]).collect();
    for (session, ids) in sessions.iter().zip(&links) {
        store
            .approve(*session, Route::Api, at(0), Duration::minutes(30))
            .await
            .expect("approve");
        store.link(*session, ids, at(0)).await.expect("link");
    }
    // The second session's continuation is due first, so the claim picks
    // (and locks) it and its window before the first session's.
    for (session, ids, key, when) in [
        (second, &links[1][..1], "second-1", at(1)),
        (first, &links[0][..1], "first-1", at(2)),
    ] {
        let planned = store
            .plan_continuations(&[plan(session, ids, key)], when)
            .await
            .expect("plan");
        assert!(
            matches!(planned[..], [PlanOutcome::Planned(_)]),
            "{planned:?}"
        );
    }

    let mut watch = PgConnection::connect(&db.url).await.expect("connect");
    let mut holder = PgConnection::connect(&db.url).await.expect("connect");
    sqlx::query("BEGIN")
        .execute(&mut holder)
        .await
        .expect("begin");
    sqlx::query("SELECT 1 FROM nomos_assent_windows WHERE session_id = $1 FOR SHARE")
        .bind(second)
        .execute(&mut holder)
        .await
        .expect("share-lock the second window");

    // A planner of both sessions (each busy: the windows are locked before
    // that is known) takes the first window and waits for the second.
    let planner = tokio::spawn({
        let store = store.clone();
        let (a, b) = ([links[0][1]], [links[1][1]]);
        async move {
            store
                .plan_continuations(
                    &[plan(first, &a, "first-2"), plan(second, &b, "second-2")],
                    at(3),
                )
                .await
        }
    });
    wait::until_true("the planner waiting for the second window", async || {
        lock_waits(&mut watch, &db.name).await == 1
    })
    .await;

    // The claim of both continuations, second session first.
    let claim = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .claim_deliveries("claimer", at(4), Duration::seconds(30), 10)
                .await
        }
    });
    wait::until_true("the claim finished or waiting", async || {
        claim.is_finished() || lock_waits(&mut watch, &db.name).await == 2
    })
    .await;
    sqlx::query("COMMIT")
        .execute(&mut holder)
        .await
        .expect("let the second window go");

    let planned = planner.await.expect("the planner's task");
    let claimed = claim.await.expect("the claim's task");
    let planned = planned.expect("the plan finishes (no deadlock)");
    assert!(
        planned
            .iter()
            .all(|o| matches!(o, PlanOutcome::SessionBusy { .. })),
        "{planned:?}"
    );
    let claimed = claimed.expect("the claim finishes (no deadlock)");
    let keys: Vec<&str> = claimed.iter().map(|d| d.idempotency_key.as_str()).collect();
    assert_eq!(keys, ["second-1", "first-1"]);
    db.cleanup().await;
}
