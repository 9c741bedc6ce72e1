//! What the plan tests (`tests/tests/storage/hot_plans.rs`) read and
//! judge: the plan of every statement a store ran, and whether it read a
//! history table whole.
//!
//! PostgreSQL's plans come from the server itself: `auto_explain`, loaded
//! into every new session of one test database (`ALTER DATABASE … SET
//! session_preload_libraries`), explains each statement as it runs, with
//! `ANALYZE` and buffers, and sends the plan to the client as a `NOTICE`;
//! sqlx hands each notice to `tracing`, where [`Notices`] keeps it. So
//! what is judged is what ran, with the arguments it ran with. SQLite's come
//! from the store's own recorder (`store::testing::record_sqlite_plans`),
//! which asks `EXPLAIN QUERY PLAN` of each statement before it runs.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use nomos_continue::store::testing::SqlitePlan;
use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// The tables whose rows outlive the work they stand for: a statement on
/// the hot path may probe them by key, never read them whole.
pub const HISTORY_TABLES: &[&str] = &[
    "executions",
    "nomos_plan_executions",
    "nomos_deliveries",
    "nomos_policy_decisions",
    "nomos_assent_windows",
    "nomos_link_data",
    "nomos_notices",
    "nomos_operator_notices",
    "nomos_sessions",
    "nomos_late_reports",
    "nomos_chat_turns",
];

/// The partial indexes that hold live rows only (links not settled,
/// deliveries pending): reading one whole costs the live work, not the
/// history, so a scan of one is allowed.
pub const LIVE_INDEXES: &[&str] = &[
    "idx_nomos_plan_exec_pending",
    "idx_nomos_plan_exec_ready",
    "idx_nomos_plan_exec_unparked",
    "idx_nomos_plan_exec_delivery",
    "idx_nomos_plan_exec_unsettled_session",
    "idx_nomos_deliveries_due",
    "nomos_deliveries_one_in_flight",
];

/// Buffers a plan node may touch of its own per row it touched (a row
/// read, written, locked or passed on) and per loop (each probe of a
/// nested loop). Measured on the fixed path beside 100,000 settled
/// sessions, with no vacuum since the backlog was planned: a link's
/// update writes an entry into each of the link table's eight indexes
/// (about 14 buffers a row), a renewal's row lock follows the row's
/// update chain (about 25), and an index of live rows still holds the
/// entries of rows settled since the last vacuum (about 15 a live row).
/// Reading a history instead costs hundreds of pages for a handful of
/// rows.
pub const BUFFERS_PER_ROW: f64 = 32.0;

/// Buffers a plan node may touch whatever it reads: the root and inner
/// pages of the indexes it opens.
pub const BUFFERS_AT_LEAST: f64 = 64.0;

/// The `message` of each `sqlx::postgres::notice` event: with
/// `auto_explain.log_level = notice`, one plan per statement.
#[derive(Clone, Default)]
pub struct Notices(Arc<Mutex<Vec<String>>>);

impl Notices {
    /// Every notice kept so far, emptied.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("notices lock"))
    }
}

struct MessageOf<'a>(&'a mut Option<String>);

impl Visit for MessageOf<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            *self.0 = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" && self.0.is_none() {
            *self.0 = Some(format!("{value:?}"));
        }
    }
}

impl<S: Subscriber> Layer<S> for Notices {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "sqlx::postgres::notice" {
            return;
        }
        let mut message = None;
        event.record(&mut MessageOf(&mut message));
        if let Some(m) = message {
            self.0.lock().expect("notices lock").push(m);
        }
    }
}

/// The statements that make every new session of database `name` explain
/// each of its statements to the client (see the module docs). Run them on
/// another connection, then connect anew: sessions already open keep their
/// settings.
pub fn auto_explain_settings(name: &str) -> Vec<String> {
    [
        ("session_preload_libraries", "auto_explain"),
        ("auto_explain.log_min_duration", "0"),
        ("auto_explain.log_analyze", "on"),
        ("auto_explain.log_buffers", "on"),
        ("auto_explain.log_timing", "off"),
        ("auto_explain.log_nested_statements", "on"),
        ("auto_explain.log_format", "json"),
        ("auto_explain.log_level", "notice"),
    ]
    .iter()
    .map(|(setting, value)| format!("ALTER DATABASE \"{name}\" SET {setting} = '{value}'"))
    .collect()
}

/// A statement as it ran on PostgreSQL: its text and its plan.
#[derive(Debug)]
pub struct PgPlan {
    /// The statement's text.
    pub sql: String,
    /// The plan's root node (`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`'s
    /// `Plan`).
    pub plan: Value,
}

/// The plans among `notices` (those `auto_explain` sent), in order.
pub fn pg_plans(notices: &[String]) -> Vec<PgPlan> {
    notices
        .iter()
        .filter_map(|n| {
            let json = n.split_once("plan:")?.1;
            let doc: Value = serde_json::from_str(json.trim()).ok()?;
            Some(PgPlan {
                sql: doc.get("Query Text")?.as_str()?.to_owned(),
                plan: doc.get("Plan")?.clone(),
            })
        })
        .collect()
}

/// Every node of a plan, the root first.
fn nodes(plan: &Value) -> Vec<&Value> {
    let mut out = vec![plan];
    let mut i = 0;
    while i < out.len() {
        if let Some(children) = out[i].get("Plans").and_then(Value::as_array) {
            out.extend(children.iter());
        }
        i += 1;
    }
    out
}

fn number(node: &Value, key: &str) -> f64 {
    node.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

/// The names of the unique indexes of the database `pool` reaches: a
/// probe of one by equality costs its depth, however long the history.
pub async fn unique_indexes(pool: &sqlx::PgPool) -> sqlx::Result<HashSet<String>> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
         WHERE i.indisunique",
    )
    .fetch_all(pool)
    .await?;
    Ok(names.into_iter().collect())
}

