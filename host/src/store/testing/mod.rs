//! Support for the benchmarks (`host/examples/claim_bench.rs`,
//! `host/examples/console_bench.rs` and `host/examples/worker_bench/`):
//! bulk fills, `VACUUM`, counts, `EXPLAIN`.
//!
//! Why it lives here: all SQL of the project lives in the store, including
//! the bulk fills and the `EXPLAIN` the benchmarks print, so a change of the
//! schema changes them in the same commit. The history fills are PostgreSQL
//! only (`generate_series`; the question they answer, "does it stay flat as
//! history grows?", is about the production backend);
//! [`add_executions`] runs on both. The fault-injection simulation's
//! faults of the store itself are in `faults` (a full disk) and `standby`
//! (a failover that loses the last commits).

use chrono::{DateTime, Utc};
use sqlx::{Connection, PgConnection, Row};
use uuid::Uuid;

use super::decode::RowExt;
use super::dialect::{query, trunc};
use super::links::PENDING_LINKS;
use super::{Backend, Db, Result, Store, StoreError};

mod faults;
mod plans;
mod standby;

pub use faults::{deadlocks_detected, install_write_refusal, refuse_writes, DISK_FULL_MESSAGE};
pub(in crate::store) use plans::explain_lite;
pub use plans::{record_sqlite_plans, SqlitePlan, SqlitePlans};
pub use standby::{count_primary_switch, fail_over, install_lagging_standby, replicate};

fn pg(store: &Store) -> Result<&sqlx::PgPool> {
    match &store.db {
        Db::Pg(pool) => Ok(pool),
        Db::Lite(_) => Err(StoreError::InvalidValue {
            field: "backend",
            reason: "this benchmark needs PostgreSQL".into(),
        }),
    }
}

/// Drops and creates database `name` on the server of `admin_url` and
/// returns its URL. The name must be a plain identifier (it is quoted, not
/// bound: `CREATE DATABASE` takes no parameters).
pub async fn recreate_database(admin_url: &str, name: &str) -> Result<String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(StoreError::InvalidValue {
            field: "database name",
            reason: format!("{name:?} is not a plain identifier"),
        });
    }
    let mut admin = PgConnection::connect(admin_url).await?;
    sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    sqlx::raw_sql(&format!("CREATE DATABASE \"{name}\""))
        .execute(&mut admin)
        .await?;
    admin.close().await?;
    let (base, query) = match admin_url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (admin_url, None),
    };
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let base = match base[after_scheme..].find('/') {
        Some(i) => &base[..after_scheme + i],
        None => base,
    };
    Ok(match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    })
}

/// Fills a migrated, empty database with `settled` links that were continued
/// long ago (with their `executions` rows, as a runtime would have them) and
/// `pending` unsettled links newer than all of them, half of whose
/// executions have finished. Sessions hold 20 links each.
///
/// History ids are sequential (so the fill of 10M rows takes a minute, not
/// ten); pending ids are random. The poll under test never looks ids up by
/// range, so this does not flatter it.
pub async fn fill_link_history(
    store: &Store,
    settled: i64,
    pending: i64,
    now: DateTime<Utc>,
) -> Result<()> {
    let pool = pg(store)?;
    let now = trunc(now);
    query(
        "INSERT INTO nomos_plan_executions \
           (execution_id, session_id, continued_at, created_at, delivery_id, outcome) \
         SELECT lpad(to_hex(g), 32, '0')::uuid, md5((g / 20)::text)::uuid, \
                $2 - make_interval(secs => $1 - g) + interval '5 seconds', \
                $2 - make_interval(secs => $1 - g), \
                md5(('d' || g)::text)::uuid, 'continued' \
         FROM generate_series(1, $1) AS g",
    )
    .bind(settled)
    .bind(now - chrono::Duration::seconds(pending + 1))
    .execute(store)
    .await?;
    sqlx::query(
        "INSERT INTO executions (id, status, result, updated_at, finished_at) \
         SELECT execution_id, 'completed', 'ok', continued_at, continued_at \
         FROM nomos_plan_executions",
    )
    .execute(pool)
    .await?;
    query(
        "WITH p AS ( \
           INSERT INTO nomos_plan_executions (execution_id, session_id, created_at) \
           SELECT gen_random_uuid(), md5(('p' || (g / 20))::text)::uuid, \
                  $2 - make_interval(secs => $1 - g) \
           FROM generate_series(1, $1) AS g \
           RETURNING execution_id, created_at) \
         INSERT INTO executions (id, status, result, updated_at, finished_at) \
         SELECT execution_id, \
                CASE WHEN row_number() OVER (ORDER BY created_at) % 2 = 0 \
                     THEN 'completed' ELSE 'running' END, \
                '', created_at, NULL FROM p",
    )
    .bind(pending)
    .bind(now)
    .execute(store)
    .await?;
    Ok(())
}

