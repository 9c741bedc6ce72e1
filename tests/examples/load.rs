//! The soak of a real `serve` under a runtime's load, through its HTTP API
//! only (`nomos_continue_tests::load`: sessions that come and go,
//! open-loop arrivals, requests in flight bounded or not, refusals
//! retried), on a PostgreSQL cluster of its own with the server's defaults
//! (autovacuum on), a PostgreSQL URL given, or an SQLite file.
//!
//! ```sh
//! cargo build --release -p nomos-continue-tests --example load -p nomos-continue --bins
//! target/release/examples/load --minutes 60 --rate 500 --binary target/release/nomos-continue
//! target/release/examples/load --minutes 60 --rate 200 --sqlite --binary target/release/nomos-continue
//! target/release/examples/load --minutes 10 --rate 1000 --unbounded   # a runtime that does not bound its requests
//! ```
//!
//! Options: `--rate N` reports a second (default 500), `--minutes N`
//! (default 10), `--per-session N` executions a session (10),
//! `--in-flight N` requests in flight at most (256) or `--unbounded`,
//! `--queue N` reports waiting at most before the runtime sheds (50,000),
//! `--sqlite`, `--database-url URL` (a PostgreSQL database to use as it
//! is, instead of a cluster of its own: say in BENCHMARKS.md what its
//! settings are), `--binary PATH` (default: the test build's
//! `nomos-continue`), `--csv PATH` (default `target/load-<store>.csv`),
//! `--serve-arg ARG` (repeated: passed to `serve`, e.g. retention flags),
//! `--then MINUTES:RATE` (repeated: further phases after the first, e.g.
//! an overload and the fall back), `--pg-setting NAME=VALUE` (repeated:
//! for the cluster of its own, e.g. `autovacuum=off`), `--targets-file
//! PATH` (writes `serve`'s address there as a Prometheus `file_sd` target
//! list, for a Prometheus that evaluates `docs/alerts.yml` during the run).
//!
//! Prints a line per minute (offered, taken, shed, refused, continued,
//! pickup lag p50/p99, RSS, database bytes), writes them as CSV for
//! `tests/bench/plot_load.py`, then on PostgreSQL each table's upkeep
//! (bytes, dead rows, heap-only share) and the WAL written per
//! continuation, and on a cluster of its own the lock waits over 50 ms it
//! logged (`log_lock_waits`, `deadlock_timeout = 50ms`) and what the load
//! cost it, counted from after `serve`'s migration: the scans of
//! `executions` and `nomos_plan_executions` (sequential reads as a
//! multiple of their live rows), the statements (`pg_stat_statements`,
//! top level, the driver's own probes left out) and commits per execution
//! taken, with `BEGIN` and `COMMIT` apart, the 15 statements that took the
//! most time, and the statements over 1 s it logged
//! (`log_min_duration_statement`). Exits 1 unless every report answered
//! 2xx was continued exactly once.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use nomos_continue::store::Store;
use nomos_continue_tests::cluster::Cluster;
use nomos_continue_tests::load::{self, Agent, LoadConfig, LoadReport};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};

struct Args {
    config: LoadConfig,
    sqlite: bool,
    database_url: Option<String>,
    binary: Option<PathBuf>,
    csv: Option<PathBuf>,
    serve_args: Vec<String>,
    pg_settings: Vec<(String, String)>,
    targets_file: Option<PathBuf>,
}

