//! The standby fence: a deliver step calls the agent only once every
//! standby streaming from the PostgreSQL primary has flushed the rows the
//! step is about to act on.
//!
//! Why: a continuation's key is derived from the executions its plan
//! folds. With asynchronous replication a failover loses the primary's
//! last commits; if it lost the commit of a plan whose call already went
//! out, the new primary plans those executions again, maybe folded with
//! another that finished meanwhile, and sends them under a second key,
//! which the agent cannot recognise as a repeat. Fenced, a lost plan was
//! never sent (it may be planned again with any fold), and a lost record of
//! an accepted call leaves the claimed row, sent again under its own key.
//!
//! Cost: one statement when every standby already has the rows (always,
//! with synchronous replication or none), then one look per few
//! milliseconds until they do. A step whose rows are not confirmed within
//! `WorkerConfig::standby_fence` makes no call: each claim is recorded as
//! the agent being unavailable, a shortage that is retried after its
//! backoff and counts toward the retry budget like any other (P6, P1).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::time::Interval;

use super::Deliverer;
use crate::store::Standbys;

/// The first pause between two looks at the standbys; doubled up to
/// [`LOOK_AT_MOST`]: an asynchronous standby on a LAN flushes within a
/// millisecond or two.
const FIRST_LOOK: Duration = Duration::from_millis(1);
const LOOK_AT_MOST: Duration = Duration::from_millis(50);

/// Whether the fence is holding calls back now, and whether hidden
/// standbys were reported: each logged once, not once per step.
#[derive(Debug, Default)]
pub(super) struct Episode {
    holding: AtomicBool,
    told_hidden: AtomicBool,
}

/// What the fence lets through.
#[derive(Debug, Clone)]
pub(super) enum Gate {
    /// Calls go out: confirmed at the first look (or no fence applies).
    Open,
    /// Calls go out, but only after waiting for the standbys: the windows
    /// their claims checked may have closed meanwhile, so each
    /// continuation's window is read again before its call (P3).
    OpenAfterWaiting,
    /// No call goes out (why).
    Held(String),
}

/// How one wait ended.
enum Fenced {
    /// Whether any look found a standby behind first.
    Confirmed { waited: bool },
    /// Not confirmed in time: standbys still behind.
    TimedOut { behind: i64, target: String },
    /// The primary could not be asked.
    Failed(String),
}

impl Deliverer {
    #[cfg(feature = "test-support")]
    /// [`Self::fence`] once, its gate as a word (see `Worker::standby_gate`).
    pub(crate) async fn standby_gate(&self) -> &'static str {
        let every = self.config.renew_interval();
        let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        match self.fence(&mut renew).await {
            Gate::Open => "open",
            Gate::OpenAfterWaiting => "open after waiting",
            Gate::Held(_) => "held",
        }
    }

    /// Waits until every standby streaming from the primary has flushed
    /// the WAL of everything this step claimed, renewing the leases of
    /// calls in flight on `renew`'s ticks meanwhile: whether the calls may
    /// go out (confirmed, no standby, SQLite, the fence off), and if not,
    /// why they are held back.
    pub(super) async fn fence(&self, renew: &mut Interval) -> Gate {
        let Some(timeout) = self.config.standby_fence else {
            return Gate::Open;
        };
        let started = Instant::now();
        let waiting = self.wait_for_standbys(timeout);
        tokio::pin!(waiting);
        let fenced = loop {
            tokio::select! {
                fenced = &mut waiting => break fenced,
                _ = renew.tick() => self.renew_leases().await,
            }
        };
        let confirmed = matches!(fenced, Fenced::Confirmed { .. });
        self.metrics.standby_fence(confirmed, started.elapsed());
        let why = match fenced {
            Fenced::Confirmed { waited } => {
                if self.fence.holding.swap(false, Ordering::Relaxed) {
                    tracing::info!("standby fence: the standbys confirm again; calls go out");
                }
                return match waited {
                    true => Gate::OpenAfterWaiting,
                    false => Gate::Open,
                };
            }
            Fenced::TimedOut { behind, target } => format!(
                "standby fence: {behind} standby(s) streaming from the primary had not flushed \
                 its WAL up to {target} within {timeout:?}; the call waits for them"
            ),
            Fenced::Failed(e) => {
                format!("standby fence: could not ask the primary about its standbys: {e}")
            }
        };
        if !self.fence.holding.swap(true, Ordering::Relaxed) {
            tracing::warn!("{why} (logged once until they confirm again)");
        }
        Gate::Held(why)
    }

    /// Looks at the standbys until none streaming is behind the primary's
    /// flush position read first, or `timeout` passes.
    async fn wait_for_standbys(&self, timeout: Duration) -> Fenced {
        let deadline = Instant::now() + timeout;
        let first = match self.store.standbys_behind(None).await {
            Ok(None) => return Fenced::Confirmed { waited: false },
            Ok(Some(first)) => first,
            Err(e) => return Fenced::Failed(e.to_string()),
        };
        self.tell_hidden(&first);
        // None behind at the first look (no standby, or all caught up):
        // nothing was waited for, so no window needs reading again.
        if first.behind == 0 {
            return Fenced::Confirmed { waited: false };
        }
        let mut behind = first.behind;
        let mut pause = FIRST_LOOK;
        while behind > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Fenced::TimedOut {
                    behind,
                    target: first.target.to_string(),
                };
            }
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(LOOK_AT_MOST);
            behind = match self.store.standbys_behind(Some(&first.target)).await {
                Ok(Some(now)) => now.behind,
                Ok(None) => 0,
                Err(e) => return Fenced::Failed(e.to_string()),
            };
        }
        Fenced::Confirmed { waited: true }
    }

    /// Says once that standbys exist whose position this role cannot read:
    /// the fence cannot wait for them.
    fn tell_hidden(&self, standbys: &Standbys) {
        if standbys.hidden > 0 && !self.fence.told_hidden.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                hidden = standbys.hidden,
                "standby fence: this database role cannot read the standbys' positions \
                 (pg_stat_replication), so calls do not wait for them; grant it \
                 pg_read_all_stats (or pg_monitor)"
            );
        }
    }
}
