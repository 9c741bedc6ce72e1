//! Migrating a live database: the seed's table (017) with a long history,
//! the runtime inserting links all along, and the real
//! `nomos-continue migrate`. The migrations must not rewrite the history
//! and must never make an insert wait more than [`WORST_WAIT`].
//!
//! The history size is `NOMOS_LIVE_MIGRATION_ROWS` (default
//! [`DEFAULT_ROWS`]); the ignored `..._ten_million_rows` variant is the one
//! BENCHMARKS.md reports. PostgreSQL only (SQLite has one writer process);
//! skipped when the server is unreachable, failing under `CI=true`.

use std::time::{Duration, Instant};

use nomos_continue::store::{Backend, Store, StoreError};
use nomos_continue_tests::db::{empty_postgres, PgTestDb, LATEST_MIGRATION};
use nomos_continue_tests::replica::binary;
use sqlx::{Connection, PgConnection};
use tokio::sync::watch;
use uuid::Uuid;

/// History rows seeded before migrating, unless the variable says otherwise.
const DEFAULT_ROWS: i64 = 1_000_000;

/// The variable that overrides [`DEFAULT_ROWS`].
const ROWS_VAR: &str = "NOMOS_LIVE_MIGRATION_ROWS";

/// The longest any single insert may wait while the migrations run.
const WORST_WAIT: Duration = Duration::from_secs(1);

/// The runtime's pace: one link inserted every so often.
const PACE: Duration = Duration::from_millis(10);

/// One row in this many is still unsettled; the others were continued by
/// the original worker (continued_at set, no outcome column yet).
const UNSETTLED_EVERY: i64 = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrating_a_live_history_keeps_inserts_flowing() {
    let rows = std::env::var(ROWS_VAR)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|e| panic!("{ROWS_VAR}={v:?}: {e}"))
        })
        .unwrap_or(DEFAULT_ROWS);
    live_migration(rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "10M rows take minutes; the figure in BENCHMARKS.md"]
async fn migrating_a_live_history_of_ten_million_rows() {
    live_migration(10_000_000).await;
}

/// What the runtime saw while the migrations ran.
struct Inserts {
    count: i64,
    worst: Duration,
    over_100ms: usize,
}

