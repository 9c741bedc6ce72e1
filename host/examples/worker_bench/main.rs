//! Worker benchmarks (BENCHMARKS.md, "Worker"): pickup latency and
//! continuations per second, in process, with the real store, policy and
//! worker loop and an agent that only records when it was called.
//!
//! ```text
//! # terminal status → agent call, NOTIFY (PostgreSQL) wake-up
//! cargo run --release -p nomos-continue --example worker_bench -- latency --sessions 100
//! # the same with the poll alone (no listener, no in-process signal)
//! cargo run --release -p nomos-continue --example worker_bench -- latency --sessions 100 --poll-only --poll-ms 100
//! # continuations per second, no-op agent
//! cargo run --release -p nomos-continue --example worker_bench -- throughput --sessions 10000
//! cargo run --release -p nomos-continue --example worker_bench -- throughput --sessions 10000 --sqlite
//! ```
//!
//! Options: `--sessions N` (default 100), `--samples N` latency samples
//! (default 200), `--poll-ms N` the worker's poll (default 2000, as in
//! production; the wake-up makes it rarely matter), `--poll-only`,
//! `--sqlite` (a file in a temporary directory instead of PostgreSQL),
//! `--database-url URL` the PostgreSQL admin URL (default `NOMOS_BENCH_PG_URL`
//! or `postgres://postgres@127.0.0.1:5432/postgres`; a database
//! `nomos_bench_worker` is dropped and recreated).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::Utc;
use futures_util::stream::{self, StreamExt};
use nomos_continue::agent::{Agent, AgentError, Continuation, Notice};
use nomos_continue::clock::SystemClock;
use nomos_continue::metrics::Metrics;
use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue::store::{bench, Route, Store};
use nomos_continue::worker::{spawn_pg_listener, Worker, WorkerConfig};
use rand::Rng;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// What the agent reports per call: the executions and when the call began.
type Calls = mpsc::UnboundedReceiver<(Vec<Uuid>, Instant)>;

struct Args {
    mode: String,
    sessions: usize,
    samples: usize,
    poll_ms: u64,
    poll_only: bool,
    sqlite: bool,
    url: String,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it
        .next()
        .ok_or("usage: worker_bench latency|throughput [options]")?;
    let mut args = Args {
        mode,
        sessions: 100,
        samples: 200,
        poll_ms: 2000,
        poll_only: false,
        sqlite: false,
        url: std::env::var("NOMOS_BENCH_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into()),
    };
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--poll-only" => args.poll_only = true,
            "--sqlite" => args.sqlite = true,
            _ => {
                let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
                let num = || value.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
                match flag.as_str() {
                    "--sessions" => args.sessions = num()?.max(1) as usize,
                    "--samples" => args.samples = num()?.max(1) as usize,
                    "--poll-ms" => args.poll_ms = num()?.max(1),
                    "--database-url" => args.url = value.clone(),
                    other => return Err(format!("unknown option {other}")),
                }
            }
        }
    }
    Ok(args)
}

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

/// A fresh, migrated store; the temporary directory must outlive it.
async fn open_store(args: &Args) -> Result<(Store, Option<tempfile::TempDir>), Error> {
    if args.sqlite {
        let dir = tempfile::tempdir()?;
        let store = Store::connect(&format!(
            "sqlite://{}",
            dir.path().join("bench.db").display()
        ))
        .await?;
        store.migrate().await?;
        return Ok((store, Some(dir)));
    }
    let url = bench::recreate_database(&args.url, "nomos_bench_worker").await?;
    let store = Store::connect(&url).await?;
    store.migrate().await?;
    Ok((store, None))
}