/// Fills a migrated, empty database with `sessions` sessions of settled
/// history, each as the worker leaves a session it continued once long ago:
/// an expired window that counted one continuation, one link continued by a
/// delivered continuation, the link's finished execution, and the trace
/// context its tool result carried.
///
/// Ids are sequential or hashed from the row number, so a million sessions
/// load in about a minute; everything is at least an hour old. Both
/// backends (SQLite: each time in microseconds, each id a UUID's text).
pub async fn fill_session_history(store: &Store, sessions: i64, now: DateTime<Utc>) -> Result<()> {
    // Row g: session, execution, delivery and the time it all began.
    let history = store.backend().pick(
        "WITH h AS ( \
           SELECT g, md5('s' || g)::uuid AS session_id, \
                  lpad(to_hex(g), 32, '0')::uuid AS execution_id, \
                  md5('d' || g)::uuid AS delivery_id, \
                  $2 - make_interval(secs => $1 - g) AS at \
           FROM generate_series(1, $1) AS g) ",
        "WITH RECURSIVE n(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM n WHERE g < $1), \
         h AS ( \
           SELECT g, printf('00000000-0000-4000-8000-%012x', g) AS session_id, \
                  printf('00000001-0000-4000-8000-%012x', g) AS execution_id, \
                  printf('00000002-0000-4000-8000-%012x', g) AS delivery_id, \
                  $2 - ($1 - g) * 1000000 AS at \
           FROM n) ",
    );
    // `+ S` and `+ M` are a second and half an hour in each backend's time.
    let inserts = [
        "INSERT INTO nomos_assent_windows \
           (session_id, opened_at, expires_at, route, continuations, closed_at, updated_at) \
         SELECT session_id, at, at + M, 'button', 1, NULL, at + S FROM h",
        "INSERT INTO executions (id, status, result, updated_at, finished_at) \
         SELECT execution_id, 'completed', 'ok', at, at FROM h",
        "INSERT INTO nomos_deliveries \
           (id, session_id, kind, idempotency_key, execution_ids, note, policy_revision, \
            state, attempts, claims, next_attempt_at, created_at, delivered_at, updated_at) \
         SELECT delivery_id, session_id, 'continuation', 'history-' || g, \
                IDS, 'execution finished: ok', 'history', 'delivered', 1, 1, \
                at, at, at + S, at + S FROM h",
        "INSERT INTO nomos_plan_executions \
           (execution_id, session_id, created_at, continued_at, delivery_id, outcome) \
         SELECT execution_id, session_id, at, at + S, delivery_id, 'continued' FROM h",
        "INSERT INTO nomos_link_data \
           (execution_id, traceparent, trace_source, updated_at) \
         SELECT execution_id, TRACE, 'tool_result', at FROM h",
    ];
    let (second, half_hour, ids, trace) = match store.backend() {
        Backend::Postgres => (
            "interval '1 second'",
            "interval '30 minutes'",
            "ARRAY[execution_id]",
            "'00-' || md5('t' || g) || '-' || left(md5('p' || g), 16) || '-01'",
        ),
        Backend::Sqlite => (
            "1000000",
            "1800000000",
            "json_array(execution_id)",
            "printf('00-%032x-%016x-01', g, g)",
        ),
    };
    let start = trunc(now) - chrono::Duration::hours(1);
    for insert in inserts {
        let insert = insert
            .replace("+ S", &format!("+ {second}"))
            .replace("+ M", &format!("+ {half_hour}"))
            .replace("IDS", ids)
            .replace("TRACE", trace);
        query(format!("{history}{insert}"))
            .bind(sessions)
            .bind(start)
            .execute(store)
            .await?;
    }
    Ok(())
}

