//! Worker benchmarks (BENCHMARKS.md, "Worker"): pickup latency,
//! continuations per second, the memory of a plan pass, a pass's cost
//! against history, in process with the real store, policy and worker loop
//! and an agent that only records when it was called; and scale-out, with
//! real `serve` replicas and a no-op webhook.
//!
//! ```text
//! B=target/release/examples/worker_bench
//! # terminal status → agent call, NOTIFY (PostgreSQL) wake-up
//! $B latency --sessions 100
//! # the same with 10,000 executions stuck in `running` besides the sessions
//! $B latency --sessions 1000 --running 10000
//! $B latency --sessions 1000 --running 10000 --sqlite   # in-process wake-up
//! # the same beside 10 million settled sessions, each with its link,
//! # execution, delivery, window and logged decision
//! $B latency --sessions 1000 --settled 10000000
//! # the same with the poll alone (no listener, no in-process signal)
//! $B latency --sessions 100 --poll-only --poll-ms 100
//! # continuations per second, no-op agent
//! $B throughput --sessions 10000
//! $B throughput --sessions 10000 --sqlite
//! # peak RSS of one plan pass over 10,000 finished executions, 256 KiB results
//! $B memory --executions 10000 --result-bytes 262144
//! # one pass (plan + 100 deliveries) on 1M sessions of settled history
//! $B history --history 1000000
//! # real replicas on one database, no-op webhook on loopback
//! $B scaleout --replicas 2 --sessions 10000 --binary target/release/nomos-continue
//! # policy replay of the log a worker wrote over 10,000 continuations
//! $B replay --sessions 10000 [--sqlite]
//! # serve's resident set under 1,000 continuations/s for 10 minutes
//! $B soak --rate 1000 --minutes 10 --sessions 2000 --binary target/release/nomos-continue
//! ```
//!
//! Options: `--sessions N` (default 100), `--samples N` latency samples
//! (default 200), `--running N` executions stuck in `running` for the
//! latency (default 0), `--settled N` sessions of settled history beside
//! the latency's (default 0), `--breakdown` (the latency's statements, timed by
//! sqlx's statement log, and the time between them), `--poll-ms N` the worker's poll (default 2000, as in
//! production; the wake-up makes it rarely matter), `--poll-only`,
//! `--executions N` and `--result-bytes N` for memory (defaults 10000 and
//! 262144), `--history N` sessions of history, `--batch N` new executions
//! per timed pass and `--passes N` timed passes for history (defaults 10000,
//! 100, 7), `--replicas N` and `--binary PATH` for scale-out (defaults 1 and
//! `target/release/nomos-continue`), `--rate N` continuations a second and
//! `--minutes N` for soak (defaults 1000 and 10), `--sqlite` (a file in a temporary
//! directory instead of PostgreSQL; latency, throughput, memory, replay),
//! `--no-decision-log` (the worker logs no decisions, to see what the log
//! costs),
//! `--database-url URL` the PostgreSQL admin URL (default
//! `NOMOS_BENCH_PG_URL` or `postgres://postgres@127.0.0.1:5432/postgres`; a
//! database `nomos_bench_<mode>` is dropped and recreated, `nomos_bench_worker`
//! for latency and throughput).

mod breakdown;
mod latency;
mod passes;
mod procfs;
mod replay;
mod scaleout;
mod setup;
mod soak;

use std::path::PathBuf;

use setup::Error;

const USAGE: &str =
    "usage: worker_bench latency|throughput|memory|history|scaleout|replay|soak [options]";

pub struct Args {
    mode: String,
    sessions: usize,
    samples: usize,
    running: usize,
    settled: usize,
    poll_ms: u64,
    poll_only: bool,
    breakdown: bool,
    no_decision_log: bool,
    executions: usize,
    result_bytes: usize,
    history: usize,
    batch: usize,
    passes: usize,
    replicas: usize,
    binary: PathBuf,
    rate: usize,
    minutes: u64,
    sqlite: bool,
    url: String,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it.next().ok_or(USAGE)?;
    let mut args = Args {
        mode,
        sessions: 100,
        samples: 200,
        running: 0,
        settled: 0,
        poll_ms: 2000,
        poll_only: false,
        breakdown: false,
        no_decision_log: false,
        executions: 10_000,
        result_bytes: 256 << 10,
        history: 10_000,
        batch: 100,
        passes: 7,
        replicas: 1,
        binary: PathBuf::from("target/release/nomos-continue"),
        rate: 1000,
        minutes: 10,
        sqlite: false,
        url: std::env::var("NOMOS_BENCH_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into()),
    };
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--poll-only" => args.poll_only = true,
            "--breakdown" => args.breakdown = true,
            "--no-decision-log" => args.no_decision_log = true,
            "--sqlite" => args.sqlite = true,
            _ => {
                let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
                let num = || value.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
                let count = || Ok::<_, String>(num()?.max(1) as usize);
                match flag.as_str() {
                    "--sessions" => args.sessions = count()?,
                    "--samples" => args.samples = count()?,
                    "--running" => args.running = num()? as usize,
                    "--settled" => args.settled = num()? as usize,
                    "--poll-ms" => args.poll_ms = num()?.max(1),
                    "--executions" => args.executions = count()?,
                    "--result-bytes" => args.result_bytes = num()? as usize,
                    "--history" => args.history = num()? as usize,
                    "--batch" => args.batch = count()?,
                    "--passes" => args.passes = count()?,
                    "--replicas" => args.replicas = count()?,
                    "--binary" => args.binary = PathBuf::from(&value),
                    "--rate" => args.rate = count()?,
                    "--minutes" => args.minutes = num()?.max(1),
                    "--database-url" => args.url = value.clone(),
                    other => return Err(format!("unknown option {other}")),
                }
            }
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = parse_args().map_err(|e| {
        eprintln!("worker_bench: {e}");
        e
    })?;
    match args.mode.as_str() {
        "latency" => latency::latency(&args).await,
        "throughput" => passes::throughput(&args).await,
        "memory" => passes::memory(&args).await,
        "history" => passes::history(&args).await,
        "scaleout" => scaleout::scaleout(&args).await,
        "replay" => replay::replay(&args).await,
        "soak" => soak::soak(&args).await,
        other => Err(format!("unknown mode {other}; {USAGE}").into()),
    }
}
