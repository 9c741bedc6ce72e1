//! Migrations: every version has a down script, up/down/up round trips,
//! a database migrated by a newer release or by a pre-release build is
//! refused, and history settled before migration 018 reads as continued (it
//! is not backfilled).

use nomos_continue::store::{Backend, LinkState, Settlement, Store, StoreError};
use nomos_continue_tests::db::LATEST_MIGRATION;
use uuid::Uuid;

use super::{at, planned, ready_session};

const NOMOS_TABLES: [&str; 17] = [
    "executions",
    "nomos_assent_windows",
    "nomos_chat_turns",
    "nomos_deliveries",
    "nomos_late_reports",
    "nomos_link_data",
    "nomos_notices",
    "nomos_plan_executions",
    "nomos_policy_activations",
    "nomos_policy_active",
    "nomos_policy_decisions",
    "nomos_policy_disagreements",
    "nomos_policy_revisions",
    "nomos_policy_shadow",
    "nomos_sessions",
    "nomos_status_classes",
    "nomos_workers",
];

async fn ours(store: &Store) -> Vec<String> {
    let tables = store.tables().await.expect("tables");
    tables
        .into_iter()
        .filter(|t| NOMOS_TABLES.contains(&t.as_str()))
        .collect()
}

pub async fn migrations_up_down_up(store: Store) {
    let migrator = Store::migrator(store.backend());
    let ups: Vec<i64> = migrator
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .map(|m| m.version)
        .collect();
    assert_eq!(ups, (17..=LATEST_MIGRATION).collect::<Vec<_>>());
    for v in 17..=LATEST_MIGRATION {
        assert!(
            migrator
                .iter()
                .any(|m| m.version == v && m.migration_type.is_down_migration()),
            "migration {v} has no down script"
        );
    }
    assert_eq!(store.applied_migrations().await.unwrap(), ups);
    assert_eq!(ours(&store).await, NOMOS_TABLES);

    // 039's table (a session's push configurations) comes and goes with it.
    let has_session_push = async |store: &Store| {
        let tables = store.tables().await.expect("tables");
        tables.iter().any(|t| t == "nomos_session_push")
    };
    assert!(has_session_push(&store).await);
    store.undo_migrations(38).await.expect("undo to 38");
    assert!(!has_session_push(&store).await);

    // 018 creates every table of the list; the later migrations index,
    // validate and fill, and add tables of their own.
    store.undo_migrations(18).await.expect("undo to 18");
    assert_eq!(store.applied_migrations().await.unwrap(), vec![17, 18]);
    assert_eq!(ours(&store).await, NOMOS_TABLES);
    store.undo_migrations(17).await.expect("undo to 17");
    assert_eq!(store.applied_migrations().await.unwrap(), vec![17]);
    assert_eq!(ours(&store).await, ["nomos_plan_executions"]);

    store.undo_migrations(0).await.expect("undo all");
    assert!(store.applied_migrations().await.unwrap().is_empty());
    assert!(ours(&store).await.is_empty(), "{:?}", ours(&store).await);

    store.migrate().await.expect("up again");
    store.migrate().await.expect("up is idempotent");
    assert_eq!(store.applied_migrations().await.unwrap(), ups);
    assert_eq!(ours(&store).await, NOMOS_TABLES);
    // The schema works after the round trip.
    let (session, execs) = ready_session(&store, 1).await;
    planned(&store, session, &execs, at(2)).await;
}

pub async fn a_newer_database_is_refused(store: Store) {
    let checksum = match store.backend() {
        Backend::Postgres => "decode('00', 'hex')",
        Backend::Sqlite => "X'00'",
    };
    store
        .execute_raw(&format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (999, 'from a newer release', TRUE, {checksum}, 0)"
        ))
        .await
        .expect("record a newer migration");
    let err = store
        .migrate()
        .await
        .expect_err("a newer schema is refused");
    assert!(
        matches!(
            err,
            StoreError::NewerSchema {
                database: 999,
                binary: LATEST_MIGRATION
            }
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("999") && message.contains(&LATEST_MIGRATION.to_string()),
        "{message}"
    );
}

/// Records `rows` in `_sqlx_migrations` as applied, each with a checksum
/// that is no text's of this binary.
async fn record_applied(store: &Store, rows: impl IntoIterator<Item = (i64, &str)>) {
    let checksum = match store.backend() {
        Backend::Postgres => "decode('00', 'hex')",
        Backend::Sqlite => "X'00'",
    };
    for (version, description) in rows {
        store
            .execute_raw(&format!(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                 VALUES ({version}, '{description}', TRUE, {checksum}, 0)"
            ))
            .await
            .expect("record a migration");
    }
}

/// A database as a pre-release build left it: its own 018-044 recorded (the
/// texts squashed since, so other checksums). Refused, naming the first one
/// and saying to recreate the database, not that a newer release made it.
pub async fn a_pre_release_database_is_refused(store: Store) {
    store
        .execute_raw("DELETE FROM _sqlx_migrations WHERE version > 17")
        .await
        .expect("forget this binary's migrations");
    record_applied(&store, (18..=44).map(|v| (v, "pre-release"))).await;
    let err = store
        .migrate()
        .await
        .expect_err("a pre-release schema is refused");
    assert!(
        matches!(err, StoreError::PreRelease { version: 18 }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("migration 18")
            && message.contains("pre-release")
            && message.contains("Recreate the database")
            && !message.contains("newer"),
        "{message}"
    );
    // Refused before anything ran: the records are as they were.
    assert_eq!(
        store.applied_migrations().await.unwrap(),
        (17..=44).collect::<Vec<_>>()
    );
}

/// This binary's migrations all applied, plus the next version: a newer
/// release wrote it (releases number on after the squash, from 025), so the
/// database is not called pre-release.
pub async fn the_next_version_is_a_newer_release(store: Store) {
    let next = LATEST_MIGRATION + 1;
    record_applied(&store, [(next, "from a newer release")]).await;
    let err = store
        .migrate()
        .await
        .expect_err("a newer schema is refused");
    assert!(
        matches!(err, StoreError::NewerSchema { database, .. } if database == next),
        "{err:?}"
    );
}

pub async fn history_settled_before_018_reads_as_continued(store: Store) {
    // A row the original worker settled: continued_at set, no outcome (the
    // column did not exist), and not backfilled by the migrations.
    let (execution, session) = (Uuid::new_v4(), Uuid::new_v4());
    let now = match store.backend() {
        Backend::Postgres => "now()",
        Backend::Sqlite => "1",
    };
    store
        .execute_raw(&format!(
            "INSERT INTO nomos_plan_executions (execution_id, session_id, continued_at, created_at) \
             VALUES ('{execution}', '{session}', {now}, {now})"
        ))
        .await
        .expect("insert a legacy settled row");
    let summary = store.session_summary(session).await.expect("summary");
    assert_eq!(summary.links.len(), 1);
    assert_eq!(summary.links[0].outcome, Some(Settlement::Continued));
    assert_eq!(summary.links[0].state(), LinkState::Continued);
    assert!(store
        .pending_links_for_session(session)
        .await
        .expect("pending")
        .is_empty());
    let overview = store.overview().await.expect("overview");
    assert_eq!(
        (overview.pending_links, overview.continued_links),
        (0, 1),
        "{overview:?}"
    );
}