/// Fills the decision log with one compact decision per session of
/// [`fill_session_history`] (`sessions` of them, the same session and
/// execution ids and times): the worker's `continued` for each, as a
/// compact row (the input's parts, a 16-byte hash, the revision by
/// number), so the log is as big as the history it decided. Both backends.
pub async fn fill_decision_history(store: &Store, sessions: i64, now: DateTime<Utc>) -> Result<()> {
    query(
        "INSERT INTO nomos_decision_revisions (hash) VALUES ('history') \
         ON CONFLICT (hash) DO NOTHING",
    )
    .execute(store)
    .await?;
    let rows = store.backend().pick(
        "SELECT g, md5('s' || g)::uuid AS session_id, \
                lpad(to_hex(g), 32, '0')::uuid AS execution_id, \
                $2 - make_interval(secs => $1 - g) AS at, \
                $2 - make_interval(secs => $1 - g) + interval '30 minutes' AS at_end, \
                substring(sha256(('i' || g)::bytea) FROM 1 FOR 16) AS hash \
         FROM generate_series(1, $1) AS g",
        "WITH RECURSIVE n(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM n WHERE g < $1) \
         SELECT g, printf('00000000-0000-4000-8000-%012x', g) AS session_id, \
                printf('00000001-0000-4000-8000-%012x', g) AS execution_id, \
                $2 - ($1 - g) * 1000000 AS at, \
                $2 - ($1 - g) * 1000000 + 1800000000 AS at_end, randomblob(16) AS hash \
         FROM n",
    );
    query(format!(
        "INSERT INTO nomos_policy_decisions \
           (decided_at, session_id, execution_id, revision, revision_id, input, output, \
            action, idempotency_key, status, finished_at, window_opened_at, \
            window_expires_at, window_route, input_hash, answer_hash) \
         SELECT at, session_id, execution_id, '', \
                (SELECT id FROM nomos_decision_revisions WHERE hash = 'history'), '', '', \
                'continued', 'history-' || g, 'completed', at, at, at_end, 'button', \
                hash, hash \
         FROM ({rows}) h"
    ))
    .bind(sessions)
    .bind(trunc(now) - chrono::Duration::hours(1))
    .execute(store)
    .await?;
    Ok(())
}

