//! Faults a store must contain (ARCHITECTURE.md, "Invariants"): a report after
//! the first terminal one (P4) and rows of a runtime-supplied `executions`
//! relation that hold NULLs or values that do not decode (P5).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use nomos_continue::clock::ManualClock;
use nomos_continue::store::{Backend, PendingCursor, Route, Store};
use nomos_continue::worker::{Worker, WorkerConfig};
use nomos_continue_tests::agents::RecordingAgent;
use uuid::Uuid;

use super::{at, ids, read_execution, t0, NO_REVISION};

/// Runs `sql` (one or more statements) on the store's own database.
async fn exec(store: &Store, sql: &str) {
    let done = match (store.pg_pool(), store.sqlite_pool()) {
        (Some(pool), _) => sqlx::raw_sql(sql).execute(pool).await.map(drop),
        (_, Some(pool)) => sqlx::raw_sql(sql).execute(pool).await.map(drop),
        (None, None) => panic!("a store has a pool"),
    };
    done.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// A time (whole seconds) as an SQL literal of the backend (see the
/// store's module docs for the representations).
fn time_sql(store: &Store, t: DateTime<Utc>) -> String {
    match store.backend() {
        Backend::Postgres => format!("to_timestamp({})", t.timestamp()),
        Backend::Sqlite => t.timestamp_micros().to_string(),
    }
}

/// Makes `executions` accept NULLs in every column but `id`, as a runtime's
/// own relation may. SQLite cannot drop a constraint, so there the table is
/// recreated with the same columns and no NOT NULL.
async fn executions_as_a_runtime_relation(store: &Store) {
    let sql = match store.backend() {
        Backend::Postgres => {
            "ALTER TABLE executions ALTER COLUMN status DROP NOT NULL, \
             ALTER COLUMN result DROP NOT NULL, ALTER COLUMN updated_at DROP NOT NULL"
        }
        Backend::Sqlite => {
            "DROP TABLE executions; \
             CREATE TABLE executions (id TEXT PRIMARY KEY NOT NULL, status TEXT, \
               result TEXT, updated_at INTEGER, finished_at INTEGER)"
        }
    };
    exec(store, sql).await;
}

/// Writes an `executions` row behind the store's back; each value is SQL.
async fn raw_execution(store: &Store, id: Uuid, status: &str, result: &str, updated: &str) {
    let sql = format!(
        "INSERT INTO executions (id, status, result, updated_at, finished_at) \
         VALUES ('{id}', {status}, {result}, {updated}, {updated})"
    );
    exec(store, &sql).await;
}

async fn approved(store: &Store, session: Uuid) {
    store
        .approve(session, Route::Button, t0(), Duration::minutes(30))
        .await
        .expect("approve");
}

/// A worker over `store` with the built-in policy and a recording agent.
fn worker(store: &Store, batch: i64) -> (Worker, Arc<RecordingAgent>) {
    let agent = Arc::new(RecordingAgent::default());
    let config = WorkerConfig::default()
        .with_worker_id("fault-worker".into())
        .with_batch(batch);
    let worker = Worker::builder(
        store.clone(),
        nomos_continue_tests::api::policy(),
        agent.clone(),
    )
    .clock(Arc::new(ManualClock::new(at(60))))
    .config(config)
    .build();
    (worker, agent)
}

/// The executions the agent was re-invoked with for `session`, sorted.
fn continued(agent: &RecordingAgent, session: Uuid) -> Vec<(Uuid, String)> {
    let mut got: Vec<(Uuid, String)> = agent
        .continuations()
        .iter()
        .filter(|c| c.session_id == session)
        .flat_map(|c| c.executions.iter().map(|e| (e.id, e.result.clone())))
        .collect();
    got.sort();
    got
}

fn sorted(mut pairs: Vec<(Uuid, String)>) -> Vec<(Uuid, String)> {
    pairs.sort();
    pairs
}

/// P4: after the first terminal report, a later one (non-terminal or
/// terminal) changes nothing about the execution and is kept, in order, as
/// a late report.
pub async fn a_report_after_a_terminal_one_is_not_applied(store: Store) {
    let exec = Uuid::new_v4();
    let running = store
        .upsert_execution_status(exec, "running", "", at(1), false)
        .await
        .expect("running report");
    assert!(running.applied, "not finished yet: applied");
    let first = store
        .upsert_execution_status(exec, "failed", "ssh: connection refused", at(5), true)
        .await
        .expect("terminal report");
    assert!(first.applied);
    let late_running = store
        .upsert_execution_status(exec, "running", "", at(7), false)
        .await
        .expect("late running report");
    let late_terminal = store
        .upsert_execution_status(exec, "completed", "ok", at(9), true)
        .await
        .expect("late terminal report");
    for late in [&late_running, &late_terminal] {
        assert!(!late.applied);
        assert_eq!(late.execution, first.execution, "terminal is final");
    }
    let now = read_execution(&store, exec).await.expect("row");
    assert_eq!(now, first.execution);
    assert_eq!(now.finished_at, Some(at(5)));
    let late: Vec<(String, String, DateTime<Utc>)> = store
        .late_reports(exec)
        .await
        .expect("late reports")
        .into_iter()
        .map(|r| (r.status, r.result, r.reported_at))
        .collect();
    assert_eq!(
        late,
        vec![
            ("running".to_owned(), String::new(), at(7)),
            ("completed".to_owned(), "ok".to_owned(), at(9)),
        ]
    );
    assert!(store
        .late_reports(Uuid::new_v4())
        .await
        .expect("none")
        .is_empty());
}

/// P4 under concurrency: of several reports racing for a fresh execution,
/// exactly one finishes it; the others are late reports, and what is stored
/// is what the applied one said.
pub async fn concurrent_terminal_reports_apply_once(store: Store) {
    let exec = Uuid::new_v4();
    const STATUSES: [&str; 5] = ["failed", "completed", "cancelled", "failed", "completed"];
    let tasks: Vec<_> = STATUSES
        .iter()
        .enumerate()
        .map(|(i, status)| {
            let store = store.clone();
            tokio::spawn(async move {
                let result = format!("report {i}");
                let outcome = store
                    .upsert_execution_status(exec, status, &result, at(i as i64), true)
                    .await
                    .expect("report");
                (outcome.applied, result)
            })
        })
        .collect();
    let mut applied = Vec::new();
    for task in tasks {
        let (was_applied, result) = task.await.expect("task");
        if was_applied {
            applied.push(result);
        }
    }
    assert_eq!(applied.len(), 1, "exactly one report applied: {applied:?}");
    let stored = read_execution(&store, exec).await.expect("row");
    assert_eq!(stored.result, applied[0]);
    assert_eq!(
        store.late_reports(exec).await.expect("late").len(),
        STATUSES.len() - 1
    );
}

/// P5: NULLs where the standalone table has none (a runtime's own relation)
/// read as an empty result and a fallback time; a row with no status has not
/// reported. Nobody else's links are held up, and a worker pass continues.
pub async fn null_columns_of_a_runtime_relation_stall_nobody(store: Store) {
    executions_as_a_runtime_relation(&store).await;
    let (bad, good) = (Uuid::new_v4(), Uuid::new_v4());
    let [no_result, no_updated_at, no_status]: [Uuid; 3] = ids(3).try_into().expect("three ids");
    let g = Uuid::new_v4();
    approved(&store, bad).await;
    approved(&store, good).await;
    // The bad session's links come first in the worker's order.
    store
        .link(bad, &[no_result, no_updated_at, no_status], t0())
        .await
        .expect("link bad");
    store.link(good, &[g], at(1)).await.expect("link good");
    let t2 = time_sql(&store, at(2));
    raw_execution(&store, no_result, "'failed'", "NULL", &t2).await;
    exec(
        &store,
        &format!(
            "INSERT INTO executions (id, status, result, updated_at, finished_at) \
             VALUES ('{no_updated_at}', 'completed', 'done', NULL, {})",
            time_sql(&store, at(3))
        ),
    )
    .await;
    raw_execution(&store, no_status, "NULL", "'x'", &t2).await;
    store
        .upsert_execution_status(g, "completed", "ok", at(4), true)
        .await
        .expect("good report");

    let ready = store
        .pending_links_ready(None, 10, NO_REVISION)
        .await
        .expect("poll");
    let seen: Vec<Uuid> = ready.iter().map(|l| l.execution_id).collect();
    let mut want = vec![no_result, no_updated_at];
    want.sort();
    want.push(g);
    assert_eq!(seen, want, "the NULL-status row has not reported");
    let by_id = |id: Uuid| ready.iter().find(|l| l.execution_id == id).cloned();
    assert_eq!(by_id(no_result).map(|l| l.result_bytes), Some(0));
    assert_eq!(by_id(no_updated_at).map(|l| l.updated_at), Some(at(3)));
    assert_eq!(by_id(g).map(|l| l.result_bytes), Some(2));

    let got = store
        .executions(&[no_result, no_updated_at, no_status])
        .await
        .expect("batch read");
    assert_eq!(
        got.iter()
            .map(|e| (e.id, e.result.as_str(), e.updated_at))
            .collect::<Vec<_>>(),
        vec![(no_result, "", at(2)), (no_updated_at, "done", at(3))]
    );
    assert_eq!(read_execution(&store, no_status).await, None);

    let (worker, agent) = worker(&store, 100);
    worker.run_once().await.expect("a pass despite the NULLs");
    assert_eq!(continued(&agent, good), vec![(g, "ok".to_owned())]);
    assert_eq!(
        continued(&agent, bad),
        sorted(vec![
            (no_result, String::new()),
            (no_updated_at, "done".to_owned())
        ])
    );
}

/// P5: a row that does not decode even after the NULL fallbacks is skipped,
/// and paging goes on past it: the pages after it are still full and the
/// worker reaches every other link in one pass. Only SQLite can hold such a
/// row (a value of another type in a column; PostgreSQL's column types rule
/// that out per row), so there the bad row is one with no status instead,
/// which the query leaves out.
pub async fn an_undecodable_row_is_skipped_and_paging_goes_on(store: Store) {
    executions_as_a_runtime_relation(&store).await;
    let session = Uuid::new_v4();
    approved(&store, session).await;
    let links = ids(5);
    for (i, id) in links.iter().enumerate() {
        store
            .link(session, &[*id], at(i as i64 + 1))
            .await
            .expect("link");
    }
    let bad = links[2];
    for id in links.iter().filter(|id| **id != bad) {
        store
            .upsert_execution_status(*id, "completed", "ok", at(10), true)
            .await
            .expect("report");
    }
    match store.backend() {
        Backend::Sqlite => raw_execution(&store, bad, "'completed'", "'ok'", "'soon'").await,
        Backend::Postgres => {
            raw_execution(&store, bad, "NULL", "'ok'", &time_sql(&store, at(10))).await
        }
    }

    let page = |after: Option<usize>| {
        let store = store.clone();
        let links = links.clone();
        async move {
            let cursor = after.map(|i| PendingCursor {
                linked_at: at(i as i64 + 1),
                execution_id: links[i],
            });
            let rows = store
                .pending_links_ready(cursor, 2, NO_REVISION)
                .await
                .expect("page");
            rows.iter().map(|l| l.execution_id).collect::<Vec<_>>()
        }
    };
    assert_eq!(page(None).await, [links[0], links[1]]);
    assert_eq!(
        page(Some(1)).await,
        [links[3], links[4]],
        "full after the bad row"
    );
    assert_eq!(
        page(Some(0)).await,
        [links[1], links[3]],
        "refilled past it"
    );
    assert!(page(Some(4)).await.is_empty());

    let (worker, agent) = worker(&store, 2);
    worker.run_once().await.expect("pass");
    let mut want: Vec<(Uuid, String)> = links
        .iter()
        .filter(|id| **id != bad)
        .map(|id| (*id, "ok".to_owned()))
        .collect();
    want.sort();
    assert_eq!(continued(&agent, session), want);
}