fn parse() -> Result<Args> {
    let mut config = LoadConfig::new(500.0, Duration::from_secs(600));
    let mut args = Args {
        config: config.clone(),
        sqlite: false,
        database_url: None,
        binary: None,
        csv: None,
        serve_args: Vec::new(),
        pg_settings: Vec::new(),
        targets_file: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--rate" => config.rate = value()?.parse()?,
            "--minutes" => {
                config.duration = Duration::from_secs_f64(value()?.parse::<f64>()? * 60.0)
            }
            "--per-session" => config.per_session = value()?.parse()?,
            "--in-flight" => config.in_flight = Some(value()?.parse()?),
            "--unbounded" => config.in_flight = None,
            "--queue" => config.queue = value()?.parse()?,
            "--sqlite" => args.sqlite = true,
            "--database-url" => args.database_url = Some(value()?),
            "--binary" => args.binary = Some(value()?.into()),
            "--csv" => args.csv = Some(value()?.into()),
            "--serve-arg" => args.serve_args.push(value()?),
            "--then" => {
                let phase = value()?;
                let (minutes, rate) = phase
                    .split_once(':')
                    .with_context(|| format!("--then {phase}: expected MINUTES:RATE"))?;
                let minutes: f64 = minutes.parse()?;
                config
                    .then
                    .push((Duration::from_secs_f64(minutes * 60.0), rate.parse()?));
            }
            "--pg-setting" => {
                let setting = value()?;
                let (name, value) = setting
                    .split_once('=')
                    .with_context(|| format!("--pg-setting {setting}: expected NAME=VALUE"))?;
                args.pg_settings.push((name.to_owned(), value.to_owned()));
            }
            "--targets-file" => args.targets_file = Some(value()?.into()),
            other => {
                bail!("unknown option {other} (see the doc at the top of tests/examples/load.rs)")
            }
        }
    }
    args.config = config;
    Ok(args)
}

/// Where the store lives while the run lasts.
enum Database {
    /// The file, in a directory removed with it.
    Sqlite {
        file: PathBuf,
        _dir: tempfile::TempDir,
    },
    OwnCluster(Cluster),
    Given(String),
}

impl Database {
    fn url(&self) -> String {
        match self {
            Database::Sqlite { file, .. } => format!("sqlite:{}", file.display()),
            Database::OwnCluster(cluster) => cluster.url("postgres"),
            Database::Given(url) => url.clone(),
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Database::Sqlite { .. } => "sqlite",
            Database::OwnCluster(_) => "postgres (a cluster of its own, defaults)",
            Database::Given(_) => "postgres (given URL)",
        }
    }
}

async fn database(args: &Args) -> Result<Database> {
    if args.sqlite {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("load.db");
        return Ok(Database::Sqlite { file, _dir: dir });
    }
    if let Some(url) = &args.database_url {
        return Ok(Database::Given(url.clone()));
    }
    // The server's defaults (the tests' clusters have small shared
    // buffers), and every lock wait over 50 ms logged: a purge must never
    // hold a report, a link or a claim that long. `pg_stat_statements`
    // counts what `serve` sends, and every statement over a second is
    // logged, for `print_statement_stats`.
    let mut settings = vec![
        ("shared_buffers", "'128MB'".to_owned()),
        ("log_lock_waits", "on".to_owned()),
        ("deadlock_timeout", "'50ms'".to_owned()),
        (
            "shared_preload_libraries",
            "'pg_stat_statements'".to_owned(),
        ),
        ("pg_stat_statements.track", "'top'".to_owned()),
        ("log_min_duration_statement", "'1s'".to_owned()),
    ];
    settings.extend(
        args.pg_settings
            .iter()
            .map(|(name, value)| (name.as_str(), format!("'{value}'"))),
    );
    let settings: Vec<(&str, &str)> = settings.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let cluster = Cluster::primary("load", &settings)
        .await
        .context("no PostgreSQL binaries for a cluster of its own")?;
    Ok(Database::OwnCluster(cluster))
}

/// The database's bytes: PostgreSQL's `pg_database_size`, or the SQLite
/// file with its write-ahead log.
async fn db_bytes(db: &DbProbe) -> Option<u64> {
    match db {
        DbProbe::Postgres(pool) => {
            sqlx::query_scalar::<_, i64>("SELECT pg_database_size(current_database())")
                .fetch_one(pool)
                .await
                .ok()
                .map(|b| b as u64)
        }
        DbProbe::Sqlite(file) => {
            let size = |p: &PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            let wal = PathBuf::from(format!("{}-wal", file.display()));
            Some(size(file) + size(&wal))
        }
    }
}

#[derive(Clone)]
enum DbProbe {
    Postgres(sqlx::PgPool),
    Sqlite(PathBuf),
}

