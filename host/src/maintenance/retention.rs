//! Retention: logged decisions older than the retention are deleted in
//! short batches, so the log (written on every pass) does not grow without
//! bound and no delete holds locks for long; the API's idempotency keys
//! are deleted once past [`KEY_RETENTION`]; and the text tool output
//! reaches (settled deliveries' notes and errors, idle sessions' chat
//! history and `chatWith` notices) is purged past its own retention
//! ([`TextRetention`]; what is kept and why is in `store::retention`); and
//! settled history (ledger rows, windows, late reports, links) past
//! [`HistoryRetention`], so the database stays bounded beside a runtime
//! that runs for months.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError};

/// Rows deleted (or scrubbed) per statement: each delete's locks stay short, and a
/// large backlog is worked off in a few passes.
const PURGE_BATCH: i64 = 5_000;

/// Statements one purge runs at most; the rest waits for the next pass.
const PURGE_ROUNDS: usize = 20;

/// How long an `Idempotency-Key`'s answer is kept: the API promises at
/// least 24 hours, and a day more covers a client retrying across a
/// weekend's outage.
pub const KEY_RETENTION: chrono::Duration = chrono::Duration::hours(48);

/// How long the text that tool output reaches is kept; `None` keeps it
/// for ever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextRetention {
    /// The note and last error of settled deliveries
    /// (`serve --delivery-retention`), counted from their last update.
    pub deliveries: Option<Duration>,
    /// The chat turns and `chatWith` notices of sessions with nothing in
    /// flight (`serve --chat-retention`), counted from their record.
    pub chat: Option<Duration>,
}

/// How long settled history is kept; `None` keeps it for ever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryRetention {
    /// Settled ledger rows, ended windows of idle sessions, late reports,
    /// and the session list's rows of sessions with nothing left
    /// (`serve --history-retention`), counted from when each ended.
    pub history: Option<Duration>,
    /// Settled links and their per-link data, and the standalone table's
    /// results (`serve --link-retention`), counted from when each
    /// execution finished. Also the horizon, kept in the database: no
    /// link is made again for an execution that finished before it
    /// (`Store::link`).
    pub links: Option<Duration>,
}

/// What one history purge did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryPurged {
    /// Settled ledger rows deleted.
    pub ledger: u64,
    /// Ended windows deleted.
    pub windows: u64,
    /// Late reports deleted.
    pub late_reports: u64,
    /// Session list rows deleted.
    pub sessions: u64,
    /// Settled links deleted.
    pub links: u64,
    /// Session push configurations that stopped linking, deleted.
    pub session_push: u64,
}

impl HistoryPurged {
    /// Each kind's count under its `what` label.
    fn rows(&self) -> [(&'static str, u64); 6] {
        [
            ("ledger", self.ledger),
            ("windows", self.windows),
            ("late_reports", self.late_reports),
            ("links", self.links),
            ("sessions", self.sessions),
            ("session_push", self.session_push),
        ]
    }
}

/// What one text purge did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextPurged {
    /// Deliveries whose note and error were emptied.
    pub deliveries: u64,
    /// Chat turns deleted.
    pub chat_turns: u64,
    /// `chatWith` notices deleted.
    pub chat_notices: u64,
}

/// Deletes logged decisions, idempotency keys and tool output past their
/// retention on an interval.
pub struct Retention {
    store: Store,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    /// How long logged decisions are kept; `None` keeps them.
    retention: Option<Duration>,
    /// How long tool output is kept.
    text: TextRetention,
    /// How long settled history is kept.
    history: HistoryRetention,
}

