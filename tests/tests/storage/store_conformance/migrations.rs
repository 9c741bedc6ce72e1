//! Migrations: every version has a down script, up/down/up round trips,
//! a database migrated by a newer release is refused, and history settled
//! before migration 018 reads as continued (it is not backfilled).

use nomos_continue::store::{Backend, LinkState, Settlement, Store, StoreError};
use nomos_continue_tests::db::LATEST_MIGRATION;
use uuid::Uuid;

use super::{at, planned, ready_session};

const NOMOS_TABLES: [&str; 12] = [
    "executions",
    "nomos_assent_windows",
    "nomos_chat_turns",
    "nomos_deliveries",
    "nomos_late_reports",
    "nomos_notices",
    "nomos_plan_executions",
    "nomos_policy_activations",
    "nomos_policy_active",
    "nomos_policy_revisions",
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

    store.undo_migrations(20).await.expect("undo to 20");
    assert_eq!(
        store.applied_migrations().await.unwrap(),
        vec![17, 18, 19, 20]
    );
    assert_eq!(
        ours(&store).await,
        [
            "nomos_assent_windows",
            "nomos_deliveries",
            "nomos_plan_executions"
        ]
    );

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
