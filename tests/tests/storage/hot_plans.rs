//! The hot path reads live rows by index, never history (issue 64): beside
//! a history that dwarfs the live work (100,000 settled sessions, each with
//! its window, link, finished execution, delivered continuation and logged
//! decision; statistics analysed), with a backlog of 3,000 finished and 2,000
//! running executions, every statement of a worker's passes, a claim, a
//! lease renewal, the record of accepted calls and status reports is
//! judged by the plan it ran with (`nomos_continue_tests::plans`):
//!
//! - on PostgreSQL, the plan `auto_explain` sent with `ANALYZE` and
//!   buffers: no sequential scan of a history table, and no more buffers
//!   than a bound per row the plan touched;
//! - on SQLite, `EXPLAIN QUERY PLAN` of each statement as it ran: no
//!   `SCAN` of a history table but of a partial index of live rows.
//!
//! The planner's guess decides nothing here: each hot statement probes
//! history by key whatever the statistics say, so the same plans hold on
//! a history of any size.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue::store::testing::{self, record_sqlite_plans};
use nomos_continue::store::{Poll, Route, Store};
use nomos_continue::worker::{Worker, WorkerConfig};
use nomos_continue_tests::agents::RecordingAgent;
use nomos_continue_tests::db;
use nomos_continue_tests::plans::{self, Notices};
use sqlx::Connection;
use tracing_subscriber::layer::SubscriberExt;
use uuid::Uuid;

/// Settled sessions of history.
const HISTORY: i64 = 100_000;
/// Sessions of the backlog that finished, and executions each.
const READY_SESSIONS: usize = 300;
const READY_EACH: usize = 10;
/// Sessions that link and report through the API's calls during the run.
const API_SESSIONS: usize = 30;
/// Sessions whose executions still run, and executions each.
const RUNNING_SESSIONS: usize = 100;
const RUNNING_EACH: usize = 20;

/// What the API's hot statements' texts contain.
const API_HOT: &[(&str, &str)] = &[
    ("a status report", "INSERT INTO executions AS x"),
    (
        "a tool result's link",
        "INSERT INTO nomos_plan_executions (execution_id",
    ),
];

/// What each of the worker's hot statements' texts contains, to show the
/// test saw it run.
const HOT: &[(&str, &str)] = &[
    (
        "the ready read",
        "ORDER BY l.created_at, l.execution_id LIMIT",
    ),
    ("the claim", "claims = claims + 1"),
    ("the lease renewal", "SET lease_expires_at"),
    ("the record of accepted calls", "state = 'delivered'"),
    ("the links continued", "outcome = 'continued'"),
    ("the park", "SET parked = z.status"),
    (
        "the plan's link locks",
        "delivery_id IS NULL AND continued_at IS NULL",
    ),
    (
        "the sessions' unsettled links",
        "ORDER BY l.session_id, l.created_at, l.execution_id",
    ),
];

fn runtime() -> tokio::runtime::Runtime {
    // One thread: the recorders are per thread, and so every statement of
    // the store runs where they look.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn start() -> DateTime<Utc> {
    "2026-12-07T12:00:00Z".parse().expect("a valid time")
}

/// The history and the backlog, with statistics analysed: sessions that
/// finished and sessions still running, each approved.
async fn seed(store: &Store, now: DateTime<Utc>) -> (Vec<Uuid>, Vec<(Uuid, Uuid)>) {
    testing::fill_session_history(store, HISTORY, now)
        .await
        .expect("history");
    testing::fill_decision_history(store, HISTORY, now)
        .await
        .expect("decision history");
    let mut sessions = Vec::new();
    let mut running = Vec::new();
    for i in 0..READY_SESSIONS + RUNNING_SESSIONS {
        let session = Uuid::new_v4();
        store
            .approve(session, Route::Api, now, Duration::minutes(30))
            .await
            .expect("approve");
        let ready = i < READY_SESSIONS;
        let n = if ready { READY_EACH } else { RUNNING_EACH };
        let pairs: Vec<(Uuid, Uuid)> = (0..n).map(|_| (session, Uuid::new_v4())).collect();
        let linked = now - Duration::minutes(1);
        let (status, finished) = if ready {
            ("completed", Some(linked))
        } else {
            ("running", None)
        };
        testing::add_executions(store, &pairs, status, "output", finished, linked)
            .await
            .expect("backlog");
        sessions.push(session);
        if !ready {
            running.extend(pairs);
        }
    }
    testing::analyze(store).await.expect("analyze");
    (sessions, running)
}