fn print(report: &LoadReport, label: &str) {
    println!("store: {label}");
    println!(
        "{:>6} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>10}",
        "minute",
        "offered",
        "taken",
        "shed",
        "refused",
        "continued",
        "p50 ms",
        "p99 ms",
        "RSS MiB",
        "DB MB",
        "answer p99"
    );
    for (i, m) in report.minutes.iter().enumerate() {
        let [a, b, c, d, e, f, g, h, k, l] = m.cells();
        println!(
            "{:>6} {a:>8} {b:>8} {c:>8} {d:>8} {e:>9} {f:>9} {g:>9} {h:>8} {k:>8} {l:>10}",
            i + 1
        );
    }
    println!(
        "taken {}, never continued {}, continued twice {}, other errors {}",
        report.taken,
        report.never_continued.len(),
        report.continued_twice.len(),
        report.errors.len()
    );
    for e in &report.errors {
        println!("  error: {e}");
    }
}

/// Each table's upkeep and the WAL written per continuation (PostgreSQL).
async fn print_upkeep(url: &str, wal_start: &str, continued: u64) -> Result<()> {
    let store = Store::connect(url).await?;
    // Each backend flushes its counts within a second of going idle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("table                             MB       live       dead    updates  HOT %");
    for t in store.table_upkeep().await? {
        let hot = if t.updates > 0 {
            format!("{:.0}", 100.0 * t.hot_updates as f64 / t.updates as f64)
        } else {
            "-".into()
        };
        println!(
            "{:<30} {:>6.1} {:>10} {:>10} {:>10} {:>6}",
            t.table,
            t.bytes as f64 / 1e6,
            t.live_tuples,
            t.dead_tuples,
            t.updates,
            hot
        );
    }
    let pool = sqlx::PgPool::connect(url).await?;
    let wal: i64 = sqlx::query_scalar("SELECT (pg_current_wal_lsn() - $1::text::pg_lsn)::bigint")
        .bind(wal_start)
        .fetch_one(&pool)
        .await?;
    println!(
        "WAL: {:.1} MB, {:.0} bytes per continuation",
        wal as f64 / 1e6,
        wal as f64 / continued.max(1) as f64
    );
    Ok(())
}