impl Retention {
    /// Keeps logged decisions for `retention` (`None`: for ever).
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
        retention: Option<Duration>,
    ) -> Self {
        Self {
            store,
            clock,
            metrics,
            retention,
            text: TextRetention::default(),
            history: HistoryRetention::default(),
        }
    }

    /// Also purges settled history past `history` (by default it is kept).
    pub fn with_history(mut self, history: HistoryRetention) -> Self {
        self.history = history;
        self
    }

    /// Also purges tool output past `text` (by default it is kept).
    pub fn with_text(mut self, text: TextRetention) -> Self {
        self.text = text;
        self
    }

    /// The time `retention` before now; `None` when kept for ever (or the
    /// subtraction leaves the calendar).
    fn cutoff(&self, retention: Option<Duration>) -> Option<DateTime<Utc>> {
        let age = chrono::Duration::from_std(retention?).unwrap_or(chrono::Duration::MAX);
        self.clock.now().checked_sub_signed(age)
    }

    /// Deletes logged decisions past their retention; returns how many.
    pub async fn purge_decisions(&self) -> Result<u64, StoreError> {
        let Some(before) = self.cutoff(self.retention) else {
            return Ok(0);
        };
        let purged = in_batches(|batch| self.store.purge_decisions(before, batch)).await?;
        self.metrics.decisions_purged(purged);
        Ok(purged)
    }

    /// Purges tool output past [`TextRetention`]: scrubs settled
    /// deliveries, deletes idle sessions' chat turns and notices.
    pub async fn purge_text(&self) -> Result<TextPurged, StoreError> {
        let now = self.clock.now();
        let mut purged = TextPurged::default();
        if let Some(before) = self.cutoff(self.text.deliveries) {
            purged.deliveries =
                in_batches(|batch| self.store.scrub_deliveries(before, batch)).await?;
        }
        if let Some(before) = self.cutoff(self.text.chat) {
            purged.chat_turns =
                in_batches(|batch| self.store.purge_chat_turns(before, now, batch)).await?;
            purged.chat_notices =
                in_batches(|batch| self.store.purge_chat_notices(before, now, batch)).await?;
        }
        self.metrics.text_purged("deliveries", purged.deliveries);
        self.metrics.text_purged("chat_turns", purged.chat_turns);
        self.metrics
            .text_purged("chat_notices", purged.chat_notices);
        Ok(purged)
    }

    /// Purges settled history past [`HistoryRetention`]: the ledger's
    /// settled rows, ended windows, late reports, session push
    /// configurations that stopped linking, settled links behind the
    /// horizon (with their data and, in the standalone table, their
    /// results), and the session list's rows of sessions left with
    /// nothing.
    pub async fn purge_history(&self) -> Result<HistoryPurged, StoreError> {
        let mut purged = HistoryPurged::default();
        if let Some(before) = self.cutoff(self.history.history) {
            purged.ledger = in_batches(|batch| self.store.purge_ledger(before, batch)).await?;
            purged.windows = in_batches(|batch| self.store.purge_windows(before, batch)).await?;
            purged.late_reports =
                in_batches(|batch| self.store.purge_late_reports(before, batch)).await?;
            purged.session_push =
                in_batches(|batch| self.store.purge_session_push(before, batch)).await?;
        }
        if let Some(before) = self.cutoff(self.history.links) {
            if let Some(horizon) = self.store.advance_link_horizon(before).await? {
                let ours = self.store.executions_are_ours().await?;
                purged.links =
                    in_batches(|batch| self.store.purge_links(horizon, batch, ours)).await?;
            }
            // A session keeps its links, and so its row in the list,
            // unless links are purged.
            if let Some(before) = self.cutoff(self.history.history) {
                purged.sessions =
                    in_batches(|batch| self.store.purge_sessions(before, batch)).await?;
            }
        }
        for (what, n) in purged.rows() {
            self.metrics.text_purged(what, n);
        }
        Ok(purged)
    }

    /// Deletes the idempotency keys past [`KEY_RETENTION`]; returns how many.
    pub async fn purge_keys(&self) -> Result<u64, StoreError> {
        match self.clock.now().checked_sub_signed(KEY_RETENTION) {
            Some(before) => self.store.purge_keys(before).await,
            None => Ok(0),
        }
    }

    /// One pass: the decision log, the idempotency keys, the tool output,
    /// the settled history.
    async fn purge(&self) -> Result<u64, StoreError> {
        let text = self.purge_text().await?;
        let history = self.purge_history().await?;
        let purged = self.purge_decisions().await?
            + self.purge_keys().await?
            + text.deliveries
            + text.chat_turns
            + text.chat_notices
            + history.rows().iter().map(|(_, n)| n).sum::<u64>();
        if purged > 0 {
            self.store.give_back_space().await?;
        }
        Ok(purged)
    }

    /// Purges every `interval` until `shutdown` is cancelled.
    pub async fn run(self, interval: Duration, shutdown: CancellationToken) {
        super::every(interval, shutdown, "retention purge", || self.purge()).await;
    }
}

/// Runs `step` with [`PURGE_BATCH`] until it does less than a batch, at
/// most [`PURGE_ROUNDS`] times (the rest waits for the next pass); returns
/// the rows it did.
///
/// After each full batch it rests as long as the batch took, so a purge
/// uses the database at most half the time: measured (BENCHMARKS.md, "A
/// month in an hour"), twenty link batches back to back raised the pickup
/// lag's p99 from about 30 ms to 74 ms while they ran. The rest is real
/// time, not the injected clock's: it paces the database, not the
/// retention's arithmetic.
async fn in_batches<F, Fut>(mut step: F) -> Result<u64, StoreError>
where
    F: FnMut(i64) -> Fut,
    Fut: Future<Output = Result<u64, StoreError>>,
{
    let mut done = 0;
    for round in 1..=PURGE_ROUNDS {
        let started = std::time::Instant::now();
        let n = step(PURGE_BATCH).await?;
        done += n;
        if n < PURGE_BATCH as u64 || round == PURGE_ROUNDS {
            break;
        }
        tokio::time::sleep(started.elapsed()).await;
    }
    Ok(done)
}
