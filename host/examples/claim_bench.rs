//! Claim query vs history size: does the worker's poll stay flat as the link
//! table grows? (BENCHMARKS.md, "Claim query vs history size".)
//!
//! ```text
//! cargo run --release -p nomos-continue --features test-support --example claim_bench -- --rows 10000
//! cargo run --release -p nomos-continue --features test-support --example claim_bench -- --rows 10000000
//! ```
//!
//! Options: `--rows N` settled (continued) links of history, `--pending N`
//! unsettled links (default 300, half of them finished), `--iterations N`
//! timed polls (default 2000), `--limit N` rows per poll (default 100),
//! `--database-url URL` the admin URL of the server (default
//! `NOMOS_BENCH_PG_URL` or `postgres://postgres@127.0.0.1:5432/postgres`).
//! A dedicated database `nomos_bench_<rows>` is dropped and recreated.

use std::time::Instant;

use chrono::Utc;
use nomos_continue::store::{testing as bench, Store};

struct Args {
    rows: i64,
    pending: i64,
    iterations: usize,
    limit: i64,
    url: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        rows: 10_000,
        pending: 300,
        iterations: 2_000,
        limit: 100,
        url: std::env::var("NOMOS_BENCH_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into()),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = || value.parse::<i64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--rows" => args.rows = num()?,
            "--pending" => args.pending = num()?,
            "--iterations" => args.iterations = num()?.max(1) as usize,
            "--limit" => args.limit = num()?,
            "--database-url" => args.url = value.clone(),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(args)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args().map_err(|e| {
        eprintln!("claim_bench: {e}");
        e
    })?;
    let name = format!("nomos_bench_{}", args.rows);
    let url = bench::recreate_database(&args.url, &name).await?;
    let store = Store::connect(&url).await?;
    store.migrate().await?;

    let started = Instant::now();
    bench::fill_link_history(&store, args.rows, args.pending, Utc::now()).await?;
    let fill = started.elapsed();
    let started = Instant::now();
    bench::vacuum_analyze(&store).await?;
    let vacuum = started.elapsed();
    let (total, pending) = bench::link_counts(&store).await?;
    println!("database {name}: {total} links, {pending} unsettled");
    println!(
        "fill {:.1} s, VACUUM ANALYZE {:.1} s",
        fill.as_secs_f64(),
        vacuum.as_secs_f64()
    );

    // Warm up (plan cache, shared buffers), then time the store function the
    // worker calls: pending_links_ready(None, limit, revision). The
    // benchmark's statuses are not classified under any revision, so every
    // pending row is a candidate, as in the worst case.
    const REVISION: &str = "bench";
    for _ in 0..100 {
        store
            .pending_links_ready(None, args.limit, REVISION)
            .await?;
    }
    let mut micros = Vec::with_capacity(args.iterations);
    let mut returned = 0;
    for _ in 0..args.iterations {
        let t = Instant::now();
        returned = store
            .pending_links_ready(None, args.limit, REVISION)
            .await?
            .len();
        micros.push(t.elapsed().as_secs_f64() * 1e6);
    }
    micros.sort_by(f64::total_cmp);
    let mean = micros.iter().sum::<f64>() / micros.len() as f64;
    println!(
        "pending_links_ready(limit {}, revision) -> {returned} rows, {} iterations: \
         median {:.0} us, p99 {:.0} us, mean {:.0} us",
        args.limit,
        args.iterations,
        percentile(&micros, 0.5),
        percentile(&micros, 0.99),
        mean
    );
    println!(
        "\n{}",
        bench::explain_pending_links(&store, args.limit, REVISION).await?
    );
    store.close().await;
    Ok(())
}
