//! What `/metrics` reads once per scrape rather than counts as it goes:
//! the policy runtime's counters (kept by `policy`), the shadow revision's,
//! the database-wide gauges every replica reports alike, and the
//! connection pools. The handler gathers them into a [`Scrape`]; each
//! render builds a small registry of them beside the process's own.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::process::ProcessGauges;
use super::PREFIX;
use crate::policy::{PolicyFailure, PolicyStats, ShadowStats};

/// Everything one scrape reads.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    /// The active policy runtime's counters.
    pub policy: PolicyStats,
    /// The shadow revision's counters (all 0 with no shadow).
    pub shadow: ShadowStats,
    /// The active revision's sha256.
    pub active_revision: String,
    /// The gauges read from the database.
    pub database: DatabaseGauges,
    /// Each connection pool of this process.
    pub pools: Vec<PoolGauges>,
    /// The process's CPU, memory and descriptors (`None` off Linux).
    pub process: Option<ProcessGauges>,
}

/// The gauges read from the database at scrape time, so every replica
/// reports the same database-wide figure. The `/metrics` handler fills
/// each field from one store query; a field left `None` (its query failed,
/// logged by the handler) is left out of the exposition rather than
/// failing the scrape or reading as 0.
#[derive(Debug, Clone, Default)]
pub struct DatabaseGauges {
    /// `nomos_continue_backlog_finished` and
    /// `nomos_continue_backlog_oldest_age_seconds` (`Store::backlog`).
    pub backlog: Option<BacklogGauges>,
    /// `nomos_continue_notices_undelivered`: notices that reached no one,
    /// their delivery to the agent and to the operator's channel both ended
    /// without success. Above 0 means someone was never told of a failure.
    pub notices_undelivered: Option<i64>,
    /// `nomos_continue_stuck_executions`: executions linked in an open
    /// assent window and still not finished after the stuck threshold: a
    /// tool that never reports back, while its session waits.
    pub stuck_executions: Option<i64>,
    /// The `nomos_continue_db_table_*` families: PostgreSQL's upkeep of
    /// each of the store's tables (empty on SQLite, which has none).
    pub tables: Option<Vec<TableGauges>>,
}

/// One table's upkeep as `/metrics` shows it (`store::TableUpkeep`, and
/// whether autovacuum can reach it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableGauges {
    /// The `table` label.
    pub table: String,
    /// Whether autovacuum runs on it: the server's `autovacuum` and
    /// `track_counts` are on and the table does not turn it off.
    pub autovacuum: bool,
    /// Estimated live rows.
    pub live_tuples: i64,
    /// Dead row versions not yet vacuumed.
    pub dead_tuples: i64,
    /// When it was last vacuumed (manually or not), as Unix seconds; 0 if
    /// never, so `time() - …` reads as "very long ago".
    pub last_vacuum_seconds: f64,
    /// Rows updated, and of those heap-only (no index entry written).
    pub updates: u64,
    /// Of `updates`, the heap-only ones.
    pub hot_updates: u64,
    /// Bytes on disk, indexes and TOAST included.
    pub bytes: i64,
}

/// The backlog of finished executions whose links are not settled.
#[derive(Debug, Clone, Copy, Default)]
pub struct BacklogGauges {
    /// How many there are.
    pub finished: i64,
    /// How long the oldest has waited; `None` when there are none.
    pub oldest_age: Option<Duration>,
}

/// How full one connection pool is (sqlx's own figures, read at scrape time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolGauges {
    /// The `pool` label: `worker` or `requests`.
    pub pool: &'static str,
    /// Connections open, idle or in use.
    pub size: u32,
    /// Of those, the idle ones.
    pub idle: u32,
    /// The most the pool opens.
    pub max: u32,
}

type Label = [(&'static str, &'static str); 1];

impl Scrape {
    /// A registry holding this scrape's figures.
    pub(super) fn registry(&self) -> Registry {
        let mut r = Registry::with_prefix(PREFIX);
        self.register_policy(&mut r);
        self.register_shadow(&mut r);
        self.database.register(&mut r);
        self.register_pools(&mut r);
        r
    }

