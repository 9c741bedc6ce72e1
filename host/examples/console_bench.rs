//! How long each console view takes to load with many sessions and one
//! very busy session (issue 16: 1 s or less with 10,000 sessions and a
//! session of 5,000 executions), measured against a real `serve` assembly
//! on PostgreSQL over loopback HTTP, as the browser's script fetches it.
//!
//! ```text
//! cargo build --release -p nomos-continue --features test-support --example console_bench
//! target/release/examples/console_bench [--sessions 10000] [--executions 5000] \
//!     [--running 10000] [--text-chars 0] [--samples 20] [--hold-secs 0] \
//!     [--database-url postgres://postgres@127.0.0.1:5432/postgres]
//! ```
//!
//! A database `nomos_bench_console` is dropped and created. It is filled
//! with `--sessions` sessions of settled history (a window, a link, a
//! delivered continuation each) and one session with `--executions`
//! executions, each linked, failed, decided, continued and settled; and
//! `--running` (10,000) executions still running, ten to a session, in the
//! newest sessions. `--text-chars` makes each of the busy session's
//! results, decision inputs and notes that long (a line by default), to
//! show what reading them cut saves. Then `VACUUM ANALYZE`, as autovacuum
//! would leave it. Each view is fetched
//! `--samples` times after one warm-up; the table gives the median and the
//! slowest, and the size of the HTML. With `--hold-secs`, it then keeps
//! serving that long and says where, so that the page itself can be timed
//! in a browser on the same data.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use chrono::Utc;
use nomos_continue::server::{ServeConfig, Server};
use nomos_continue::store::{testing as bench, Database, Judged, Store};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

const TOKEN: &str = "console-bench";

struct Args {
    sessions: i64,
    executions: i64,
    running: usize,
    text_chars: i64,
    samples: usize,
    hold_secs: u64,
    url: String,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        sessions: 10_000,
        executions: 5_000,
        running: 10_000,
        text_chars: 0,
        samples: 20,
        hold_secs: 0,
        url: std::env::var("NOMOS_BENCH_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into()),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--sessions" => args.sessions = value.parse()?,
            "--executions" => args.executions = value.parse()?,
            "--running" => args.running = value.parse()?,
            "--text-chars" => args.text_chars = value.parse()?,
            "--samples" => args.samples = value.parse::<usize>()?.max(1),
            "--hold-secs" => args.hold_secs = value.parse()?,
            "--database-url" => args.url = value,
            other => bail!("unknown option {other}"),
        }
    }
    Ok(args)
}

