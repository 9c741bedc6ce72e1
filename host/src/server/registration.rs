//! The process's claim on its worker id, and the upkeep that keeps its
//! shared state current while it runs: the registration's heartbeat and
//! the offset to the database's clock.
//!
//! Leases are named by worker id, so a second process under the same id
//! would take this one's leases for its own. A process registers its id
//! before its worker starts and refuses to start while a live process holds
//! it (see [`Store::register_worker`]).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::clock::{Clock, OffsetClock};
use crate::store::{Episode, Registration, Store};

/// Claims `worker_id` for this process (`instance`), or fails start-up
/// naming the id and when a dead holder's registration lapses.
pub(super) async fn register(
    store: &Store,
    worker_id: &str,
    instance: Uuid,
    now: DateTime<Utc>,
    stale_after: Duration,
) -> Result<()> {
    let stale_after = chrono::Duration::from_std(stale_after)
        .context("the worker registration's staleness limit")?;
    let registration = store
        .register_worker(worker_id, instance, now, stale_after)
        .await
        .context("register the worker id")?;
    match registration {
        Registration::Registered => Ok(()),
        Registration::Duplicate { heartbeat_at } => {
            let lapses_in = (heartbeat_at + stale_after - now).max(chrono::Duration::zero());
            anyhow::bail!(
                "worker id {worker_id:?} is in use by another live process (its last \
                 heartbeat was {:.1} s ago); leases are named by worker id, so give each \
                 replica its own --worker-id. If that process is dead, its registration goes \
                 stale {:.0} s after its last heartbeat, in {:.1} s, and the id can be used again",
                (now - heartbeat_at).as_seconds_f64(),
                stale_after.as_seconds_f64(),
                lapses_in.as_seconds_f64(),
            )
        }
    }
}

/// Refreshes the worker registration every `every` until `shutdown`. A
/// failed write is retried at the next beat (the staleness limit spans
/// several). If another process took the id over (this one's heartbeats
/// stopped reaching the database for too long), two processes share the
/// id's leases: this one shuts down and says so.
pub(super) async fn keep_registered(
    store: Store,
    clock: Arc<dyn Clock>,
    worker_id: String,
    instance: Uuid,
    every: Duration,
    shutdown: CancellationToken,
) -> Result<()> {
    let episode = Episode::new("worker heartbeat");
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
        let beat = store
            .worker_heartbeat(&worker_id, instance, clock.now())
            .await;
        match episode.observe(beat) {
            Ok(true) => {}
            Ok(false) => {
                shutdown.cancel();
                anyhow::bail!(
                    "worker id {worker_id:?} was taken over by another process after this \
                     one's heartbeats went stale; shutting down"
                );
            }
            Err(_) => {}
        }
    }
}

/// How often the offset to the database's clock is measured again.
const CLOCK_RESYNC: Duration = Duration::from_secs(60);

/// Keeps the offset to the database's clock current (local clocks drift and
/// get stepped); a failed reading keeps the last offset.
pub(super) async fn resync_clock(
    clock: Arc<OffsetClock>,
    store: Store,
    shutdown: CancellationToken,
) {
    let episode = Episode::new("reading the database's clock");
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(CLOCK_RESYNC) => {}
        }
        let _ = episode.observe(clock.sync(store.database_now()).await);
    }
}