    fn register_policy(&self, r: &mut Registry) {
        let failures = Family::<Label, Counter>::default();
        for kind in PolicyFailure::KINDS {
            failures.get_or_create_owned(&[("kind", kind)]);
        }
        for (kind, n) in &self.policy.failures {
            failures.get_or_create(&[("kind", *kind)]).inc_by(*n);
        }
        r.register(
            "policy_failures",
            "Policy calls that trapped, timed out or answered malformed, by kind",
            failures,
        );
        let counters = [
            (
                "policy_evaluations",
                "Policy calls",
                self.policy.evaluations,
            ),
            (
                "policy_swaps",
                "Policy revisions activated",
                self.policy.swaps,
            ),
            (
                "policy_rejected",
                "Policy candidates refused",
                self.policy.rejected_candidates,
            ),
            (
                "policy_fallbacks",
                "Returns to the last good policy",
                self.policy.fallbacks,
            ),
        ];
        register_counters(r, counters);
        let revision = Family::<[(&'static str, String); 1], Gauge>::default();
        revision
            .get_or_create(&[("revision", self.active_revision.clone())])
            .set(1);
        r.register(
            "policy_active_revision",
            "The active policy revision (sha256)",
            revision,
        );
    }

    fn register_shadow(&self, r: &mut Registry) {
        let counters = [
            (
                "policy_shadow_decisions",
                "Decisions the shadow policy took and compared with the active one",
                self.shadow.decisions,
            ),
            (
                "policy_shadow_disagreements",
                "Decisions the shadow policy took differently from the active one",
                self.shadow.disagreements,
            ),
            (
                "policy_shadow_skipped_batches",
                "Batches the shadow policy skipped because its slot was busy",
                self.shadow.skipped_batches,
            ),
            (
                "policy_shadow_failures",
                "Shadow policy calls that failed, or whose disagreements were not recorded",
                self.shadow.failures,
            ),
        ];
        register_counters(r, counters);
    }

    fn register_pools(&self, r: &mut Registry) {
        let size = Family::<Label, Gauge>::default();
        let idle = Family::<Label, Gauge>::default();
        let max = Family::<Label, Gauge>::default();
        for pool in &self.pools {
            let label = [("pool", pool.pool)];
            size.get_or_create(&label).set(i64::from(pool.size));
            idle.get_or_create(&label).set(i64::from(pool.idle));
            max.get_or_create(&label).set(i64::from(pool.max));
        }
        r.register(
            "db_pool_connections",
            "Database connections the pool holds open, idle or in use",
            size,
        );
        r.register(
            "db_pool_idle_connections",
            "Database connections open and idle in the pool",
            idle,
        );
        r.register(
            "db_pool_max_connections",
            "The most database connections the pool opens",
            max,
        );
    }
}

impl DatabaseGauges {
    fn register(&self, r: &mut Registry) {
        if let Some(backlog) = self.backlog {
            r.register(
                "backlog_finished",
                "Finished executions whose links are not settled yet",
                gauge(backlog.finished),
            );
            let age = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
            age.set(backlog.oldest_age.map_or(0.0, |a| a.as_secs_f64()));
            r.register(
                "backlog_oldest_age_seconds",
                "How long the oldest finished, unsettled execution has waited (0 when none does)",
                age,
            );
        }
        if let Some(n) = self.notices_undelivered {
            r.register(
                "notices_undelivered",
                "Notices that reached no one: agent delivery and operator channel both ended without success",
                gauge(n),
            );
        }
        if let Some(n) = self.stuck_executions {
            r.register(
                "stuck_executions",
                "Executions linked in an open assent window, not finished after the stuck threshold",
                gauge(n),
            );
        }
        if let Some(tables) = &self.tables {
            register_tables(r, tables);
        }
    }
}

/// The `db_table_*` families, one series per table.
fn register_tables(r: &mut Registry, tables: &[TableGauges]) {
    type ByTable = [(&'static str, String); 1];
    let autovacuum = Family::<ByTable, Gauge>::default();
    let live = Family::<ByTable, Gauge>::default();
    let dead = Family::<ByTable, Gauge>::default();
    let vacuumed = Family::<ByTable, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    let updates = Family::<ByTable, Counter>::default();
    let hot = Family::<ByTable, Counter>::default();
    let bytes = Family::<ByTable, Gauge>::default();
    for t in tables {
        let label = [("table", t.table.clone())];
        autovacuum
            .get_or_create(&label)
            .set(i64::from(t.autovacuum));
        live.get_or_create(&label).set(t.live_tuples);
        dead.get_or_create(&label).set(t.dead_tuples);
        vacuumed.get_or_create(&label).set(t.last_vacuum_seconds);
        updates.get_or_create(&label).inc_by(t.updates);
        hot.get_or_create(&label).inc_by(t.hot_updates);
        bytes.get_or_create(&label).set(t.bytes);
    }
    r.register(
        "db_table_autovacuum_enabled",
        "1 when autovacuum can reach the table (autovacuum and track_counts on, not disabled on the table)",
        autovacuum,
    );
    r.register(
        "db_table_live_tuples",
        "Estimated live rows of the table",
        live,
    );
    r.register(
        "db_table_dead_tuples",
        "Dead row versions of the table not yet vacuumed",
        dead,
    );
    r.register(
        "db_table_last_vacuum_timestamp_seconds",
        "When the table was last vacuumed, manually or by autovacuum (Unix seconds; 0 if never)",
        vacuumed,
    );
    r.register(
        "db_table_updates",
        "Rows of the table updated since the statistics were reset",
        updates,
    );
    r.register(
        "db_table_hot_updates",
        "Of the table's updated rows, those updated heap-only (HOT: no index entry written)",
        hot,
    );
    r.register(
        "db_table_bytes",
        "Bytes the table takes on disk, its indexes and TOAST included",
        bytes,
    );
}

fn gauge(value: i64) -> Gauge {
    let g = Gauge::default();
    g.set(value);
    g
}

fn register_counters<const N: usize>(r: &mut Registry, counters: [(&str, &str, u64); N]) {
    for (name, help, value) in counters {
        let counter = Counter::<u64>::default();
        counter.inc_by(value);
        r.register(name, help, counter);
    }
}
