//! Scale-out: continuations per second through real `nomos-continue serve`
//! processes on one PostgreSQL database, delivering to a no-op agent that is
//! a real HTTP server on loopback (the webhook adapter's contract: any 2xx
//! accepts).
//!
//! Why real processes and a real webhook: what limits several replicas on
//! one machine (their CPU, the database's, the HTTP calls) is only there
//! when they are separate processes making real calls.

use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use chrono::Utc;
use nomos_continue::agent::ContinuationEvent;
use nomos_continue::store::{testing as bench, Store};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use uuid::Uuid;

use crate::procfs::CpuSample;
use crate::setup::{open_sessions, pg_database, require_pg, Error};
use crate::Args;

/// How long a replica may take to print its address (policy compilation).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the run may go without one more continuation before it is
/// called stalled. Generous: a plan step that plans every session before
/// the first call takes minutes on a loaded machine.
const STALL: Duration = Duration::from_secs(600);

/// What the no-op agent has seen.
#[derive(Default)]
pub(crate) struct Seen {
    /// Distinct idempotency keys of continuations: a redelivery of one
    /// (after a lapsed lease) counts once.
    keys: Mutex<HashSet<String>>,
    requests: AtomicUsize,
}

impl Seen {
    pub(crate) fn continuations(&self) -> usize {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Accepts every request at once, keeping only the continuation's key.
async fn hook(State(seen): State<Arc<Seen>>, body: Bytes) -> StatusCode {
    seen.requests.fetch_add(1, Ordering::Relaxed);
    if let Ok(event) = serde_json::from_slice::<ContinuationEvent>(&body) {
        seen.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(event.data.idempotency_key);
    }
    StatusCode::OK
}

/// The no-op agent on `127.0.0.1:0`; returns its webhook URL.
pub(crate) async fn start_agent(seen: Arc<Seen>) -> Result<String, Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = Router::new().route("/hook", post(hook)).with_state(seen);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("worker_bench: the agent stopped: {e}");
        }
    });
    Ok(format!("http://{addr}/hook"))
}

/// Starts `serve` with the production defaults (poll, lease, wake-up
/// listener) and waits until it prints the address it listens on. Killed
/// when dropped; its log (warnings and errors) goes to our stderr. Returns
/// it with the base URL of its API.
pub(crate) async fn start_replica(
    binary: &Path,
    database_url: &str,
    webhook: &str,
    worker_id: &str,
    poll_ms: u64,
) -> Result<(Child, String), Error> {
    let mut child = Command::new(binary)
        .arg("serve")
        .args(["--database-url", database_url])
        .args(["--listen", "127.0.0.1:0"])
        .args(["--agent-webhook", webhook])
        .args(["--worker-id", worker_id])
        .args(["--poll-interval", &format!("{poll_ms}ms")])
        .env_remove("NOMOS_CONTINUE_TOKEN")
        .env_remove("NOMOS_CONTINUE_ADMIN_TOKEN")
        .env_remove("NOMOS_CONTINUE_AGENT_TOKEN")
        .env_remove("NOMOS_CONTINUE_POLICY")
        .env_remove("NOMOS_CONTINUE_NO_WAKE_LISTENER")
        .env("NOMOS_CONTINUE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", binary.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let started = tokio::time::timeout(START_TIMEOUT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            // "… listening on http://127.0.0.1:PORT (worker …"
            if let Some((_, rest)) = line.split_once("listening on ") {
                return rest.split_whitespace().next().map(str::to_owned);
            }
        }
        None
    })
    .await;
    let Ok(Some(base)) = started else {
        return Err(format!("replica {worker_id} did not start").into());
    };
    // Keep draining stdout so the process never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, base))
}

/// `top`'s first lines over half a second: who is on the CPU then. The
/// second of two iterations, because the first one's CPU line covers the
/// time since boot.
async fn top_snapshot() -> String {
    let args = ["-b", "-n2", "-d0.5", "-w", "150"];
    match Command::new("top").args(args).output().await {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let last = text.rfind("top - ").map_or(&text[..], |i| &text[i..]);
            last.lines().take(16).collect::<Vec<_>>().join("\n")
        }
        Err(e) => format!("(top: {e})"),
    }
}

/// `--sessions` sessions with an open window and one linked execution are
/// set up while no replica runs; `--replicas` replicas start and go idle;
/// then every execution is reported finished in one transaction (which
/// NOTIFYs), and the clock runs until the database records every
/// continuation delivered. CPU per process group is read over that time.
pub async fn scaleout(args: &Args) -> Result<(), Error> {
    require_pg(args, "scaleout")?;
    let url = pg_database(args, "nomos_bench_scaleout").await?;
    let store = Store::connect(&url).await?;
    store.migrate().await?;
    let seen = Arc::new(Seen::default());
    let webhook = start_agent(seen.clone()).await?;
    let sessions = open_sessions(&store, args.sessions).await?;
    let pairs: Vec<(Uuid, Uuid)> = sessions.iter().map(|s| (*s, Uuid::new_v4())).collect();

    let mut replicas = Vec::new();
    for i in 0..args.replicas {
        let id = format!("bench-r{i}");
        replicas.push(
            start_replica(&args.binary, &url, &webhook, &id, args.poll_ms)
                .await?
                .0,
        );
    }
    // Let each finish its first (empty) pass.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pids: Vec<u32> = replicas.iter().filter_map(Child::id).collect();
    let groups = [
        ("replicas", pids),
        ("agent + harness", vec![std::process::id()]),
    ];

    let cpu_before = CpuSample::take(&groups)?;
    let started = Instant::now();
    let now = Utc::now();
    bench::add_executions(&store, &pairs, "completed", "ok", Some(now), now).await?;
    let mut top = None;
    let mut progress = (0, Instant::now());
    loop {
        let done = seen.continuations();
        if top.is_none() && done >= args.sessions / 2 {
            top = Some(top_snapshot().await);
        }
        // The record follows the call: done when the database says so.
        if done >= args.sessions
            && store.overview().await?.continuations_delivered as usize >= args.sessions
        {
            break;
        }
        if done > progress.0 {
            progress = (done, Instant::now());
        } else if progress.1.elapsed() > STALL {
            return Err(format!("stalled at {done} of {} continuations", args.sessions).into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = CpuSample::take(&groups)?;
    drop(replicas);
    println!(
        "scaleout PostgreSQL, {} replica(s): {} continuations in {elapsed:.2} s = {:.0}/s \
         ({} agent requests)",
        args.replicas,
        args.sessions,
        args.sessions as f64 / elapsed,
        seen.requests.load(Ordering::Relaxed),
    );
    println!("{}", cpu_before.report(&cpu_after, elapsed));
    if let Some(top) = top {
        println!("top at half way:\n{top}");
    }
    Ok(())
}
