//! Connections exhausted (issue 28): on a cluster of the test's own with
//! `max_connections = 20`, another client holds every connection an
//! ordinary role may open, so each connection `serve` tries to open is
//! refused with SQLSTATE 53300. `serve` keeps running, delays the work
//! (P6), answers the runtime's writes 503 with `Retry-After` within the
//! API's bound, logs the worker's failure once, and when the client lets
//! go continues every execution exactly once per key.
//!
//! Without a race: the replica is frozen (SIGSTOP) while its backends are
//! terminated and the other client takes their slots, then thawed. The
//! test itself connects as a superuser, into the slots kept for them.

use nomos_continue::store::Store;
use nomos_continue_tests::cluster::Cluster;
use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::until;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use super::outage::{
    episodes, everything_completes, request_paths_answer_503, runtime_reports,
    the_worker_logged_one_episode,
};
use super::{Work, SERIAL};

/// The role `serve` and the other client log in as: not a superuser, so
/// the reserved slots are not theirs.
const ROLE: &str = "nomos";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_exhausted_by_another_client_delay_the_work_and_lose_nothing() {
    let _serial = SERIAL.lock().await;
    let settings = [
        ("max_connections", "20"),
        ("superuser_reserved_connections", "5"),
    ];
    let Some(cluster) = Cluster::primary("exhausted", &settings).await else {
        return;
    };
    let mut admin = PgConnection::connect(&cluster.url("postgres"))
        .await
        .expect("admin connection");
    for sql in [
        format!("CREATE ROLE {ROLE} LOGIN"),
        format!("CREATE DATABASE {ROLE} OWNER {ROLE}"),
    ] {
        sqlx::query(&sql).execute(&mut admin).await.expect(&sql);
    }
    let url = format!("postgres://{ROLE}@127.0.0.1:{}/{ROLE}", cluster.port());
    let owner = Store::connect(&url).await.expect("connect as the owner");
    owner.migrate().await.expect("migrate");
    owner.close().await;
    // The test's own reads and the runtime's writes, as a superuser.
    let store = Store::connect(&cluster.url(ROLE))
        .await
        .expect("connect as a superuser");

    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");
    let replica = Replica::start(&ReplicaOptions::new(&url, &server.url("/hook"), "w1")).await;
    let work = Work::create(&[&replica], 3, 2).await;

    replica.signal("STOP");
    let mut other = Vec::new();
    let refused = take_every_slot(&url, &mut other).await;
    let mine: Vec<i32> = other.iter().map(|(pid, _)| *pid).collect();
    let others = "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND pid <> ALL($2)";
    sqlx::query(&others.replace("count(*)", "pg_terminate_backend(pid)"))
        .bind(ROLE)
        .bind(&mine)
        .execute(&mut admin)
        .await
        .expect("terminate the replica's backends");
    until("the replica's backends gone", async || {
        let left: i64 = sqlx::query_scalar(others)
            .bind(ROLE)
            .bind(&mine)
            .fetch_one(&mut admin)
            .await
            .ok()?;
        (left == 0).then_some(())
    })
    .await;
    take_every_slot(&url, &mut other).await;
    replica.signal("CONT");
    println!(
        "exhausted: another client holds {} connections; a new one is refused: {refused}",
        other.len()
    );

    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    let times = request_paths_answer_503(&replica, session, execution).await;
    println!("connections exhausted: 503 answer times {times:?}");
    runtime_reports(&store, &work).await;
    // The worker's pool waits for a connection (30 s) before a pass
    // fails: the episode's start is the sign that the worker saw it.
    until("the worker's episode logged", || async {
        episodes(&replica.stderr()).get("worker pass").map(|_| ())
    })
    .await;
    assert!(
        server.requests().is_empty(),
        "delivered without a connection"
    );

    drop(other);
    let probe = (session, execution);
    everything_completes(&replica, &store, work, probe, || server.requests()).await;
    the_worker_logged_one_episode(&replica).await;
    store.close().await;
    drop(replica);
}

/// Opens connections to `url` until one is refused, keeping them (with
/// their backends' pids) in `held`; returns the refusal, which must be
/// PostgreSQL's "too many connections" (SQLSTATE 53300).
async fn take_every_slot(url: &str, held: &mut Vec<(i32, PgConnection)>) -> String {
    loop {
        match PgConnection::connect(url).await {
            Ok(mut conn) => {
                let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
                    .fetch_one(&mut conn)
                    .await
                    .expect("pid");
                held.push((pid, conn));
            }
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("53300") => {
                return e.to_string();
            }
            Err(e) => panic!("expected a refusal with SQLSTATE 53300, got {e}"),
        }
    }
}