/// Fills one session with `executions` executions, as the worker leaves a
/// session whose agent ran many tools: a window approved before all of
/// them, and for each a link, a failed execution, a logged decision to
/// continue, a delivered continuation and the link settled. The result,
/// the decision's input and the note are each `text_chars` characters of
/// log (at least a line), as a result quoted in them would make them.
/// PostgreSQL only; everything ends before `now`, so a worker finds
/// nothing to do.
pub async fn fill_busy_session(
    store: &Store,
    session: Uuid,
    executions: i64,
    text_chars: i64,
    now: DateTime<Utc>,
) -> Result<()> {
    pg(store)?;
    // Row g: execution, delivery, and when it was linked and failed.
    const BUSY: &str = "WITH h AS ( \
           SELECT g, md5('busy-e' || g)::uuid AS execution_id, \
                  md5('busy-d' || g)::uuid AS delivery_id, \
                  $2 - make_interval(secs => $1 - g) AS at, \
                  rpad('exit status 1: step ' || g || ' failed; log: ', \
                       GREATEST($4, 40)::int, 'step finished, exit status 0; ') AS log \
           FROM generate_series(1, $1) AS g) ";
    let inserts = [
        "INSERT INTO nomos_assent_windows \
           (session_id, opened_at, expires_at, route, continuations, closed_at, updated_at) \
         SELECT $3, $2 - make_interval(secs => $1 + 1), $2 + interval '30 minutes', 'button', \
                $1, NULL, $2",
        "INSERT INTO executions (id, status, result, updated_at, finished_at) \
         SELECT execution_id, 'failed', log, at, at FROM h",
        "INSERT INTO nomos_policy_decisions \
           (decided_at, session_id, execution_id, revision, input, output, action, \
            idempotency_key) \
         SELECT at, $3, execution_id, 'bench', '{\"result\": \"' || log || '\"}', \
                '{\"decision\":\"continue\"}', 'continued', 'busy-' || g FROM h",
        "INSERT INTO nomos_deliveries \
           (id, session_id, kind, idempotency_key, execution_ids, note, policy_revision, \
            state, attempts, claims, next_attempt_at, created_at, delivered_at, updated_at) \
         SELECT delivery_id, $3, 'continuation', 'busy-' || g, ARRAY[execution_id], \
                'execution ' || execution_id || ' failed: ' || log, 'bench', \
                'delivered', 1, 1, at, at, at + interval '1 second', at + interval '1 second' \
         FROM h",
        "INSERT INTO nomos_plan_executions \
           (execution_id, session_id, created_at, continued_at, delivery_id, outcome) \
         SELECT execution_id, $3, at, at + interval '1 second', delivery_id, 'continued' FROM h",
    ];
    for insert in inserts {
        let sql = if insert.contains(" FROM h") {
            format!("{BUSY}{insert}")
        } else {
            insert.to_owned()
        };
        let mut q = query(sql).bind(executions).bind(trunc(now)).bind(session);
        if insert.contains(" FROM h") {
            q = q.bind(text_chars);
        }
        q.execute(store).await?;
    }
    Ok(())
}

/// One row per `(execution, session)` pair of parameters `$1` (execution
/// ids) and `$2` (session ids, as many), as columns `id` and `session_id`:
/// `unnest` of the two arrays on PostgreSQL, the two JSON lists joined by
/// position on SQLite.
fn id_pairs(backend: Backend) -> &'static str {
    backend.pick(
        "unnest($1::uuid[], $2::uuid[]) AS t(id, session_id)",
        "(SELECT e.value AS id, s.value AS session_id \
          FROM json_each($1) e JOIN json_each($2) s ON s.key = e.key) AS t",
    )
}

/// Links each `(session, execution)` pair at `linked_at` and reports every
/// execution with `status` and `result`, finished at `finished_at` when that
/// is given; one transaction of two statements, which wakes the workers on
/// commit. It leaves what [`Store::link`] and
/// [`Store::upsert_execution_status`] would (with a terminal `finished`),
/// without their round trips per row, so it must change when they do. Both
/// backends.
pub async fn add_executions(
    store: &Store,
    pairs: &[(Uuid, Uuid)],
    status: &str,
    result: &str,
    finished_at: Option<DateTime<Utc>>,
    linked_at: DateTime<Utc>,
) -> Result<()> {
    let sessions: Vec<Uuid> = pairs.iter().map(|p| p.0).collect();
    let executions: Vec<Uuid> = pairs.iter().map(|p| p.1).collect();
    let rows = id_pairs(store.backend());
    let mut tx = store.begin().await?;
    query(format!(
        "INSERT INTO nomos_plan_executions (execution_id, session_id, created_at) \
         SELECT t.id, t.session_id, $3 FROM {rows}"
    ))
    .bind(&executions)
    .bind(&sessions)
    .bind(trunc(linked_at))
    .execute(&mut tx)
    .await?;
    query(format!(
        "INSERT INTO executions (id, status, result, updated_at, finished_at) \
         SELECT t.id, $3, $4, $5, $6 FROM {rows}"
    ))
    .bind(&executions)
    .bind(&sessions)
    .bind(status)
    .bind(result)
    .bind(trunc(finished_at.unwrap_or(linked_at)))
    .bind(finished_at.map(trunc))
    .execute(&mut tx)
    .await?;
    tx.notify_wake().await?;
    tx.commit().await
}

