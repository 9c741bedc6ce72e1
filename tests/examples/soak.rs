//! Soak: the fault-injection simulation of the delivery promises on random
//! seeds, alternating SQLite and PostgreSQL (or on the store `--store`
//! names), for a number of minutes. Every run's store fails over now and
//! then to a standby that lacks its last commits; on PostgreSQL the store
//! also refuses writes for stretches of simulated time (SQLSTATE 53100, a
//! full disk).
//!
//! ```sh
//! cargo run --release -p nomos-continue-tests --example soak -- --minutes 10
//! cargo run --release -p nomos-continue-tests --example soak -- --seed 42 --store postgres --runs 1   # one seed again
//! ```
//!
//! Prints every failed pass as it happens (with its seed and store), one
//! line per seed, and a summary: seeds, operations, faults injected,
//! failovers and the records of accepted calls they lost, passes
//! failed by an injected refusal, pass errors (any other failed pass) and of
//! the deadlocks PostgreSQL detected (`pg_stat_database`, which also counts
//! the statements the engine retries without failing a pass), invariant
//! violations, and for every failing seed the command that runs it again.
//! Exits 1 when a promise broke, a pass failed on its own or a deadlock
//! was detected. A seed fixes the driver's steps and the answers to
//! each call, not how far concurrent passes get between steps (see
//! `nomos_continue_tests::sim`): a failure that depends on that is run
//! again with `--runs N`. PostgreSQL is `NOMOS_TEST_PG_URL` or
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
    /// `Some(true)`: PostgreSQL only; `Some(false)`: SQLite only.
    postgres: Option<bool>,
}

fn parse() -> Result<Args> {
    let mut args = Args {
        minutes: 10.0,
        seed: None,
        runs: None,
        postgres: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--minutes" => args.minutes = value.parse().context("--minutes")?,
            "--seed" => args.seed = Some(value.parse().context("--seed")?),
            "--runs" => args.runs = Some(value.parse().context("--runs")?),
            "--store" => {
                args.postgres = Some(match value.as_str() {
                    "postgres" => true,
                    "sqlite" => false,
                    other => anyhow::bail!("--store is sqlite or postgres, not {other}"),
                })
            }
            other => anyhow::bail!(
                "unknown flag {other} (--minutes M, --seed S, --runs N, --store sqlite|postgres)"
            ),
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

/// What the runs so far add up to.
#[derive(Default)]
struct Totals {
    seeds: usize,
    operations: usize,
    faults: usize,
    refused: usize,
    failovers: usize,
    lost_records: usize,
    pass_errors: usize,
    deadlocks: usize,
    violations: usize,
    /// Each failing run's seed and store.
    failed: Vec<(u64, &'static str)>,
}

async fn soak() -> Result<bool> {
    let args = parse()?;
    let policy = Arc::new(PolicyRuntime::new(Limits::default()).context("built-in policy")?);
    let deadline = Instant::now() + Duration::from_secs_f64(args.minutes * 60.0);
    let admin = std::env::var("NOMOS_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let mut totals = Totals::default();
    let mut run = 0usize;
    while args.runs.map_or(Instant::now() < deadline, |n| run < n) {
        let seed = args.seed.unwrap_or_else(|| rand::thread_rng().gen());
        let postgres = args.postgres.unwrap_or(run % 2 == 1);
        let backend = if postgres { "postgres" } else { "sqlite" };
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
        let config = sim::SimConfig {
            refusing_store: postgres,
            losing_store: true,
            print_errors: true,
            ..sim::SimConfig::small(seed)
        };
        let report = sim::run(store.clone(), policy.clone(), config).await;
        store.close().await;
        if let Some((mut conn, name)) = database {
            sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                .execute(&mut conn)
                .await?;
        }
        totals.seeds += 1;
        totals.operations += report.operations;
        totals.faults += report.faults;
        totals.refused += report.refused;
        totals.failovers += report.failovers;
        totals.lost_records += report.lost_records;
        totals.pass_errors += report.pass_errors;
        totals.deadlocks += report.deadlocks;
        totals.violations += report.violations.len();
        println!(
            "seed {seed} on {backend}: {} operations, {} faults, {} failovers ({} records lost), {} refused passes, {} pass errors, {} deadlocks, {} calls, {} continued, {} dropped, {} failed, {} violations, driver log {}",
            report.operations,
            report.faults,
            report.failovers,
            report.lost_records,
            report.refused,
            report.pass_errors,
            report.deadlocks,
            report.calls,
            report.continued,
            report.dropped,
            report.failed,
            report.violations.len(),
            &report.digest[..12],
        );
        for v in &report.violations {
            println!("  {v}");
        }
        if !report.violations.is_empty() || report.pass_errors + report.deadlocks > 0 {
            totals.failed.push((seed, backend));
        }
        run += 1;
    }
    let t = &totals;
    println!(
        "soak: {} seeds, {} operations, {} faults injected ({} failovers losing {} records of accepted calls, {} passes refused by the store), {} pass errors, {} deadlocks, {} violations",
        t.seeds, t.operations, t.faults, t.failovers, t.lost_records, t.refused, t.pass_errors, t.deadlocks, t.violations
    );
    for (seed, backend) in &t.failed {
        println!(
            "failed: seed {seed} on {backend}; again: cargo run --release -p nomos-continue-tests --example soak -- --seed {seed} --store {backend} --runs 3"
        );
    }
    Ok(t.failed.is_empty())
}
