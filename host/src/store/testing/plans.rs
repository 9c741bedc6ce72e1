//! SQLite's plans of the statements the store runs, recorded per thread
//! for the plan tests (`tests/tests/storage/hot_plans.rs`): they check that
//! the hot path reads live rows by index, never a history table whole.
//! PostgreSQL's plans come from `auto_explain` in the tests instead (with
//! `ANALYZE` and buffers, which SQLite has no counterpart of).
//!
//! Per thread, because the tests run side by side in one process: a test
//! that runs its store on a current-thread runtime records what that store
//! ran, and nothing of the others'.

use std::cell::RefCell;

use sqlx::Row as _;

use crate::store::dialect::Query;

/// One statement as it ran, and the lines of its `EXPLAIN QUERY PLAN`.
#[derive(Clone, Debug)]
pub struct SqlitePlan {
    /// The statement's text.
    pub sql: String,
    /// The `detail` column of each row of its query plan (`SCAN …`,
    /// `SEARCH … USING INDEX …`), in order.
    pub detail: Vec<String>,
}

thread_local! {
    static PLANS: RefCell<Option<Vec<SqlitePlan>>> = const { RefCell::new(None) };
}

/// Records the plan of every statement this thread runs on SQLite from now
/// until the returned guard's [`SqlitePlans::take`] (or its drop).
pub fn record_sqlite_plans() -> SqlitePlans {
    PLANS.with(|p| *p.borrow_mut() = Some(Vec::new()));
    SqlitePlans(())
}

/// The recording [`record_sqlite_plans`] started on this thread.
pub struct SqlitePlans(());

impl SqlitePlans {
    /// The plans recorded so far, in the order the statements ran; the
    /// recording goes on.
    pub fn take(&self) -> Vec<SqlitePlan> {
        PLANS.with(|p| {
            p.borrow_mut()
                .as_mut()
                .map(std::mem::take)
                .unwrap_or_default()
        })
    }
}

impl Drop for SqlitePlans {
    fn drop(&mut self) {
        PLANS.with(|p| *p.borrow_mut() = None);
    }
}

fn recording() -> bool {
    PLANS.with(|p| p.borrow().is_some())
}

/// Where this thread records SQLite's plans, the plan SQLite picks for `q`
/// with its arguments, before it runs: the plan tests read the statements
/// the store really ran. A statement SQLite cannot explain is recorded
/// with the reason.
pub(in crate::store) async fn explain_lite<'e>(q: &Query<'_>, on: impl sqlx::SqliteExecutor<'e>) {
    if !recording() {
        return;
    }
    let text = format!("EXPLAIN QUERY PLAN {}", q.text);
    let detail = match q.lite_text(&text).fetch_all(on).await {
        Ok(rows) => rows
            .iter()
            .map(|r| r.try_get::<String, _>("detail").unwrap_or_default())
            .collect(),
        Err(e) => vec![format!("(not explained: {e})")],
    };
    PLANS.with(|p| {
        if let Some(plans) = p.borrow_mut().as_mut() {
            plans.push(SqlitePlan {
                sql: q.text.to_string(),
                detail,
            });
        }
    });
}
