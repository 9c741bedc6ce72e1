//! Pickup latency: a status write → the agent call, one execution at a time.

use std::time::{Duration, Instant};

use chrono::Utc;
use nomos_continue::store::{testing as bench, Route};
use nomos_continue::worker::spawn_pg_listener;
use rand::Rng;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::breakdown::{self, Recorder};
use crate::setup::{
    backend, link_and_report, open_sessions, open_store, percentile, worker, Error,
};
use crate::Args;

/// Executions per session for `--running`: the stuck ones sit on sessions
/// of their own, so the measured sessions' snapshots stay as without them.
const RUNNING_PER_SESSION: usize = 10;

/// Pickup latency: the instant just before the status write → the instant
/// the agent call starts, one execution at a time, while `sessions` sessions
/// each have an open window and a running execution the worker must look
/// at on every pass, and `--running` more executions are stuck in `running`
/// on other sessions, linked before all of them (first in link order, where
/// a plan that reads running links meets them first).
pub async fn latency(args: &Args) -> Result<(), Error> {
    let statements = args.breakdown.then(Recorder::install);
    let mut steps = Vec::new();
    let (store, _dir) = open_store(args, "nomos_bench_worker").await?;
    if args.settled > 0 {
        let started = Instant::now();
        bench::fill_session_history(&store, args.settled as i64, Utc::now()).await?;
        bench::fill_decision_history(&store, args.settled as i64, Utc::now()).await?;
        println!(
            "{} settled sessions and as many decisions filled in {:.0} s",
            args.settled,
            started.elapsed().as_secs_f64()
        );
    }
    if args.running > 0 {
        let stuck: Vec<Uuid> = (0..args.running.div_ceil(RUNNING_PER_SESSION))
            .map(|_| Uuid::new_v4())
            .collect();
        let pairs: Vec<(Uuid, Uuid)> = stuck
            .iter()
            .flat_map(|s| std::iter::repeat_n(*s, RUNNING_PER_SESSION))
            .take(args.running)
            .map(|s| (s, Uuid::new_v4()))
            .collect();
        let linked_at = Utc::now() - chrono::Duration::minutes(1);
        bench::add_executions(&store, &pairs, "running", "", None, linked_at).await?;
    }
    let sessions = open_sessions(&store, args.sessions).await?;
    let running: Vec<(Uuid, Uuid)> = sessions.iter().map(|s| (*s, Uuid::new_v4())).collect();
    link_and_report(&store, &running, "running", false).await?;
    if !args.sqlite {
        // Statistics as autovacuum keeps them: measured right after the
        // bulk fill, the planner took the unsettled links for one row, and
        // its cached generic plan for marking a pass's links hashed all
        // 11,000 of them (7 ms) instead of looking each up (0.6 ms).
        bench::vacuum_analyze(&store).await?;
    }
    let (worker, mut calls) = worker(&store, args)?;
    if args.running > 0 {
        // The first pass meets the stuck statuses (classifies them): a
        // one-off, not part of any pickup.
        worker.plan_once().await?;
    }
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
        if let Some(r) = &statements {
            r.clear();
        }
        let start = Instant::now();
        store
            .upsert_execution_status(execution, "completed", "ok", Utc::now(), true)
            .await?;
        if !args.poll_only {
            // What the API does after an applied report, on either store
            // (on PostgreSQL the `NOTIFY` wakes the other replicas).
            waker.notify_one();
        }
        loop {
            let (ids, at) = calls.recv().await.ok_or("agent channel closed")?;
            if ids.contains(&execution) {
                latencies.push((at - start).as_secs_f64() * 1e3);
                if let Some(r) = &statements {
                    steps.push(r.take(start, at));
                }
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
    let unsorted = latencies.clone();
    latencies.sort_by(f64::total_cmp);
    let wake = if args.poll_only {
        format!("poll only ({} ms)", args.poll_ms)
    } else {
        "wake-up".into()
    };
    let mut stuck = if args.running > 0 {
        format!(", {} stuck running", args.running)
    } else {
        String::new()
    };
    if args.settled > 0 {
        stuck.push_str(&format!(", {} settled", args.settled));
    }
    println!(
        "latency {} {wake}, {} sessions{stuck}, {} samples: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        backend(args),
        args.sessions,
        latencies.len(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        percentile(&latencies, 1.0),
    );
    if !steps.is_empty() {
        print!("{}", breakdown::report(&steps, 110));
        // The sample nearest the median, step by step.
        let median = percentile(&latencies, 0.50);
        if let Some(i) = unsorted.iter().position(|l| *l == median) {
            println!("the median sample ({median:.2} ms), from the status write's start:");
            print!("{}", breakdown::timeline(&steps[i], 110));
        }
    }
    Ok(())
}