async fn live_migration(rows: i64) {
    let binary = binary();
    let Some(db) = seeded(rows).await else {
        return;
    };
    let (stop, stopped) = watch::channel(false);
    let inserter = tokio::spawn(insert_every(db.url.clone(), PACE, stopped));
    // Let the runtime's inserts get going before the deploy starts.
    tokio::time::sleep(PACE * 10).await;

    let started = Instant::now();
    let output = tokio::process::Command::new(&binary)
        .args(["migrate", "--database-url", &db.url])
        .env_remove("DATABASE_URL")
        .output()
        .await
        .unwrap_or_else(|e| panic!("run {}: {e}", binary.display()));
    let took = started.elapsed();
    assert!(
        output.status.success(),
        "migrate exited {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stop.send(true).expect("the inserter is listening");
    let inserts = inserter.await.expect("the inserter did not panic");
    eprintln!(
        "live migration: {rows} history rows, migrate took {took:.1?}; \
         {} inserts meanwhile, worst wait {:.1?}, {} over 100 ms",
        inserts.count, inserts.worst, inserts.over_100ms
    );
    assert!(
        inserts.worst <= WORST_WAIT,
        "an insert waited {:?} (limit {WORST_WAIT:?})",
        inserts.worst
    );

    let store = &db.store;
    eprintln!("per migration: {}", step_times(store).await);
    assert_eq!(
        store.applied_migrations().await.expect("applied"),
        (17..=LATEST_MIGRATION).collect::<Vec<_>>()
    );
    let unsettled = rows / UNSETTLED_EVERY;
    let overview = store.overview().await.expect("overview");
    assert_eq!(
        (overview.pending_links, overview.continued_links),
        (unsettled + inserts.count, rows - unsettled),
        "every row is kept, and the history settled before 018 reads as continued"
    );
    let rewritten = scalar(
        store,
        "SELECT COUNT(*) FROM nomos_plan_executions WHERE outcome IS NOT NULL",
    )
    .await;
    assert_eq!(rewritten, 0, "no history row was rewritten");
    // 018's trigger listed the sessions of the inserts meanwhile, 024 those
    // of the history; each at its first link.
    let listed = scalar(store, "SELECT COUNT(*) FROM nomos_sessions").await;
    let sessions = scalar(
        store,
        "SELECT COUNT(DISTINCT session_id) FROM nomos_plan_executions",
    )
    .await;
    assert_eq!(listed, sessions, "a session is missing from nomos_sessions");
    let misdated = scalar(
        store,
        "SELECT COUNT(*) FROM nomos_sessions s WHERE first_seen_at <> \
         (SELECT MIN(created_at) FROM nomos_plan_executions l WHERE l.session_id = s.session_id)",
    )
    .await;
    assert_eq!(misdated, 0, "a session is not listed at its first link");
    assert_schema_complete(store).await;
    db.cleanup().await;
}

/// A fresh database with only the seed's 017 applied (as the runtime's own
/// tooling did, so not recorded in `_sqlx_migrations`) and `rows` links of
/// history, vacuumed like a table that has been in service.
async fn seeded(rows: i64) -> Option<PgTestDb> {
    let db = empty_postgres().await?;
    let seed = Store::migrator(Backend::Postgres)
        .iter()
        .find(|m| m.version == 17 && m.migration_type.is_up_migration())
        .expect("migration 017");
    db.store.execute_raw(&seed.sql).await.expect("apply 017");
    db.store
        .execute_raw(&format!(
            "INSERT INTO nomos_plan_executions (execution_id, session_id, continued_at, created_at) \
             SELECT md5('e' || g)::uuid, md5('s' || (g % 1000))::uuid, \
                    CASE WHEN g % {UNSETTLED_EVERY} <> 0 \
                         THEN now() - make_interval(secs => {rows} - g) END, \
                    now() - make_interval(secs => {rows} - g + 1) \
             FROM generate_series(1, {rows}) AS g"
        ))
        .await
        .expect("seed the history");
    db.store
        .execute_raw("VACUUM ANALYZE nomos_plan_executions")
        .await
        .expect("vacuum");
    Some(db)
}

/// The runtime: on its own connection, one link every `pace` (only the
/// seed's columns, as the runtime knows no others), each insert timed,
/// until `stop` turns true. Any failed insert fails the test.
async fn insert_every(url: String, pace: Duration, mut stop: watch::Receiver<bool>) -> Inserts {
    let mut conn = PgConnection::connect(&url)
        .await
        .expect("inserter connects");
    let mut ticks = tokio::time::interval(pace);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut out = Inserts {
        count: 0,
        worst: Duration::ZERO,
        over_100ms: 0,
    };
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.changed() => break,
        }
        let started = Instant::now();
        sqlx::query("INSERT INTO nomos_plan_executions (execution_id, session_id) VALUES ($1, $2)")
            .bind(Uuid::new_v4())
            .bind(Uuid::new_v4())
            .execute(&mut conn)
            .await
            .expect("the runtime's insert succeeds");
        let waited = started.elapsed();
        out.count += 1;
        out.worst = out.worst.max(waited);
        out.over_100ms += usize::from(waited > Duration::from_millis(100));
    }
    out
}

/// Every index valid, both checks validated.
async fn assert_schema_complete(store: &Store) {
    let invalid = scalar(store, "SELECT COUNT(*) FROM pg_index WHERE NOT indisvalid").await;
    assert_eq!(invalid, 0, "an index was left invalid");
    let indexes = scalar(
        store,
        "SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'nomos_plan_executions' \
         AND indexname IN ('idx_nomos_plan_exec_ready', 'idx_nomos_plan_exec_session', \
                           'idx_nomos_plan_exec_delivery', 'idx_nomos_plan_exec_unparked')",
    )
    .await;
    assert_eq!(indexes, 4);
    let unvalidated = scalar(
        store,
        "SELECT COUNT(*) FROM pg_constraint \
         WHERE conrelid = 'nomos_plan_executions'::regclass AND contype = 'c' AND NOT convalidated",
    )
    .await;
    assert_eq!(unvalidated, 0, "a check was left NOT VALID");
}