/// Starts afresh, once `serve` has migrated the store, the counts
/// `print_statement_stats` reads at the end: `pg_stat_statements` (created
/// here; the cluster preloads it) and the tables' scans (`pg_stat_reset`).
/// Returns the database's commits so far, the baseline of those per
/// execution.
async fn reset_statement_stats(pool: &sqlx::PgPool) -> Result<i64> {
    // The migration's counts, flushed within a second of its going idle,
    // land before the reset rather than after it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(pool)
        .await
        .context("create extension pg_stat_statements")?;
    sqlx::query("SELECT pg_stat_statements_reset()")
        .execute(pool)
        .await
        .context("pg_stat_statements_reset()")?;
    sqlx::query("SELECT pg_stat_reset()")
        .execute(pool)
        .await
        .context("pg_stat_reset()")?;
    sqlx::query_scalar::<_, i64>(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(pool)
    .await
    .context("read xact_commit")
}

/// What `serve` sent, at top level, in this database: the driver's own
/// probes (database size, WAL position, these statistics) left out.
const SERVE_STATEMENTS: &str = "toplevel \
     AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
     AND strpos(query, 'pg_stat_') = 0 AND strpos(query, 'pg_database_size') = 0 \
     AND strpos(query, 'pg_current_wal_lsn') = 0";

/// What the load cost PostgreSQL since `reset_statement_stats` (a cluster
/// of its own): the scans of the two tables every report touches (a
/// sequential scan that reads many times their live rows is an index
/// missing or not used), the statements and commits per execution taken
/// (`BEGIN` and `COMMIT` are statements of their own, sent as simple
/// queries), the statements that took the most time, and those over a
/// second in the server's `log`.
async fn print_statement_stats(
    pool: &sqlx::PgPool,
    log: &str,
    commits_before: i64,
    taken: u64,
) -> Result<()> {
    // Each backend flushes its counts within a second of going idle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let tables: Vec<(String, i64, i64, i64, i64)> = sqlx::query_as(
        "SELECT relname::text, seq_scan, seq_tup_read, COALESCE(idx_scan, 0), n_live_tup \
         FROM pg_stat_user_tables WHERE relname IN ('executions', 'nomos_plan_executions') \
         ORDER BY relname",
    )
    .fetch_all(pool)
    .await
    .context("read pg_stat_user_tables")?;
    println!("table                   seq scans   seq rows read   idx scans   live rows  x live");
    for (table, seq_scan, seq_read, idx_scan, live) in tables {
        println!(
            "{table:<22} {seq_scan:>10} {seq_read:>15} {idx_scan:>11} {live:>11} {:>7.1}",
            seq_read as f64 / live.max(1) as f64
        );
    }
    let (calls, begins, commits): (i64, i64, i64) = sqlx::query_as(&format!(
        "SELECT COALESCE(SUM(calls), 0)::bigint, \
           COALESCE(SUM(calls) FILTER (WHERE upper(query) = 'BEGIN'), 0)::bigint, \
           COALESCE(SUM(calls) FILTER (WHERE upper(query) = 'COMMIT'), 0)::bigint \
         FROM pg_stat_statements WHERE {SERVE_STATEMENTS}"
    ))
    .fetch_one(pool)
    .await
    .context("read pg_stat_statements")?;
    let commits_now: i64 = sqlx::query_scalar(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(pool)
    .await
    .context("read xact_commit")?;
    let per_execution = |n: i64| n as f64 / taken.max(1) as f64;
    println!(
        "statements (pg_stat_statements, top level): {calls}, BEGIN {begins}, COMMIT {commits}"
    );
    println!(
        "per execution taken: {:.2} statements, {:.2} with BEGIN and COMMIT, {:.2} commits",
        per_execution(calls - begins - commits),
        per_execution(calls),
        per_execution(commits_now - commits_before)
    );
    let top: Vec<(i64, f64, f64, f64, i64, String)> = sqlx::query_as(&format!(
        "SELECT calls, mean_exec_time, max_exec_time, total_exec_time, rows, \
           COALESCE(query, '') FROM pg_stat_statements WHERE {SERVE_STATEMENTS} \
         ORDER BY total_exec_time DESC LIMIT 15"
    ))
    .fetch_all(pool)
    .await
    .context("read the top statements")?;
    println!("    calls   mean ms    max ms    total ms        rows  query");
    for (calls, mean, max, total, rows, query) in top {
        // On one line, and short.
        let query: String = query
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(120)
            .collect();
        println!("{calls:>9} {mean:>9.2} {max:>9.1} {total:>11.0} {rows:>11}  {query}");
    }
    let slow: Vec<&str> = log.lines().filter(|l| l.contains("duration:")).collect();
    println!(
        "statements over 1 s (log_min_duration_statement): {}",
        slow.len()
    );
    for line in slow.iter().take(10) {
        println!("  {}", line.chars().take(200).collect::<String>());
    }
    Ok(())
}

/// Each SQLite table's bytes with its indexes (the `dbstat` table, which
/// the bundled SQLite has), and its rows.
async fn print_sqlite_sizes(file: &std::path::Path) -> Result<()> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}", file.display())).await?;
    let sizes: Vec<(String, i64)> = sqlx::query_as(
        "SELECT m.tbl_name, SUM(d.pgsize) AS bytes FROM dbstat d \
         JOIN sqlite_master m ON m.name = d.name GROUP BY m.tbl_name ORDER BY bytes DESC",
    )
    .fetch_all(&pool)
    .await?;
    println!("table                             MB       rows   bytes/row");
    for (table, bytes) in sizes {
        // Names come from the file's own catalog.
        let rows: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM \"{table}\""))
            .fetch_one(&pool)
            .await?;
        println!(
            "{table:<30} {:>6.1} {rows:>10} {:>11.0}",
            bytes as f64 / 1e6,
            bytes as f64 / rows.max(1) as f64
        );
    }
    Ok(())
}

