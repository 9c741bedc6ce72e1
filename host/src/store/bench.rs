//! Support for the claim-query benchmark (`host/examples/claim_bench.rs`).
//!
//! Why it lives here: all SQL of the project lives in the store, including
//! the bulk fill and the `EXPLAIN` the benchmark prints. PostgreSQL only: the
//! question it answers ("does the poll stay flat as history grows?") is about
//! the production backend's partial index.

use chrono::{DateTime, Utc};
use sqlx::{Connection, PgConnection, Row};

use super::dialect::{query, trunc};
use super::links::PENDING_LINKS;
use super::{Db, Result, Store, StoreError};

fn pg(store: &Store) -> Result<&sqlx::PgPool> {
    match &store.db {
        Db::Pg(pool) => Ok(pool),
        Db::Lite(_) => Err(StoreError::InvalidValue {
            field: "backend",
            reason: "the claim benchmark needs PostgreSQL".into(),
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

/// `VACUUM ANALYZE` of the link and execution tables, as autovacuum would
/// leave them in steady state (visibility map set, statistics current).
pub async fn vacuum_analyze(store: &Store) -> Result<()> {
    let pool = pg(store)?;
    // One statement per call: several in one simple query would form an
    // implicit transaction block, where VACUUM is not allowed.
    for sql in [
        "VACUUM ANALYZE nomos_plan_executions",
        "VACUUM ANALYZE executions",
    ] {
        sqlx::raw_sql(sql).execute(pool).await?;
    }
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
