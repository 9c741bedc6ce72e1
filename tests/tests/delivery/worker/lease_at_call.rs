//! P2 and P3 at the moment of the call: a worker whose reads before a call
//! hang (the database cut off, then mended) must not call on a claim whose
//! lease its own clock says has run out, when another worker has taken the
//! claim over meanwhile. That worker's call is then the only one.
//!
//! How the reads hang without a sleep: the test holds an `ACCESS
//! EXCLUSIVE` lock on the `executions` table, which the deliver step reads
//! after its claim (to build the continuation) and before the call; it
//! waits until PostgreSQL shows the worker's read waiting on that lock,
//! moves the injected clock past the lease, lets a second worker claim the
//! delivery, and only then lets the read go. PostgreSQL only: SQLite has
//! no lock that holds up a reader.

use nomos_continue::clock::Clock;
use nomos_continue::worker::WorkerConfig;
use nomos_continue_tests::db;
use nomos_continue_tests::wait::until;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use super::Rig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_does_not_begin_on_a_lease_its_clock_says_has_run_out() {
    let Some(db) = db::fresh_postgres_db().await else {
        return;
    };
    let rig = Rig::new(db.store.clone());
    let execution = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[execution]).await;
    rig.report(execution, "completed", "ok").await;
    // Classified now, so the call's reads touch only `executions`.
    let planned = rig.worker.plan_once().await.expect("plan");
    assert_eq!(planned.planned, 1);

    let mut lock = PgConnection::connect(&db.url).await.expect("connect");
    sqlx::query("BEGIN")
        .execute(&mut lock)
        .await
        .expect("begin");
    sqlx::query("LOCK TABLE executions IN ACCESS EXCLUSIVE MODE")
        .execute(&mut lock)
        .await
        .expect("lock executions");
    let worker = rig.worker.clone();
    let pass = tokio::spawn(async move { worker.deliver_once().await });
    let mut watch = PgConnection::connect(&db.url).await.expect("connect");
    until("the worker's read to wait on the lock", async || {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut watch)
        .await
        .ok()?;
        (waiting > 0).then_some(())
    })
    .await;

    // Past the lease by the worker's own clock; another worker takes the
    // claim over, as a replica that can reach the database would.
    let lease = rig.worker.config().lease_duration();
    rig.clock.advance(lease * 2);
    let taken = rig
        .store
        .claim_deliveries("other-worker", rig.clock.now(), lease, 10)
        .await
        .expect("claim");
    assert_eq!(taken.len(), 1, "the other worker takes the expired claim");
    sqlx::query("ROLLBACK")
        .execute(&mut lock)
        .await
        .expect("release the lock");

    let report = pass.await.expect("join").expect("deliver pass");
    assert!(
        rig.agent.continuations().is_empty(),
        "the agent was called on a lease that had run out and was taken over"
    );
    assert_eq!((report.delivered, report.lease_lost), (0, 1), "{report:?}");
    let row = super::continuation_of(
        &rig.store
            .session_summary(rig.session)
            .await
            .expect("summary"),
    )
    .clone();
    assert_eq!(row.lease_owner.as_deref(), Some("other-worker"));
    assert_eq!(row.attempts, 0, "nothing was recorded over the other claim");

    // The other worker delivers it once, with the same key.
    let other = rig.worker(WorkerConfig::default().with_worker_id("other-worker-2".into()));
    rig.clock.advance(lease * 2);
    let tick = other.deliver_once().await.expect("deliver");
    assert_eq!(tick.delivered, 1);
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].idempotency_key, row.idempotency_key);
    db.cleanup().await;
}
