//! What passes cost in process, through `Worker::plan_once` and
//! `Worker::deliver_once`: continuations per second, the memory of one plan
//! pass, and a pass's cost against the size of the history.

use std::time::{Duration, Instant};

use chrono::Utc;
use nomos_continue::store::{testing as bench, Store};
use nomos_continue::worker::Worker;
use uuid::Uuid;

use crate::procfs::{mib, reset_peak, status_bytes, CpuSample};
use crate::setup::{
    backend, link_and_report, open_sessions, open_store, percentile, require_pg, worker, Error,
};
use crate::Args;

/// Plans and delivers until `expected` continuations were delivered; the
/// time spent in each step. Stops with an error when a pass does nothing.
pub(crate) async fn drain(worker: &Worker, expected: usize) -> Result<Drained, Error> {
    let mut out = Drained::default();
    while out.delivered < expected {
        let t = Instant::now();
        let plan = worker.plan_once().await?;
        out.plan += t.elapsed();
        let t = Instant::now();
        let deliver = worker.deliver_once().await?;
        out.deliver += t.elapsed();
        out.delivered += deliver.delivered;
        out.passes += 1;
        if plan.planned == 0 && deliver.attempted == 0 {
            return Err(format!("stalled at {} of {expected}", out.delivered).into());
        }
    }
    Ok(out)
}

#[derive(Default)]
pub(crate) struct Drained {
    plan: Duration,
    deliver: Duration,
    delivered: usize,
    passes: usize,
}

/// `n` new sessions with an open window and one execution each, reported
/// finished through the store's own functions, as the API would.
pub(crate) async fn finished_sessions(store: &Store, n: usize) -> Result<(), Error> {
    let sessions = open_sessions(store, n).await?;
    let pairs: Vec<(Uuid, Uuid)> = sessions.iter().map(|s| (*s, Uuid::new_v4())).collect();
    link_and_report(store, &pairs, "completed", true).await
}

/// Continuations per second: `sessions` sessions, each with an open window
/// and one linked execution already terminal; the time from the worker's
/// first pass until every continuation is delivered and marked.
pub async fn throughput(args: &Args) -> Result<(), Error> {
    let (store, _dir) = open_store(args, "nomos_bench_worker").await?;
    finished_sessions(&store, args.sessions).await?;
    let (worker, _calls) = worker(&store, args)?;

    let groups = [("worker (this process)", vec![std::process::id()])];
    let cpu_before = CpuSample::take(&groups)?;
    let started = Instant::now();
    let drained = drain(&worker, args.sessions).await?;
    let elapsed = started.elapsed();
    let cpu_after = CpuSample::take(&groups)?;
    let overview = store.overview().await?;
    if overview.continuations_delivered as usize != args.sessions {
        return Err(format!(
            "{} delivered, not {}",
            overview.continuations_delivered, args.sessions
        )
        .into());
    }
    println!(
        "throughput {}: {} continuations in {:.2} s = {:.0}/s ({} passes; plan {:.2} s, deliver {:.2} s)",
        backend(args),
        args.sessions,
        elapsed.as_secs_f64(),
        args.sessions as f64 / elapsed.as_secs_f64(),
        drained.passes,
        drained.plan.as_secs_f64(),
        drained.deliver.as_secs_f64(),
    );
    println!(
        "{}",
        cpu_before.per_unit(&cpu_after, args.sessions, "continuation")
    );
    Ok(())
}