fn buffers(node: &Value) -> f64 {
    number(node, "Shared Hit Blocks") + number(node, "Shared Read Blocks")
}

fn children(node: &Value) -> &[Value] {
    node.get("Plans")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Rows a node touched: those it passed on, or for a write (which passes
/// none on without `RETURNING`) those its input gave it.
fn rows_touched(node: &Value) -> f64 {
    let own = number(node, "Actual Rows") * number(node, "Actual Loops").max(1.0);
    if node.get("Node Type").and_then(Value::as_str) == Some("ModifyTable") {
        let input: f64 = children(node)
            .iter()
            .map(|c| number(c, "Actual Rows") * number(c, "Actual Loops").max(1.0))
            .sum();
        return own.max(input);
    }
    own
}

/// Whether a node probes a unique index by equality (`key = …` or `key =
/// ANY (…)`): one descent per key, which the plan does not count.
fn unique_probe(node: &Value, unique: &HashSet<String>) -> bool {
    let index = node.get("Index Name").and_then(Value::as_str);
    let cond = node.get("Index Cond").and_then(Value::as_str).unwrap_or("");
    index.is_some_and(|i| unique.contains(i)) && cond.contains(" = ") && !cond.contains(" AND ")
}

/// What is wrong with a PostgreSQL plan, if anything: a sequential scan of
/// a history table, a row lock run again on every loop of a join, or a
/// node that touched more buffers of its own than
/// [`BUFFERS_PER_ROW`] per row and per loop plus [`BUFFERS_AT_LEAST`]
/// (but for a probe of a unique index by equality, whose descents per key
/// the plan does not count, and a read of one of the [`LIVE_INDEXES`]).
/// `unique` names the database's unique indexes.
pub fn pg_problems(p: &PgPlan, unique: &HashSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    for node in nodes(&p.plan) {
        let kind = node.get("Node Type").and_then(Value::as_str).unwrap_or("");
        let relation = node.get("Relation Name").and_then(Value::as_str);
        let on = relation.unwrap_or("-");
        if kind == "Seq Scan" && HISTORY_TABLES.contains(&on) {
            problems.push(format!(
                "a sequential scan of {on} ({} rows read, {} removed by its filter)",
                rows_touched(node),
                number(node, "Rows Removed by Filter")
            ));
        }
        // A set of rows locked on every loop of a join is locked again and
        // again: a batch of n costs n²/2 locks. (A probe that locks the one
        // row it finds, per loop, is fine.)
        let fed = children(node)
            .first()
            .map_or(0.0, |c| number(c, "Actual Rows"));
        if kind == "LockRows" && number(node, "Actual Loops") > 1.0 && fed > 1.0 {
            problems.push(format!(
                "{fed} rows locked again on each of {} loops",
                number(node, "Actual Loops")
            ));
        }
        // A probe of a unique key is bounded by its index's depth; an index
        // of live rows holds the live work and the entries of rows that
        // left it since the last vacuum (a number the vacuum's threshold
        // bounds, not the history: issue 57's to shrink); a CTE's scan
        // carries its CTE's buffers, judged at the CTE's own nodes.
        let index = node.get("Index Name").and_then(Value::as_str).unwrap_or("");
        if unique_probe(node, unique) || LIVE_INDEXES.contains(&index) || kind == "CTE Scan" {
            continue;
        }
        let own = buffers(node) - children(node).iter().map(buffers).sum::<f64>();
        let touched = rows_touched(node) + number(node, "Actual Loops");
        let allowed = BUFFERS_PER_ROW * touched + BUFFERS_AT_LEAST;
        if own > allowed {
            let text = |key: &str| node.get(key).and_then(Value::as_str).unwrap_or("");
            problems.push(format!(
                "{kind} on {on} {} ({}; filter {}): {own} buffers of its own for {touched} \
                 rows and loops (at most {allowed})",
                text("Index Name"),
                text("Index Cond"),
                text("Filter"),
            ));
        }
    }
    problems
}

/// The table each name in a statement stands for: itself, or the table
/// an alias was given to (`FROM nomos_plan_executions l`, `JOIN
/// executions AS e`).
fn table_of<'a>(sql: &'a str, name: &'a str) -> &'a str {
    let words: Vec<&str> = sql
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    for w in words.windows(4) {
        let before = w[0].to_ascii_uppercase();
        if !matches!(before.as_str(), "FROM" | "JOIN" | "UPDATE" | "INTO") {
            continue;
        }
        let alias = if w[2].eq_ignore_ascii_case("AS") {
            w[3]
        } else {
            w[2]
        };
        if alias == name {
            return w[1];
        }
    }
    name
}

/// What is wrong with an SQLite plan, if anything: a `SCAN` (a read of
/// every row) of a history table, unless it reads one of the
/// [`LIVE_INDEXES`].
pub fn sqlite_problems(p: &SqlitePlan) -> Vec<String> {
    let mut problems = Vec::new();
    for line in &p.detail {
        let Some(rest) = line.strip_prefix("SCAN ") else {
            continue;
        };
        let name = rest.split_whitespace().next().unwrap_or("");
        let table = table_of(&p.sql, name);
        if !HISTORY_TABLES.contains(&table) {
            continue;
        }
        if LIVE_INDEXES
            .iter()
            .any(|i| rest.contains(&format!("INDEX {i}")))
        {
            continue;
        }
        problems.push(format!("{line}: a scan of {table}"));
    }
    problems
}

/// The statement, shortened for a failure message.
pub fn short(sql: &str) -> String {
    let one_line: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(240) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}
