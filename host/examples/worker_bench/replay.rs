//! `replay`: the cost of `policy replay` on a log the worker wrote. The
//! worker continues `--sessions` finished executions (each decision is
//! logged), then the built-in policy replays the whole log, determinism
//! sample included, in a thread of its own as the command runs.

use std::time::Instant;

use nomos_continue::commands::replay::{replay as run_replay, ReplayArgs};
use nomos_continue::policy::{Limits, BUILTIN_POLICY_PATH};
use nomos_continue::store::DecisionFilter;

use crate::passes::{drain, finished_sessions};
use crate::setup::{backend, open_store_at, worker, Error};
use crate::Args;

pub async fn replay(args: &Args) -> Result<(), Error> {
    let (store, _dir, url) = open_store_at(args, "nomos_bench_replay").await?;
    finished_sessions(&store, args.sessions).await?;
    let (worker, _calls) = worker(&store, args)?;
    drain(&worker, args.sessions).await?;
    let logged = store
        .decisions(DecisionFilter::default(), i64::MAX)
        .await?
        .len();
    if logged < args.sessions {
        return Err(format!("{logged} decisions logged, not {}", args.sessions).into());
    }
    let replay = ReplayArgs {
        candidate: BUILTIN_POLICY_PATH.into(),
        since: None,
        session: None,
        database_url: vec![url],
        allow_changes: false,
        sample: 100,
        limits: Limits::default(),
    };
    let started = Instant::now();
    let status = std::thread::spawn(move || run_replay(&replay))
        .join()
        .map_err(|_| "the replay panicked")??;
    let elapsed = started.elapsed();
    if status != std::process::ExitCode::SUCCESS {
        return Err("the built-in policy did not replay its own log unchanged".into());
    }
    println!(
        "replay {}: {logged} decisions in {:.2} s = {:.0} decisions/s (built-in policy, determinism sample 100)",
        backend(args),
        elapsed.as_secs_f64(),
        logged as f64 / elapsed.as_secs_f64(),
    );
    Ok(())
}