/// `n` sessions with an open window, set up 16 at a time.
async fn open_sessions(store: &Store, n: usize) -> Result<Vec<Uuid>, Error> {
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
/// `status` (terminal or not), 16 at a time.
async fn link_and_report(
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

fn worker(store: &Store, poll_ms: u64) -> Result<(Worker, Calls), Error> {
    let policy = Arc::new(PolicyRuntime::new(Limits::default())?);
    let (tx, rx) = mpsc::unbounded_channel();
    let agent = Arc::new(StampingAgent {
        calls: tx,
        count: Mutex::new(0),
    });
    let config = WorkerConfig {
        worker_id: "bench".into(),
        poll_interval: Duration::from_millis(poll_ms),
        ..WorkerConfig::default()
    };
    let worker = Worker::new(
        store.clone(),
        policy,
        agent,
        Arc::new(SystemClock),
        config,
        Arc::new(Metrics::default()),
    );
    Ok((worker, rx))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Pickup latency: the instant just before the status write → the instant
/// the agent call starts, one execution at a time, while `sessions` sessions
/// each have an open window and a running execution the worker must look
/// at on every pass.
async fn latency(args: &Args) -> Result<(), Error> {
    let (store, _dir) = open_store(args).await?;
    let sessions = open_sessions(&store, args.sessions).await?;
    let running: Vec<(Uuid, Uuid)> = sessions.iter().map(|s| (*s, Uuid::new_v4())).collect();
    link_and_report(&store, &running, "running", false).await?;
    let (worker, mut calls) = worker(&store, args.poll_ms)?;
    let shutdown = CancellationToken::new();
    let waker = worker.waker();
    if !args.poll_only {
        spawn_pg_listener(&store, waker.clone(), shutdown.clone());
    }
    let task = tokio::spawn(worker.run(shutdown.clone()));

    let mut latencies = Vec::with_capacity(args.samples);
    let mut per_session = vec![0usize; sessions.len()];
    for i in 0..args.samples {
        let session = sessions[i % sessions.len()];
        // The default policy's loop guard allows 20 per window: start a
        // new window (deny, approve) before reaching it.
        per_session[i % sessions.len()] += 1;
        if per_session[i % sessions.len()] % 15 == 0 {
            let now = Utc::now();
            store.deny(session, now).await?;
            store
                .approve(session, Route::Button, now, chrono::Duration::minutes(30))
                .await?;
        }
        let execution = Uuid::new_v4();
        store.link(session, &[execution], Utc::now()).await?;
        // A random phase against the poll, so polling is measured fairly.
        let phase = if args.poll_only { args.poll_ms } else { 5 };
        tokio::time::sleep(Duration::from_millis(
            rand::thread_rng().gen_range(0..=phase),
        ))
        .await;
        let start = Instant::now();
        store
            .upsert_execution_status(execution, "completed", "ok", Utc::now(), true)
            .await?;
        if args.sqlite && !args.poll_only {
            waker.notify_one(); // what the API does on SQLite
        }
        loop {
            let (ids, at) = calls.recv().await.ok_or("agent channel closed")?;
            if ids.contains(&execution) {
                latencies.push((at - start).as_secs_f64() * 1e3);
                break;
            }
        }
        // Wait for the mark, so the next sample does not find the session busy.
        while store.overview().await?.deliveries_pending > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    shutdown.cancel();
    let _ = task.await;
    latencies.sort_by(f64::total_cmp);
    let wake = if args.poll_only {
        format!("poll only ({} ms)", args.poll_ms)
    } else {
        "wake-up".into()
    };
    println!(
        "latency {} {wake}, {} sessions, {} samples: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        backend(args),
        args.sessions,
        latencies.len(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        percentile(&latencies, 1.0),
    );
    Ok(())
}

/// Continuations per second: `sessions` sessions, each with an open window
/// and one linked execution already terminal; the time from the worker's
/// first pass until every continuation is delivered and marked.
async fn throughput(args: &Args) -> Result<(), Error> {
    let (store, _dir) = open_store(args).await?;
    let sessions = open_sessions(&store, args.sessions).await?;
    let pairs: Vec<(Uuid, Uuid)> = sessions.iter().map(|s| (*s, Uuid::new_v4())).collect();
    link_and_report(&store, &pairs, "completed", true).await?;
    let (worker, _calls) = worker(&store, args.poll_ms)?;

    let started = Instant::now();
    let (mut plan_time, mut deliver_time, mut delivered, mut passes) =
        (Duration::ZERO, Duration::ZERO, 0, 0);
    while delivered < args.sessions {
        let t = Instant::now();
        let plan = worker.plan_once().await?;
        plan_time += t.elapsed();
        let t = Instant::now();
        let deliver = worker.deliver_once().await?;
        deliver_time += t.elapsed();
        delivered += deliver.delivered;
        passes += 1;
        if plan.planned == 0 && deliver.attempted == 0 {
            return Err(format!("stalled at {delivered} of {}", args.sessions).into());
        }
    }
    let elapsed = started.elapsed();
    let overview = store.overview().await?;
    assert_eq!(overview.continuations_delivered as usize, args.sessions);
    println!(
        "throughput {}: {} continuations in {:.2} s = {:.0}/s ({passes} passes; plan {:.2} s, deliver {:.2} s)",
        backend(args),
        args.sessions,
        elapsed.as_secs_f64(),
        args.sessions as f64 / elapsed.as_secs_f64(),
        plan_time.as_secs_f64(),
        deliver_time.as_secs_f64(),
    );
    Ok(())
}

fn backend(args: &Args) -> &'static str {
    if args.sqlite {
        "SQLite"
    } else {
        "PostgreSQL"
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = parse_args().map_err(|e| {
        eprintln!("worker_bench: {e}");
        e
    })?;
    match args.mode.as_str() {
        "latency" => latency(&args).await,
        "throughput" => throughput(&args).await,
        other => Err(format!("unknown mode {other}: latency or throughput").into()),
    }
}
