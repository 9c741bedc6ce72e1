//! Soak: the fault-injection simulation of the delivery promises on random
//! seeds, alternating SQLite and PostgreSQL, for a number of minutes.
//!
//! ```sh
//! cargo run --release -p nomos-continue-tests --example soak -- --minutes 10
//! cargo run --release -p nomos-continue-tests --example soak -- --seed 42 --runs 1   # one seed again
//! ```
//!
//! Prints one line per seed and a summary: seeds, operations, faults
//! injected, invariant violations, and the seed of every failure. Exits 1
//! when any promise broke. PostgreSQL is `NOMOS_TEST_PG_URL` or
//! `postgres://postgres@127.0.0.1:5432/postgres`; each run gets a fresh
//! database, dropped afterwards.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue::store::Store;
use nomos_continue_tests::sim;
use rand::Rng;
use sqlx::{Connection, PgConnection};

struct Args {
    minutes: f64,
    seed: Option<u64>,
    runs: Option<usize>,
}

fn parse() -> Result<Args> {
    let mut args = Args {
        minutes: 10.0,
        seed: None,
        runs: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--minutes" => args.minutes = value.parse().context("--minutes")?,
            "--seed" => args.seed = Some(value.parse().context("--seed")?),
            "--runs" => args.runs = Some(value.parse().context("--runs")?),
            other => anyhow::bail!("unknown flag {other} (--minutes M, --seed S, --runs N)"),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    // Single-threaded, as in the test: simulated time moves only at the
    // driver's await points (see `tests/tests/delivery/simulation.rs`).
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the async runtime")
        .and_then(|rt| rt.block_on(soak()))
    {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn soak() -> Result<bool> {
    let args = parse()?;
    let policy = Arc::new(PolicyRuntime::new(Limits::default()).context("built-in policy")?);
    let deadline = Instant::now() + Duration::from_secs_f64(args.minutes * 60.0);
    let admin = std::env::var("NOMOS_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let (mut seeds, mut operations, mut faults, mut violations) = (0usize, 0usize, 0usize, 0usize);
    let mut failed = Vec::new();
    let mut run = 0usize;
    while args.runs.map_or(Instant::now() < deadline, |n| run < n) {
        let seed = args.seed.unwrap_or_else(|| rand::thread_rng().gen());
        let postgres = run % 2 == 1;
        let dir = tempfile::tempdir().context("temporary directory")?;
        let (store, database) = if postgres {
            let name = format!("nomos_soak_{}", uuid::Uuid::new_v4().simple());
            let mut conn = PgConnection::connect(&admin)
                .await
                .context("connect to PostgreSQL")?;
            sqlx::query(&format!("CREATE DATABASE \"{name}\""))
                .execute(&mut conn)
                .await?;
            let url = match admin.rsplit_once('/') {
                Some((base, _)) => format!("{base}/{name}"),
                None => anyhow::bail!("unexpected PostgreSQL URL {admin}"),
            };
            (Store::connect(&url).await?, Some((conn, name)))
        } else {
            let url = format!("sqlite:{}", dir.path().join("soak.db").display());
            (Store::connect(&url).await?, None)
        };
        store.migrate().await.context("migrate")?;
        let report = sim::run(store.clone(), policy.clone(), sim::SimConfig::small(seed)).await;
        store.close().await;
        if let Some((mut conn, name)) = database {
            sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                .execute(&mut conn)
                .await?;
        }
        seeds += 1;
        operations += report.operations;
        faults += report.faults;
        violations += report.violations.len();
        println!(
            "seed {seed} on {}: {} operations, {} faults, {} calls, {} continued, {} dropped, {} failed, {} violations",
            if postgres { "postgres" } else { "sqlite" },
            report.operations,
            report.faults,
            report.calls,
            report.continued,
            report.dropped,
            report.failed,
            report.violations.len()
        );
        for v in &report.violations {
            println!("  {v}");
        }
        if !report.violations.is_empty() || report.pass_errors + report.deadlocks > 0 {
            failed.push(seed);
        }
        run += 1;
    }
    println!(
        "soak: {seeds} seeds, {operations} operations, {faults} faults injected, {violations} violations{}",
        if failed.is_empty() {
            String::new()
        } else {
            format!("; failing seeds: {failed:?}")
        }
    );
    Ok(failed.is_empty())
}