/// The API's path: tool results link their executions, one call per
/// result, and their reports follow, one call each (enough calls on each
/// connection for PostgreSQL to settle on a generic plan).
async fn api_path(store: &Store, now: DateTime<Utc>) {
    for _ in 0..API_SESSIONS {
        let session = Uuid::new_v4();
        let ids: Vec<Uuid> = (0..READY_EACH).map(|_| Uuid::new_v4()).collect();
        store
            .approve(session, Route::Api, now, Duration::minutes(30))
            .await
            .expect("approve");
        store.link(session, &ids, now).await.expect("link");
        for id in ids {
            store
                .upsert_execution_status(id, "failed", "exit 1", now, true)
                .await
                .expect("report");
        }
    }
}

/// Every hot statement, as the worker and the API run them.
async fn hot_path(store: &Store, running: &[(Uuid, Uuid)], now: DateTime<Utc>) -> usize {
    api_path(store, now).await;
    let clock = Arc::new(ManualClock::new(now));
    let agent = Arc::new(RecordingAgent::default());
    let policy = Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy"));
    let worker = Worker::builder(store.clone(), policy, agent.clone())
        .clock(clock.clone())
        .config(WorkerConfig::default().with_worker_id("plans".into()))
        .build();
    // A sweep plans (and parks the running links) without claiming; a
    // claim, a renewal and the record of the calls follow by hand.
    worker.plan_once().await.expect("plan");
    let lease = Duration::seconds(60);
    let claimed = store
        .claim_deliveries("plans", clock.now(), lease, 100)
        .await
        .expect("claim");
    let claims: Vec<_> = claimed.iter().filter_map(|d| d.claim()).collect();
    assert!(!claims.is_empty(), "the sweep planned nothing to claim");
    store
        .renew_leases(&claims, clock.now(), lease)
        .await
        .expect("renew");
    store
        .complete_deliveries(&claims, clock.now())
        .await
        .expect("record");
    // Whole passes: what is left is claimed, called and recorded.
    worker.run_once().await.expect("a pass");
    // Half the running executions finish; a pass after the wake-up reads
    // only the unparked links.
    for (_, id) in running.iter().step_by(2) {
        store
            .upsert_execution_status(*id, "completed", "done", clock.now(), true)
            .await
            .expect("report");
    }
    worker
        .run_pass(Poll::Unparked)
        .await
        .expect("unparked pass");
    worker.run_once().await.expect("a last pass");
    claims.len() + agent.continuations().len()
}