/// Fetches `path` `samples` times after a warm-up; the median, the slowest
/// and the body's size.
async fn measure(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    samples: usize,
) -> Result<(Duration, Duration, usize)> {
    let mut times = Vec::with_capacity(samples);
    let mut size = 0;
    for i in 0..=samples {
        let started = Instant::now();
        let response = client
            .get(format!("{base}{path}"))
            .bearer_auth(TOKEN)
            .send()
            .await?;
        let status = response.status();
        let body = response.text().await?;
        let took = started.elapsed();
        if !status.is_success() {
            bail!("{path}: {status} {body}");
        }
        size = body.len();
        if i > 0 {
            times.push(took);
        }
    }
    times.sort();
    Ok((times[times.len() / 2], times[times.len() - 1], size))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = parse_args()?;
    let url = bench::recreate_database(&args.url, "nomos_bench_console").await?;
    let store = Store::connect(&url).await?;
    store.migrate().await?;
    let now = Utc::now();
    let filled = Instant::now();
    bench::fill_session_history(&store, args.sessions, now).await?;
    let busy = Uuid::new_v4();
    bench::fill_busy_session(&store, busy, args.executions, args.text_chars, now).await?;
    // Work in flight, as a runtime has it: executions still running, ten
    // to a session, in the newest sessions (so the first page shows them).
    let running: Vec<(Uuid, Uuid)> = (0..args.running)
        .map(|i| (Uuid::from_u128(i as u128 / 10 + 1), Uuid::new_v4()))
        .collect();
    for chunk in running.chunks(1_000) {
        bench::add_executions(&store, chunk, "running", "", None, now).await?;
    }
    bench::vacuum_analyze(&store).await?;
    println!(
        "filled {} sessions of history, one of {} executions and {} running executions \
         in {} more sessions in {:.1?}",
        args.sessions,
        args.executions,
        args.running,
        args.running.div_ceil(10),
        filled.elapsed()
    );

    let config = ServeConfig::default()
        .with_database_urls(vec![url])
        .with_token(Some(TOKEN.into()));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let shutdown = CancellationToken::new();
    let running = Server::new(config, Database::over(store.clone()))
        .start(listener, shutdown.clone())
        .await?;
    let base = format!("http://{}", running.addr().expect("served over HTTP"));
    let client = reqwest::Client::new();

    // A session and an execution to search for, and a later page of the
    // busy session's timeline (after its first 500 links: a keyset page
    // costs the same at any depth, which this shows).
    let some_session = store
        .sessions_page(
            Default::default(),
            None,
            None,
            1,
            Judged::at(now, nomos_continue::maintenance::DEFAULT_STUCK_AFTER),
        )
        .await?
        .items
        .first()
        .map(|r| r.session_id)
        .context("a session")?;
    let some_execution = store
        .session_links(busy, None, 1)
        .await?
        .items
        .first()
        .map(|l| l.execution_id)
        .context("a link")?;
    let later = store
        .session_links(busy, None, 500)
        .await?
        .next
        .map(|c| c.to_string())
        .unwrap_or_default();
    let views: Vec<(&str, String)> = vec![
        ("sessions, first page", "/ui/fragments/sessions".into()),
        (
            "sessions, filter open",
            "/ui/fragments/sessions?filter=open".into(),
        ),
        (
            "sessions, filter failed (none match)",
            "/ui/fragments/sessions?filter=failed".into(),
        ),
        (
            "sessions, filter in-flight",
            "/ui/fragments/sessions?filter=in-flight".into(),
        ),
        (
            "sessions, status stuck (none match)",
            "/ui/fragments/sessions?status=stuck".into(),
        ),
        (
            "sessions, status execution-failed",
            "/ui/fragments/sessions?status=execution-failed".into(),
        ),
        (
            "sessions, status ok",
            "/ui/fragments/sessions?status=ok".into(),
        ),
        ("GET /v1/overview", "/v1/overview".into()),
        (
            "GET /v1/sessions?status=dropped (none match)",
            "/v1/sessions?status=dropped".into(),
        ),
        (
            "sessions, search by session id",
            format!("/ui/fragments/sessions?q={some_session}"),
        ),
        (
            "sessions, search by execution id",
            format!("/ui/fragments/sessions?q={some_execution}"),
        ),
        (
            "timeline, busy session, first page",
            format!("/ui/fragments/sessions/{busy}"),
        ),
        (
            "timeline, busy session, after 500 links",
            format!("/ui/fragments/sessions/{busy}?links={later}"),
        ),
        (
            "timeline, a small session",
            format!("/ui/fragments/sessions/{some_session}"),
        ),
        ("policy", "/ui/fragments/policy".into()),
        ("playground", "/ui/fragments/playground".into()),
        ("page itself (/ui)", "/ui".into()),
    ];
    println!("| view | median | slowest | HTML |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, path) in &views {
        let (median, slowest, size) = measure(&client, &base, path, args.samples).await?;
        println!(
            "| {name} | {:.1} ms | {:.1} ms | {:.1} KiB |",
            median.as_secs_f64() * 1e3,
            slowest.as_secs_f64() * 1e3,
            size as f64 / 1024.0
        );
    }
    if args.hold_secs > 0 {
        println!(
            "serving {base}/ui for {} s with the token {TOKEN}; the busy session is {busy}",
            args.hold_secs
        );
        tokio::time::sleep(Duration::from_secs(args.hold_secs)).await;
    }
    shutdown.cancel();
    running.wait().await?;
    Ok(())
}
