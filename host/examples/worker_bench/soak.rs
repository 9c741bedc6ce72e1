//! The memory of a real `serve` under steady load: `--rate` continuations a
//! second for `--minutes`, its resident set read every few seconds.
//!
//! Each continuation is one execution linked to one of `--sessions`
//! sessions (in bulk, through the store, as a runtime's links would land)
//! and reported finished through `PUT /v1/executions/{id}` (the API's path,
//! which wakes the worker), then continued by the replica to a no-op
//! webhook. Why through the API: what could grow in `serve` is on both of
//! its paths, the requests and the worker.

use std::time::{Duration, Instant};

use chrono::Utc;
use nomos_continue::store::{testing as bench, Route, Store};
use uuid::Uuid;

use crate::procfs::status_bytes_of;
use crate::scaleout::{start_agent, start_replica, Seen};
use crate::setup::{open_sessions, pg_database, require_pg, Error};
use crate::Args;

/// Batches a second: the rate is spread over them so the load is steady.
const TICKS_PER_SECOND: u64 = 100;

/// Continuations a session gets before its window is reopened (the
/// default policy's loop guard allows 20 per window).
const PER_WINDOW: usize = 15;

/// How often the resident set is read.
const SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// Runs the soak and prints the resident set per minute, the rate reached,
/// and the first and last minute side by side.
pub async fn soak(args: &Args) -> Result<(), Error> {
    require_pg(args, "soak")?;
    let url = pg_database(args, "nomos_bench_soak").await?;
    let store = Store::connect(&url).await?;
    store.migrate().await?;
    let seen = std::sync::Arc::new(Seen::default());
    let webhook = start_agent(seen.clone()).await?;
    let sessions = open_sessions(&store, args.sessions).await?;
    let (replica, base) =
        start_replica(&args.binary, &url, &webhook, "bench-soak", args.poll_ms).await?;
    let pid = replica.id().ok_or("the replica has no pid")?;
    let client = reqwest::Client::new();

    let per_tick = (args.rate as u64).div_ceil(TICKS_PER_SECOND).max(1) as usize;
    let mut tick = tokio::time::interval(Duration::from_secs(1) / TICKS_PER_SECOND as u32);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let total = Duration::from_secs(args.minutes * 60);
    let started = Instant::now();
    let mut next_sample = started;
    let mut samples: Vec<(f64, u64, usize)> = Vec::new();
    let (mut sent, mut failed) = (0usize, 0usize);
    let mut uses = vec![0usize; sessions.len()];
    let mut requests = tokio::task::JoinSet::new();
    while started.elapsed() < total {
        tick.tick().await;
        let now = Utc::now();
        let mut pairs = Vec::with_capacity(per_tick);
        for _ in 0..per_tick {
            let i = sent % sessions.len();
            uses[i] += 1;
            if uses[i] % PER_WINDOW == 0 {
                store.deny(sessions[i], now).await?;
                store
                    .approve(
                        sessions[i],
                        Route::Button,
                        now,
                        chrono::Duration::minutes(30),
                    )
                    .await?;
            }
            pairs.push((sessions[i], Uuid::new_v4()));
            sent += 1;
        }
        bench::add_executions(&store, &pairs, "running", "", None, now).await?;
        for (_, execution) in pairs {
            let request = client
                .put(format!("{base}/v1/executions/{execution}"))
                .json(&serde_json::json!({"status": "completed", "result": "ok"}));
            requests.spawn(async move { request.send().await.map(|r| r.status().is_success()) });
        }
        while let Some(done) = requests.try_join_next() {
            if !matches!(done, Ok(Ok(true))) {
                failed += 1;
            }
        }
        if Instant::now() >= next_sample {
            let rss = status_bytes_of(pid, "VmRSS")?;
            samples.push((started.elapsed().as_secs_f64(), rss, seen.continuations()));
            next_sample += SAMPLE_EVERY;
        }
    }
    while let Some(done) = requests.join_next().await {
        if !matches!(done, Ok(Ok(true))) {
            failed += 1;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let continued = seen.continuations();
    println!(
        "soak PostgreSQL: {sent} reports in {elapsed:.0} s ({:.0}/s), {failed} failed; \
         {continued} continuations seen ({:.0}/s)",
        sent as f64 / elapsed,
        continued as f64 / elapsed
    );
    report(&samples);
    drop(replica);
    Ok(())
}

/// One line per minute (its largest resident set and the continuations in
/// it), then the first and the last minute.
fn report(samples: &[(f64, u64, usize)]) {
    let minutes = samples.last().map_or(0, |s| (s.0 / 60.0).ceil() as usize);
    let mut rows = Vec::new();
    let mut before = 0usize;
    for m in 0..minutes {
        let inside: Vec<&(f64, u64, usize)> = (samples.iter())
            .filter(|s| s.0 >= m as f64 * 60.0 && s.0 < (m + 1) as f64 * 60.0)
            .collect();
        let (Some(max), Some(last)) = (inside.iter().map(|s| s.1).max(), inside.last()) else {
            continue;
        };
        println!(
            "  minute {:>2}: RSS max {:>7.1} MiB, {:>6} continuations",
            m + 1,
            crate::procfs::mib(max),
            last.2 - before
        );
        before = last.2;
        rows.push(max);
    }
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        println!(
            "serve RSS, first minute {:.1} MiB, last minute {:.1} MiB",
            crate::procfs::mib(*first),
            crate::procfs::mib(*last)
        );
    }
}