/// Fails with every statement whose plan has a problem, and when a hot
/// statement was not seen at all (the test would then judge nothing).
/// `problems`: each statement that ran, with what is wrong with its plan.
fn judge(markers: &[(&str, &str)], problems: Vec<(String, Vec<String>)>) {
    for (what, marker) in markers {
        assert!(
            problems.iter().any(|(sql, _)| sql.contains(marker)),
            "{what} never ran ({marker:?} in none of {} statements)",
            problems.len()
        );
    }
    let bad: Vec<String> = problems
        .into_iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(sql, p)| format!("{}\n    {}", plans::short(&sql), p.join("\n    ")))
        .collect();
    assert!(
        bad.is_empty(),
        "{} statements read history:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Every continuation of the backlog was made: the passes did their work,
/// so the plans judged are those of a working path.
fn all_continued(continued: usize) {
    let expected = READY_SESSIONS + RUNNING_SESSIONS;
    assert!(
        continued >= READY_SESSIONS,
        "{continued} continuations of at least {READY_SESSIONS} (and up to {expected})"
    );
}

mod sqlite {
    use super::*;

    #[test]
    fn the_hot_path_reads_only_live_rows_by_index() {
        runtime().block_on(async {
            let (store, _dir) = db::fresh_sqlite().await;
            let now = start();
            let (_, running) = seed(&store, now).await;
            let recording = record_sqlite_plans();
            let continued = hot_path(&store, &running, now).await;
            let ran = recording.take();
            drop(recording);
            all_continued(continued);
            let problems = ran
                .iter()
                .map(|p| (p.sql.clone(), plans::sqlite_problems(p)))
                .collect();
            let markers: Vec<_> = HOT.iter().chain(API_HOT).copied().collect();
            judge(&markers, problems);
            store.close().await;
        });
    }
}

mod postgres {
    use std::collections::HashSet;

    use super::*;

    /// The plans `auto_explain` sent so far, each statement with what is
    /// wrong with its plan; every plan is also written out as it ran, for
    /// a reader of a failure.
    fn judged(notices: &Notices, unique: &HashSet<String>) -> Vec<(String, Vec<String>)> {
        let ran = plans::pg_plans(&notices.take());
        let all: Vec<_> = ran
            .iter()
            .map(|p| serde_json::json!({"sql": p.sql, "plan": p.plan}))
            .collect();
        let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hot-plans.json");
        std::fs::write(
            &file,
            serde_json::to_string_pretty(&all).unwrap_or_default(),
        )
        .expect("write the plans");
        eprintln!("the plans as they ran: {}", file.display());
        ran.iter()
            .map(|p| (p.sql.clone(), plans::pg_problems(p, unique)))
            .collect()
    }

    /// A database that auto_explains every statement of its new sessions
    /// to the client (see `plans`), and a store of such sessions.
    async fn explaining(db: &db::PgTestDb) -> Store {
        let mut admin = sqlx::PgConnection::connect(&db::admin_url())
            .await
            .expect("admin connection");
        for sql in plans::auto_explain_settings(&db.name) {
            sqlx::query(&sql).execute(&mut admin).await.expect(&sql);
        }
        Store::connect(&db.url).await.expect("an explaining store")
    }

    /// The young database: the API's statements are planned, prepared and
    /// cached while the tables are empty; then the history grows behind
    /// them (no `ANALYZE` yet, as between two of autovacuum's), and the
    /// same connections' next links and reports must still read it by
    /// key. Written as a join, the link's check of the horizon was cached
    /// as a sequential scan of `executions` and read it whole on every
    /// link until the next `ANALYZE`.
    #[test]
    fn plans_cached_on_young_tables_still_read_history_by_key() {
        let notices = Notices::default();
        let subscriber = tracing_subscriber::registry().with(notices.clone());
        let _thread = tracing::subscriber::set_default(subscriber);
        runtime().block_on(async {
            let Some(db) = db::fresh_postgres_db().await else {
                return;
            };
            let now = start();
            let store = explaining(&db).await;
            let unique = store
                .pg_pool()
                .map(plans::unique_indexes)
                .expect("a PostgreSQL pool")
                .await
                .expect("unique indexes");
            api_path(&store, now).await;
            testing::fill_session_history(&store, HISTORY, now)
                .await
                .expect("history");
            notices.take();
            api_path(&store, now).await;
            store.close().await;
            judge(API_HOT, judged(&notices, &unique));
            db.cleanup().await;
        });
    }

    #[test]
    fn the_hot_path_reads_only_live_rows_by_index() {
        let notices = Notices::default();
        let subscriber = tracing_subscriber::registry().with(notices.clone());
        let _thread = tracing::subscriber::set_default(subscriber);
        runtime().block_on(async {
            let Some(db) = db::fresh_postgres_db().await else {
                return;
            };
            let now = start();
            let (_, running) = seed(&db.store, now).await;
            // From here on every new session of the database explains
            // each statement it runs: a second store, its own sessions.
            let unique = db
                .store
                .pg_pool()
                .map(plans::unique_indexes)
                .expect("a PostgreSQL pool")
                .await
                .expect("unique indexes");
            let store = explaining(&db).await;
            notices.take();
            let continued = hot_path(&store, &running, now).await;
            store.close().await;
            all_continued(continued);
            let markers: Vec<_> = HOT.iter().chain(API_HOT).copied().collect();
            judge(&markers, judged(&notices, &unique));
            db.cleanup().await;
        });
    }
}