async fn run() -> Result<bool> {
    let args = parse()?;
    let db = database(&args).await?;
    let url = db.url();
    let agent = Arc::new(Agent::default());
    let webhook = agent.serve().await?;
    let mut options = ReplicaOptions::new(&url, &webhook, "load");
    // Production's poll and lease, not the tests' quick ones.
    options.poll_ms = 2000;
    options.lease_secs = 30;
    options.binary = args.binary.clone();
    options.extra_args = args.serve_args.clone();
    let replica = Replica::start(&options).await;
    let pid = replica.pid().context("serve has no pid")?;
    let probe = match &db {
        Database::Sqlite { file, .. } => DbProbe::Sqlite(file.clone()),
        _ => DbProbe::Postgres(sqlx::PgPool::connect(&url).await?),
    };
    // `serve` has migrated the store: on a cluster of its own, the
    // statements and scans are counted from here, the load's alone.
    let commits_before = match (&db, &probe) {
        (Database::OwnCluster(_), DbProbe::Postgres(pool)) => {
            match reset_statement_stats(pool).await {
                Ok(commits) => Some(commits),
                Err(e) => {
                    println!("no statement statistics: {e:#}");
                    None
                }
            }
        }
        _ => None,
    };
    let wal_start = match &probe {
        DbProbe::Postgres(pool) => Some(
            sqlx::query_scalar::<_, String>("SELECT pg_current_wal_lsn()::text")
                .fetch_one(pool)
                .await?,
        ),
        DbProbe::Sqlite(_) => None,
    };
    let sampled = probe.clone();
    let sample: load::Sample = Box::new(move || {
        let probe = sampled.clone();
        Box::pin(async move { (load::rss_of(pid), db_bytes(&probe).await) })
    });
    let base = format!("http://{}", replica.addr);
    if let Some(path) = &args.targets_file {
        let targets = serde_json::json!([{ "targets": [replica.addr.to_string()] }]);
        std::fs::write(path, targets.to_string())
            .with_context(|| format!("write {}", path.display()))?;
    }
    let report = load::run(&base, agent, &args.config, sample).await?;
    print(&report, db.label());
    // What `serve` warned of at start (its autovacuum check among them).
    let stderr = replica.stderr();
    for line in stderr.lines().filter(|l| l.contains("WARN")).take(10) {
        println!("serve warned: {line}");
    }
    // A lease taken over while its call ran is a call that may be made
    // twice after a crash: under load, none should be.
    let taken_over = stderr
        .lines()
        .filter(|l| l.contains("leases taken over"))
        .count();
    println!("serve logged leases taken over while their calls ran: {taken_over} times");
    let store = if args.sqlite { "sqlite" } else { "postgres" };
    let csv = args
        .csv
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("target/load-{store}.csv")));
    std::fs::write(&csv, report.csv()).with_context(|| format!("write {}", csv.display()))?;
    println!("minutes written to {}", csv.display());
    if let Some(start) = wal_start {
        let continued = report.minutes.iter().map(|m| m.continued).sum();
        print_upkeep(&url, &start, continued).await?;
    }
    drop(replica);
    if let Database::Sqlite { file, .. } = &db {
        print_sqlite_sizes(file).await?;
    }
    if let Database::OwnCluster(cluster) = &db {
        let log = cluster.log();
        // After `serve` is gone, so that its polls add nothing; a failure
        // here costs these lines only, not the run.
        if let (DbProbe::Postgres(pool), Some(commits)) = (&probe, commits_before) {
            if let Err(e) = print_statement_stats(pool, &log, commits, report.taken).await {
                println!("statement statistics: {e:#}");
            }
        }
        // By what was waited for: "AccessExclusiveLock on object 0 of
        // class 1262" is the lock every committing NOTIFY takes, one at a
        // time; a purge's would be a relation's, a tuple's or a
        // transaction's.
        let mut waits: std::collections::BTreeMap<&str, usize> = Default::default();
        for line in log.lines() {
            if let Some((_, rest)) = line.split_once("still waiting for ") {
                let what = rest.split(" after ").next().unwrap_or(rest);
                *waits.entry(what).or_default() += 1;
            }
        }
        println!(
            "lock waits over 50 ms (log_lock_waits): {}",
            waits.values().sum::<usize>()
        );
        for (what, n) in &waits {
            println!("  {n:>6}  {what}");
        }
    }
    Ok(report.exactly_once())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            println!("FAILED: not every report answered 2xx was continued exactly once");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("load: {e:#}");
            ExitCode::FAILURE
        }
    }
}