/// A result of `bytes` bytes of text, lines of a log as a tool prints them.
pub fn result_text(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 64);
    let mut line = 0;
    while text.len() < bytes {
        text.push_str(&format!("{line:08} step finished, exit status 0\n"));
        line += 1;
    }
    text.truncate(bytes);
    text
}

/// `VACUUM ANALYZE` of the link, execution, delivery and window tables, as autovacuum would
/// leave them in steady state (visibility map set, statistics current).
pub async fn vacuum_analyze(store: &Store) -> Result<()> {
    let pool = pg(store)?;
    // One statement per call: several in one simple query would form an
    // implicit transaction block, where VACUUM is not allowed.
    for sql in [
        "VACUUM ANALYZE nomos_plan_executions",
        "VACUUM ANALYZE executions",
        "VACUUM ANALYZE nomos_deliveries",
        "VACUUM ANALYZE nomos_assent_windows",
        "VACUUM ANALYZE nomos_sessions",
        "VACUUM ANALYZE nomos_policy_decisions",
        "VACUUM ANALYZE nomos_notices",
    ] {
        sqlx::raw_sql(sql).execute(pool).await?;
    }
    Ok(())
}

/// `ANALYZE` of the whole database, on either backend: the statistics a
/// planner reads, current (PostgreSQL's autovacuum would get there; SQLite
/// has no statistics until asked).
pub async fn analyze(store: &Store) -> Result<()> {
    query("ANALYZE").execute(store).await?;
    Ok(())
}

/// Row counts `(total links, unsettled links)`, to print next to the timings.
pub async fn link_counts(store: &Store) -> Result<(i64, i64)> {
    let pool = pg(store)?;
    let row = sqlx::query(
        "SELECT count(*) AS total, count(*) FILTER (WHERE continued_at IS NULL) AS pending \
         FROM nomos_plan_executions",
    )
    .fetch_one(pool)
    .await?;
    Ok((row.try_get("total")?, row.try_get("pending")?))
}

/// `EXPLAIN (ANALYZE, BUFFERS)` of exactly the query
/// [`Store::pending_links_ready`] runs for a first page of `limit` rows
/// under policy `revision`.
pub async fn explain_pending_links(store: &Store, limit: i64, revision: &str) -> Result<String> {
    let pool = pg(store)?;
    let sql = format!("EXPLAIN (ANALYZE, BUFFERS) {PENDING_LINKS}");
    let lines: Vec<String> = sqlx::query_scalar(&sql)
        .bind(limit)
        .bind(revision)
        .fetch_all(pool)
        .await?;
    Ok(lines.join("\n"))
}

/// Ends a notice's row in the operator's channel (`nomos_operator_notices`)
/// in `state`, as that channel's sender does, for the tests of the reads
/// that show it (the overview's notices that reached no one).
pub async fn set_operator_state(
    store: &Store,
    notice_id: Uuid,
    state: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    query("UPDATE nomos_operator_notices SET state = $2, updated_at = $3 WHERE notice_id = $1")
        .bind(notice_id)
        .bind(state)
        .bind(trunc(now))
        .execute(store)
        .await?;
    Ok(())
}

/// How many rows `table` holds (one of the store's tables, named by the
/// test), on either backend.
pub async fn count_rows(store: &Store, table: &str) -> Result<i64> {
    query(format!("SELECT COUNT(*) AS n FROM {table}"))
        .fetch_one(store)
        .await?
        .bigint("n")
}
