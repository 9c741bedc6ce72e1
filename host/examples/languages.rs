//! The same policy in several languages, side by side, in one run (the
//! built-in Rust policy first, then each NAME=PATH given): size,
//! compile, a fresh sandbox, an amortised decision, a batch of 100, and a
//! hot swap (BENCHMARKS.md, "Policies in other languages").
//!
//! ```text
//! cargo run --release -p nomos-continue --features test-support --example languages -- \
//!     python=guest/python/policy.wasm js=guest/js/policy.wasm
//! ```
//!
//! A swap is `activate` (compile or load, vet, swap): see [`swaps`].

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nomos_continue::policy::{Limits, PolicyRuntime, Profile, BUILTIN_POLICY_WASM};

fn main() -> Result<()> {
    let builtin = ("rust".to_owned(), BUILTIN_POLICY_WASM.to_vec());
    let given: Vec<(String, Vec<u8>)> = std::env::args()
        .skip(1)
        .map(|arg| {
            let (name, path) = arg.split_once('=').context("arguments are NAME=PATH")?;
            let bytes = std::fs::read(path).with_context(|| format!("read {path}"))?;
            Ok((name.to_owned(), bytes))
        })
        .collect::<Result<_>>()?;
    if given.is_empty() {
        bail!("usage: languages NAME=POLICY.wasm…");
    }
    let policies = std::iter::once(builtin).chain(given);
    println!("| | size | compile | fresh sandbox | decision, amortised | decision, fresh sandbox | batch of 100 | swap, new | swap, kept | swap, compile cache |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (name, bytes) in policies {
        let bytes = &bytes;
        let started = Instant::now();
        let runtime = PolicyRuntime::unvetted(Limits::default(), bytes)
            .with_context(|| format!("compile {name}"))?;
        let compile = started.elapsed();
        let profile = Profile::measure(&runtime).with_context(|| format!("measure {name}"))?;
        let (new, kept, cached) = swaps(bytes).with_context(|| format!("swap {name}"))?;
        println!(
            "| {name} | {:.1} MB | {} | {} | {} | {} | {} | {} | {} | {} |",
            bytes.len() as f64 / 1e6,
            show(compile),
            show(profile.instantiate),
            show(profile.amortised),
            show(profile.decide_one),
            show(profile.decide_batch),
            show(new),
            show(kept),
            show(cached),
        );
    }
    Ok(())
}

/// Three swaps to `bytes`: never seen (a compile, written to an empty
/// compile cache), again after a swap back (kept in memory), and on a new
/// runtime over that cache (another replica, or `serve` after `policy
/// check`: machine code loaded from disk). Each runtime starts on the
/// built-in policy tagged with a custom section (a revision of its own), so
/// the built-in is a new revision too.
fn swaps(bytes: &[u8]) -> Result<(Duration, Duration, Duration)> {
    let mut before = BUILTIN_POLICY_WASM.to_vec();
    // A custom section (id 0) named "before", with no payload.
    before.extend_from_slice(&[0, 7, 6]);
    before.extend_from_slice(b"before");
    let cache = tempfile::tempdir()?;
    let limits = Limits::default().with_compile_cache(Some(cache.path().to_path_buf()));
    let timed = |runtime: &PolicyRuntime| -> Result<Duration> {
        let started = Instant::now();
        runtime.activate(bytes)?;
        Ok(started.elapsed())
    };
    let runtime = PolicyRuntime::with_policy(limits.clone(), &before)?;
    let new = timed(&runtime)?;
    runtime.activate(&before)?;
    let kept = timed(&runtime)?;
    let replica = PolicyRuntime::with_policy(limits, &before)?;
    let cached = timed(&replica)?;
    Ok((new, kept, cached))
}

fn show(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}
