//! What every mode shares: the store, the sessions, the in-process worker
//! and its recording agent, and the statistics.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::Utc;
use futures_util::stream::{self, StreamExt};
use nomos_continue::agent::{Agent, AgentError, Continuation, Notice};
use nomos_continue::clock::SystemClock;
use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue::store::{testing as bench, Route, Store};
use nomos_continue::worker::{Worker, WorkerConfig};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::Args;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// What the agent reports per call: the executions and when the call began.
pub type Calls = mpsc::UnboundedReceiver<(Vec<Uuid>, Instant)>;

/// Records the instant each continuation's call started and answers `Ok`
/// at once: the agent costs nothing, so what is measured is the worker.
struct StampingAgent {
    calls: mpsc::UnboundedSender<(Vec<Uuid>, Instant)>,
    count: Mutex<usize>,
}

#[async_trait]
impl Agent for StampingAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        let at = Instant::now();
        let ids = continuation.executions.iter().map(|e| e.id).collect();
        *self.count.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        let _ = self.calls.send((ids, at));
        Ok(())
    }

    async fn notify(&self, _notice: &Notice) -> Result<(), AgentError> {
        Ok(())
    }
}

/// A fresh, migrated store (PostgreSQL database `name`, recreated, or an
/// SQLite file); the temporary directory must outlive it.
pub async fn open_store(
    args: &Args,
    name: &str,
) -> Result<(Store, Option<tempfile::TempDir>), Error> {
    let (store, dir, _url) = open_store_at(args, name).await?;
    Ok((store, dir))
}

/// [`open_store`], with the URL another process can open it at.
pub async fn open_store_at(
    args: &Args,
    name: &str,
) -> Result<(Store, Option<tempfile::TempDir>, String), Error> {
    let (url, dir) = if args.sqlite {
        let dir = tempfile::tempdir()?;
        let url = format!("sqlite://{}", dir.path().join("bench.db").display());
        (url, Some(dir))
    } else {
        (pg_database(args, name).await?, None)
    };
    let store = Store::connect(&url).await?;
    store.migrate().await?;
    Ok((store, dir, url))
}

/// Recreates PostgreSQL database `name` and returns its URL.
pub async fn pg_database(args: &Args, name: &str) -> Result<String, Error> {
    Ok(bench::recreate_database(&args.url, name).await?)
}

/// `n` sessions with an open window, set up 16 at a time.
pub async fn open_sessions(store: &Store, n: usize) -> Result<Vec<Uuid>, Error> {
    let sessions: Vec<Uuid> = (0..n).map(|_| Uuid::new_v4()).collect();
    let now = Utc::now();
    let results: Vec<_> = stream::iter(sessions.iter().copied())
        .map(|s| async move {
            store
                .approve(s, Route::Button, now, chrono::Duration::minutes(30))
                .await
        })
        .buffer_unordered(16)
        .collect()
        .await;
    for r in results {
        r?;
    }
    Ok(sessions)
}

/// Links `(session, execution)` pairs and reports each execution with
/// `status` (terminal or not; none if empty), 16 at a time.
pub async fn link_and_report(
    store: &Store,
    pairs: &[(Uuid, Uuid)],
    status: &str,
    finished: bool,
) -> Result<(), Error> {
    let now = Utc::now();
    let results: Vec<Result<(), Error>> = stream::iter(pairs.iter().copied())
        .map(|(s, e)| async move {
            store.link(s, &[e], now).await?;
            if !status.is_empty() {
                store
                    .upsert_execution_status(e, status, "ok", now, finished)
                    .await?;
            }
            Ok(())
        })
        .buffer_unordered(16)
        .collect()
        .await;
    results.into_iter().collect()
}

/// A worker with the built-in policy and the recording agent, polling every
/// `--poll-ms`, logging its decisions unless `--no-decision-log`.
pub fn worker(store: &Store, args: &Args) -> Result<(Worker, Calls), Error> {
    let policy = Arc::new(PolicyRuntime::new(Limits::default())?);
    let (tx, rx) = mpsc::unbounded_channel();
    let agent = Arc::new(StampingAgent {
        calls: tx,
        count: Mutex::new(0),
    });
    let config = WorkerConfig::default()
        .with_worker_id("bench".into())
        .with_poll_interval(Duration::from_millis(args.poll_ms))
        .with_log_decisions(!args.no_decision_log);
    let worker = Worker::builder(store.clone(), policy, agent)
        .clock(Arc::new(SystemClock))
        .config(config)
        .build();
    Ok((worker, rx))
}

/// The value at fraction `p` of `sorted` (nearest rank).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

pub fn backend(args: &Args) -> &'static str {
    if args.sqlite {
        "SQLite"
    } else {
        "PostgreSQL"
    }
}

/// Refuses a mode that only makes sense on PostgreSQL (replicas, a bulk
/// fill by `generate_series`) instead of measuring something else.
pub fn require_pg(args: &Args, mode: &str) -> Result<(), Error> {
    if args.sqlite {
        return Err(format!("{mode} runs on PostgreSQL only").into());
    }
    Ok(())
}
