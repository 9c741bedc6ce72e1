//! Waking the worker from PostgreSQL `NOTIFY`: a listener task forwards
//! every notification on [`WAKE_CHANNEL`] to the worker's in-process signal.
//! A lost connection is re-established; notifications sent meanwhile are
//! lost, which is fine: the jittered poll finds the work anyway. When the
//! store switches to another primary (a failover), the connection is
//! opened again there: notifications are sent on the primary.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::store::{Episode, Store, WAKE_CHANNEL};

/// Starts the listener if `store` is PostgreSQL; returns `None` on SQLite,
/// where the API's in-process signal is the only wake-up.
pub fn spawn_pg_listener(
    store: &Store,
    wake: Arc<Notify>,
    shutdown: CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    let pool = store.pg_pool()?.clone();
    let mut switches = store.primary_switches();
    Some(tokio::spawn(async move {
        // A database that is down fails every reconnection: one episode,
        // ended once the listener is back.
        let episode = Episode::new("wake listener");
        loop {
            let connected = async {
                let mut listener = PgListener::connect_with(&pool).await?;
                listener.listen(WAKE_CHANNEL).await?;
                episode.succeeded();
                // Something may have happened while we were not listening.
                wake.notify_one();
                loop {
                    listener.recv().await?;
                    wake.notify_one();
                }
                #[allow(unreachable_code)]
                Ok::<(), sqlx::Error>(())
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                () = switched(&mut switches) => continue,
                result = connected => {
                    if let Err(e) = result {
                        episode.failed(&e);
                    }
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    }))
}

/// Returns when the store has switched to another primary; never for a
/// store with one server.
async fn switched(switches: &mut Option<tokio::sync::watch::Receiver<u64>>) {
    if let Some(receiver) = switches {
        if receiver.changed().await.is_ok() {
            return;
        }
    }
    std::future::pending().await
}