/// How long each migration after the seed's took (every one touches the
/// link table), as sqlx recorded.
async fn step_times(store: &Store) -> String {
    let pool = store.pg_pool().expect("PostgreSQL");
    let rows: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT version, execution_time FROM _sqlx_migrations \
         WHERE version >= 18 ORDER BY version",
    )
    .fetch_all(pool)
    .await
    .expect("_sqlx_migrations");
    rows.iter()
        .map(|(version, nanos)| {
            format!(
                "{version}: {:.1?}",
                Duration::from_nanos(nanos.unsigned_abs())
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

async fn scalar(store: &Store, sql: &str) -> i64 {
    let pool = store.pg_pool().expect("PostgreSQL");
    sqlx::query_scalar(sql)
        .fetch_one(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A long transaction reading the table holds a lock that 018's ALTER TABLE
/// must wait for. The wait is bounded by its lock_timeout (inserts queue
/// behind a waiting ALTER); with one attempt the migration gives up with a
/// clear error and nothing of 018 applied; with the default attempts it
/// succeeds once the transaction ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_transaction_delays_the_migration_not_the_inserts() {
    let Some(db) = seeded(1000).await else {
        return;
    };
    let mut reader = PgConnection::connect(&db.url).await.expect("reader");
    sqlx::raw_sql("BEGIN; SELECT 1 FROM nomos_plan_executions LIMIT 1")
        .execute(&mut reader)
        .await
        .expect("a long reader");

    let err = db
        .store
        .migrate_with_attempts(1)
        .await
        .expect_err("times out");
    assert!(
        matches!(
            err,
            StoreError::LockTimeout {
                version: 18,
                attempts: 1
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("migration 18"), "{err}");
    assert_eq!(db.store.applied_migrations().await.expect("applied"), [17]);

    // The reader ends while the migration is retrying; a retry succeeds
    // (and finds the migrator's advisory lock free).
    let ends = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        sqlx::raw_sql("COMMIT")
            .execute(&mut reader)
            .await
            .expect("commit");
    };
    let (migrated, ()) = tokio::join!(db.store.migrate(), ends);
    migrated.expect("migrates once the reader is gone");
    assert_eq!(
        db.store.applied_migrations().await.expect("applied"),
        (17..=LATEST_MIGRATION).collect::<Vec<_>>()
    );
    db.cleanup().await;
}

/// A write transaction left open on the seed's table: the re-run of 017
/// waits for it (its `CREATE INDEX IF NOT EXISTS` takes SHARE to find the
/// index), but only up to its lock timeout, so the runtime's inserts never
/// queue behind that wait for long; the migration goes through once the
/// transaction ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_write_transaction_delays_the_seed_check_not_the_inserts() {
    let Some(db) = seeded(1000).await else {
        return;
    };
    let mut writer = PgConnection::connect(&db.url).await.expect("writer");
    sqlx::raw_sql(
        "BEGIN; INSERT INTO nomos_plan_executions (execution_id, session_id) \
         VALUES (gen_random_uuid(), gen_random_uuid())",
    )
    .execute(&mut writer)
    .await
    .expect("an open write");
    let (stop, stopped) = watch::channel(false);
    let inserter = tokio::spawn(insert_every(db.url.clone(), PACE, stopped));

    let err = db
        .store
        .migrate_with_attempts(2)
        .await
        .expect_err("times out");
    stop.send(true).expect("the inserter is listening");
    let inserts = inserter.await.expect("the inserter did not panic");
    assert!(
        matches!(
            err,
            StoreError::LockTimeout {
                version: 17,
                attempts: 2
            }
        ),
        "{err:?}"
    );
    assert!(
        inserts.worst <= WORST_WAIT,
        "an insert waited {:?} (limit {WORST_WAIT:?})",
        inserts.worst
    );
    assert!(db
        .store
        .applied_migrations()
        .await
        .expect("applied")
        .is_empty());

    sqlx::raw_sql("COMMIT")
        .execute(&mut writer)
        .await
        .expect("commit");
    db.store
        .migrate()
        .await
        .expect("migrates once the writer is done");
    assert_eq!(
        db.store.applied_migrations().await.expect("applied"),
        (17..=LATEST_MIGRATION).collect::<Vec<_>>()
    );
    db.cleanup().await;
}

/// An interrupted `CREATE INDEX CONCURRENTLY` leaves an INVALID index of the
/// migration's name behind; the next migrate drops it and builds the index
/// for real instead of taking it for built (`IF NOT EXISTS`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_left_invalid_by_an_interrupted_build_is_rebuilt() {
    let Some(db) = seeded(100).await else {
        return;
    };
    let store = &db.store;
    store.migrate().await.expect("migrate");
    // Back to before 019, the first index build.
    store.undo_migrations(18).await.expect("undo to 18");
    // A failed concurrent build (a unique index over duplicates) leaves
    // the name behind, invalid, as an interrupted one would.
    let failed = store
        .execute_raw(
            "CREATE UNIQUE INDEX CONCURRENTLY idx_nomos_plan_exec_ready \
             ON nomos_plan_executions ((1))",
        )
        .await;
    assert!(failed.is_err(), "the build should fail over duplicates");
    let invalid = "SELECT COUNT(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
                   WHERE c.relname = 'idx_nomos_plan_exec_ready' AND NOT i.indisvalid";
    assert_eq!(scalar(store, invalid).await, 1);

    store.migrate().await.expect("migrate again");
    assert_eq!(scalar(store, invalid).await, 0);
    let definition = scalar(
        store,
        "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'idx_nomos_plan_exec_ready' \
         AND indexdef LIKE '%(created_at, execution_id) INCLUDE (session_id)%'",
    )
    .await;
    assert_eq!(definition, 1, "the migration's index, not the leftover");
    assert_schema_complete(store).await;
    db.cleanup().await;
}

/// The binary refuses a database migrated by a newer release, naming both
/// versions, instead of sqlx's "previously applied but is missing".
#[tokio::test]
async fn the_binary_refuses_a_database_from_a_newer_release() {
    let binary = binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite:{}", dir.path().join("newer.db").display());
    let store = Store::connect(&url).await.expect("connect");
    store.migrate().await.expect("migrate");
    // The next release's first migration.
    let newer = LATEST_MIGRATION + 1;
    store
        .execute_raw(&format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ({newer}, 'from a newer release', TRUE, X'00', 0)"
        ))
        .await
        .expect("record a newer migration");
    store.close().await;
    for command in ["migrate", "status"] {
        let output = std::process::Command::new(&binary)
            .args([command, "--database-url", &url])
            .env_remove("DATABASE_URL")
            .output()
            .unwrap_or_else(|e| panic!("run {command}: {e}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{command} should refuse");
        assert!(
            stderr.contains(&format!("migration {newer}"))
                && stderr.contains(&format!("({LATEST_MIGRATION})")),
            "{command}: {stderr}"
        );
    }
}

/// The binary refuses a database a pre-release build migrated (its
/// 018-044, squashed since), on both backends, and says to recreate it
/// rather than that a newer release made it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_refuses_a_database_from_a_pre_release_build() {
    let binary = binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = format!("sqlite:{}", dir.path().join("pre-release.db").display());
    let store = Store::connect(&sqlite).await.expect("connect");
    let postgres = empty_postgres().await;
    let mut urls = vec![(store, sqlite, "X'00'")];
    if let Some(db) = &postgres {
        urls.push((db.store.clone(), db.url.clone(), "decode('00', 'hex')"));
    }
    for (store, url, checksum) in urls {
        store.migrate().await.expect("migrate");
        // What a pre-release build recorded: its own 018-044.
        store
            .execute_raw("DELETE FROM _sqlx_migrations WHERE version > 17")
            .await
            .expect("forget this binary's migrations");
        for version in 18..=44 {
            store
                .execute_raw(&format!(
                    "INSERT INTO _sqlx_migrations \
                     (version, description, success, checksum, execution_time) \
                     VALUES ({version}, 'pre-release', TRUE, {checksum}, 0)"
                ))
                .await
                .expect("record a pre-release migration");
        }
        if store.backend() == Backend::Sqlite {
            store.close().await;
        }
        for command in ["migrate", "status"] {
            let output = std::process::Command::new(&binary)
                .args([command, "--database-url", &url])
                .env_remove("DATABASE_URL")
                .output()
                .unwrap_or_else(|e| panic!("run {command}: {e}"));
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(!output.status.success(), "{command} should refuse");
            assert!(
                stderr.contains("migration 18 of a pre-release")
                    && stderr.contains("Recreate the database")
                    && !stderr.contains("newer"),
                "{:?} {command}: {stderr}",
                store.backend()
            );
        }
    }
    if let Some(db) = postgres {
        db.cleanup().await;
    }
}

/// Replicas started together all migrate. A process waiting on sqlx's
/// advisory lock holds a running statement that the holder's
/// `CREATE INDEX CONCURRENTLY` waits for, which PostgreSQL reported as a
/// deadlock; the waiters now poll a lock of their own instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_migrating_together_all_succeed() {
    let Some(db) = empty_postgres().await else {
        return;
    };
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(Store::connect(&db.url).await.expect("connect"));
    }
    let (a, b, c) = tokio::join!(
        replicas[0].migrate(),
        replicas[1].migrate(),
        replicas[2].migrate()
    );
    for (i, result) in [a, b, c].into_iter().enumerate() {
        result.unwrap_or_else(|e| panic!("replica {i} failed to migrate: {e}"));
    }
    assert_eq!(
        db.store.applied_migrations().await.expect("applied"),
        (17..=LATEST_MIGRATION).collect::<Vec<_>>()
    );
    assert_schema_complete(&db.store).await;
    for store in replicas {
        store.close().await;
    }
    db.cleanup().await;
}