/// The peak resident set of one plan pass (`Worker::plan_once`) over
/// `--executions` finished executions with `--result-bytes` results, one per
/// session with an open window. The rows are written in bulk; the peak is
/// reset just before the pass, so it is the pass's own (the fill runs in the
/// database, not here).
pub async fn memory(args: &Args) -> Result<(), Error> {
    let (store, _dir) = open_store(args, "nomos_bench_memory").await?;
    let sessions = open_sessions(&store, args.executions).await?;
    let pairs: Vec<(Uuid, Uuid)> = sessions.iter().map(|s| (*s, Uuid::new_v4())).collect();
    let started = Instant::now();
    {
        let result = bench::result_text(args.result_bytes);
        let now = Utc::now();
        bench::add_executions(&store, &pairs, "failed", &result, Some(now), now).await?;
    }
    if !args.sqlite {
        bench::vacuum_analyze(&store).await?;
    }
    let fill = started.elapsed();
    let (worker, _calls) = worker(&store, args)?;

    let before = status_bytes("VmRSS")?;
    reset_peak()?;
    let started = Instant::now();
    let report = worker.plan_once().await?;
    let elapsed = started.elapsed();
    let peak = status_bytes("VmHWM")?;
    if report.examined == 0 {
        return Err("the pass read nothing: the bulk fill is not what this code plans".into());
    }
    println!(
        "memory {}: one plan_once over {} finished executions with {} B results \
         (fill {:.1} s): RSS before {:.1} MiB, peak {:.1} MiB (+{:.1} MiB); \
         pass {:.2} s, examined {}, planned {}, dropped {}, deferred {}",
        backend(args),
        args.executions,
        args.result_bytes,
        fill.as_secs_f64(),
        mib(before),
        mib(peak),
        mib(peak.saturating_sub(before)),
        elapsed.as_secs_f64(),
        report.examined,
        report.planned,
        report.dropped,
        report.deferred,
    );
    Ok(())
}

/// The cost of one pass (a plan and the deliveries of `--batch` new
/// finished executions) on top of `--history` sessions of settled history,
/// filled in bulk and vacuumed as autovacuum would leave them. One warm-up
/// pass, then `--passes` timed ones, each on a fresh batch.
pub async fn history(args: &Args) -> Result<(), Error> {
    require_pg(args, "history")?;
    let (store, _dir) = open_store(args, "nomos_bench_history").await?;
    let started = Instant::now();
    bench::fill_session_history(&store, args.history as i64, Utc::now()).await?;
    let fill = started.elapsed();
    let started = Instant::now();
    bench::vacuum_analyze(&store).await?;
    let vacuum = started.elapsed();
    let (total, pending) = bench::link_counts(&store).await?;
    println!(
        "history: {total} links ({pending} unsettled); fill {:.1} s, VACUUM ANALYZE {:.1} s",
        fill.as_secs_f64(),
        vacuum.as_secs_f64()
    );
    let (worker, _calls) = worker(&store, args)?;
    let (mut totals, mut plans, mut delivers) = (Vec::new(), Vec::new(), Vec::new());
    for pass in 0..=args.passes {
        finished_sessions(&store, args.batch).await?;
        let started = Instant::now();
        let drained = drain(&worker, args.batch).await?;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let total = ms(started.elapsed());
        println!(
            "  pass {pass}{}: {total:.1} ms (plan {:.1} ms, deliver {:.1} ms, {} passes)",
            if pass == 0 { " (warm-up)" } else { "" },
            ms(drained.plan),
            ms(drained.deliver),
            drained.passes
        );
        if pass > 0 {
            totals.push(total);
            plans.push(ms(drained.plan));
            delivers.push(ms(drained.deliver));
        }
    }
    for v in [&mut totals, &mut plans, &mut delivers] {
        v.sort_by(f64::total_cmp);
    }
    println!(
        "history {}: {} sessions of history, batch {}: median pass {:.1} ms \
         (plan {:.1} ms, deliver {:.1} ms), min {:.1} ms, max {:.1} ms over {} passes",
        backend(args),
        args.history,
        args.batch,
        percentile(&totals, 0.5),
        percentile(&plans, 0.5),
        percentile(&delivers, 0.5),
        percentile(&totals, 0.0),
        percentile(&totals, 1.0),
        totals.len()
    );
    Ok(())
}
