//! A transaction's caller dropped while its `BEGIN` is in flight (a client
//! that hangs up mid-request, a timeout around a store call) must not
//! leave its connection in the pool inside a transaction nobody knows of:
//! the statements that later run alone on that connection would be in that
//! transaction, answered as done, and lost when the connection closes.
//!
//! Made without timing on PostgreSQL: the pool has one connection, through
//! a proxy that holds the server's answers, so the `BEGIN` reaches the
//! server (seen in `pg_stat_activity` as idle in a transaction) while its
//! caller still waits; the caller is then dropped.

use std::time::Duration;

use chrono::Utc;
use nomos_continue::store::Store;
use nomos_continue_tests::cut::CutProxy;
use nomos_continue_tests::db::fresh_postgres_db;
use nomos_continue_tests::wait::until;
use sqlx::postgres::PgPoolOptions;
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_after_a_cancelled_begin_is_committed() {
    let Some(db) = fresh_postgres_db().await else {
        return;
    };
    let target = tokio::net::lookup_host(("127.0.0.1", 5432))
        .await
        .expect("resolve")
        .next()
        .expect("an address");
    let proxy = CutProxy::start(target).await;
    let url = db.url.replace(
        "127.0.0.1:5432",
        &format!("127.0.0.1:{}", proxy.addr().port()),
    );
    assert_ne!(url, db.url, "the URL names 127.0.0.1:5432");
    // No ping before each acquire: held too, it would be what the caller
    // waits for instead of the BEGIN.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .connect(&url)
        .await
        .expect("connect through the proxy");
    let store = Store::from_pg_pool(pool.clone());

    // A transaction (a link) whose BEGIN reaches the server, then its
    // caller is dropped while it waits for the answer.
    proxy.hold_answers();
    let linking = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .link(Uuid::new_v4(), &[Uuid::new_v4()], Utc::now())
                .await
        }
    });
    let in_transaction = "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = $1 AND state = 'idle in transaction'";
    until("the BEGIN to reach the server", || async {
        let n: i64 = sqlx::query_scalar(in_transaction)
            .bind(&db.name)
            .fetch_one(db.store.pg_pool().expect("PostgreSQL"))
            .await
            .ok()?;
        (n == 1).then_some(())
    })
    .await;
    linking.abort();
    assert!(linking.await.is_err_and(|e| e.is_cancelled()));
    proxy.resume();

    // A report on the pool's one connection, a statement of its own, then
    // the connection closes.
    let execution = Uuid::new_v4();
    let reported = tokio::time::timeout(
        Duration::from_secs(30),
        store.upsert_execution_status(execution, "completed", "ok", Utc::now(), true),
    )
    .await
    .expect("the report is answered")
    .expect("the report is recorded");
    assert!(reported.applied);
    drop(store);
    pool.close().await;

    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM executions WHERE id = $1")
        .bind(execution)
        .fetch_one(db.store.pg_pool().expect("PostgreSQL"))
        .await
        .expect("count");
    assert_eq!(kept, 1, "a report answered as recorded was lost");
    db.cleanup().await;
}
