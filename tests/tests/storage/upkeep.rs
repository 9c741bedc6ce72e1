//! PostgreSQL's upkeep of the store's tables as the store reads it (for
//! `serve`'s start-up warning and the `db_table_*` metrics): the settings
//! autovacuum depends on, matched against the server's own answer, and a
//! table's dead row versions, heap-only updates and last vacuum, made on
//! purpose and read back. SQLite has none to report.

use nomos_continue::maintenance::vacuum_warning;
use nomos_continue::store::{Store, TableUpkeep, VacuumSettings};
use nomos_continue_tests::db::{fresh_postgres_db, fresh_sqlite};
use sqlx::{Connection, PgConnection};

#[tokio::test]
async fn sqlite_has_no_upkeep_to_report() {
    let (store, _dir) = fresh_sqlite().await;
    assert_eq!(store.vacuum_settings().await.expect("settings"), None);
    assert_eq!(store.table_upkeep().await.expect("tables"), Vec::new());
}

async fn show(conn: &mut PgConnection, setting: &str) -> bool {
    let value: String = sqlx::query_scalar(&format!("SHOW {setting}"))
        .fetch_one(conn)
        .await
        .expect("SHOW");
    value == "on"
}

async fn run(conn: &mut PgConnection, sql: &str) {
    sqlx::raw_sql(sql)
        .execute(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

async fn table(store: &Store, name: &str) -> TableUpkeep {
    let tables = store.table_upkeep().await.expect("tables");
    tables
        .iter()
        .find(|t| t.table == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} missing from {tables:#?}"))
}

async fn settings_of(store: &Store) -> VacuumSettings {
    store
        .vacuum_settings()
        .await
        .expect("settings")
        .expect("PostgreSQL has settings")
}

#[tokio::test]
async fn the_settings_are_the_servers_and_a_disabled_table_is_named() {
    let Some(db) = fresh_postgres_db().await else {
        return;
    };
    let mut conn = PgConnection::connect(&db.url).await.expect("connect");
    let settings = settings_of(&db.store).await;
    assert_eq!(settings.autovacuum, show(&mut conn, "autovacuum").await);
    assert_eq!(settings.track_counts, show(&mut conn, "track_counts").await);
    assert!(
        settings.tables_without_autovacuum.is_empty(),
        "{settings:?}"
    );
    // The warning follows the server: this machine's shared server runs
    // with autovacuum off (a CI setting), a developer's may not.
    assert_eq!(
        vacuum_warning(&settings.problems()).is_some(),
        !(settings.autovacuum && settings.track_counts),
        "{settings:?}"
    );

    // Stored as written: `f` is as much "off" as `off` is.
    run(
        &mut conn,
        "ALTER TABLE nomos_workers SET (autovacuum_enabled = f)",
    )
    .await;
    let settings = settings_of(&db.store).await;
    assert_eq!(settings.tables_without_autovacuum, ["nomos_workers"]);
    let warning = vacuum_warning(&settings.problems()).expect("a warning");
    assert!(
        warning.contains("nomos_workers (autovacuum_enabled = off)"),
        "{warning}"
    );
    conn.close().await.expect("close");
    db.cleanup().await;
}

#[tokio::test]
async fn dead_rows_hot_updates_and_vacuums_are_read_per_table() {
    let Some(db) = fresh_postgres_db().await else {
        return;
    };
    let mut conn = PgConnection::connect(&db.url).await.expect("connect");
    let tables = db.store.table_upkeep().await.expect("tables");
    for ours in [
        "nomos_plan_executions",
        "nomos_deliveries",
        "nomos_assent_windows",
        "nomos_policy_decisions",
        "executions",
    ] {
        assert!(
            tables.iter().any(|t| t.table == ours),
            "{ours} missing from {tables:#?}"
        );
    }
    assert!(
        tables
            .iter()
            .all(|t| t.table.starts_with("nomos_") || t.table == "executions"),
        "a table that is not ours: {tables:#?}"
    );

    // A hundred workers, each heartbeat written once (a column no index
    // reads: heap-only, on the room migration 032 leaves), then all gone.
    run(
        &mut conn,
        "INSERT INTO nomos_workers (worker_id, instance, heartbeat_at, started_at) \
         SELECT 'upkeep-' || g, gen_random_uuid(), now(), now() FROM generate_series(1, 100) g",
    )
    .await;
    run(
        &mut conn,
        "UPDATE nomos_workers SET heartbeat_at = heartbeat_at + interval '1 second'",
    )
    .await;
    run(&mut conn, "DELETE FROM nomos_workers").await;
    // A backend flushes its counts when it next goes idle, at most once a
    // second unless told to: the answer to this comes after the flush.
    run(&mut conn, "SELECT pg_stat_force_next_flush()").await;
    let workers = table(&db.store, "nomos_workers").await;
    assert_eq!(workers.updates, 100, "{workers:?}");
    assert!(workers.hot_updates > 0, "no heap-only update: {workers:?}");
    assert!(workers.dead_tuples >= 100, "{workers:?}");
    assert!(workers.bytes > 0, "{workers:?}");

    // One second of slack: the server's clock and this process's are the
    // same machine's, but the server keeps microseconds.
    let before = chrono::Utc::now() - chrono::Duration::seconds(1);
    run(&mut conn, "VACUUM nomos_workers").await;
    let vacuumed = table(&db.store, "nomos_workers").await;
    assert!(
        vacuumed.last_vacuum.is_some_and(|at| at >= before),
        "{vacuumed:?}"
    );
    assert_eq!(vacuumed.dead_tuples, 0, "{vacuumed:?}");
    conn.close().await.expect("close");
    db.cleanup().await;
}
