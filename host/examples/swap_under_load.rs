//! Hot swap under load: caller threads decide batches in a loop while the
//! main thread activates a new revision (compile, type-check, probes, swap)
//! several times. Prints, per swap, the wall time of `activate`, the time
//! from the start of the swap until a caller first got an answer from the
//! new revision, whether the swap compiled, and the callers' decisions per
//! second while it ran (against their rate before the first swap); at the
//! end, the number of failed decisions.
//!
//! By default the swaps alternate between two revisions, so only the first
//! compiles and the others find their revision compiled (what a rollback or
//! a swap back does). With `fresh`, every swap is a revision never seen
//! before, so every swap compiles under load.
//!
//! `cargo run --release -p nomos-continue --features test-support --example swap_under_load [SWAPS] [CALLERS] [fresh]`

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nomos_continue::policy::types as t;
use nomos_continue::policy::{Limits, PolicyRuntime, Revision, BUILTIN_POLICY_WASM};

fn input(status: &str) -> t::DecisionInput {
    let at = |seconds| t::Timestamp {
        seconds,
        nanoseconds: 0,
    };
    t::DecisionInput {
        now: at(1_500),
        execution: t::Execution {
            id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
            status: status.into(),
            result: "ssh: connection refused".into(),
            finished_at: Some(at(1_499)),
            task: None,
        },
        session: t::Session {
            id: "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d".into(),
            window: Some(t::Window {
                opened_at: at(1_000),
                expires_at: at(2_800),
                route: t::ApprovalRoute::Api,
            }),
            continuations_in_window: 0,
            still_running: Vec::new(),
        },
        attempts: 0,
    }
}

/// The first moment a caller saw `revision` answer.
struct FirstSeen {
    revision: Revision,
    at: Option<Instant>,
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let swaps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(6);
    let callers: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(2);
    let fresh = args.next().is_some_and(|a| a == "fresh");

    let runtime = Arc::new(PolicyRuntime::new(Limits::default())?);
    // Valid revisions: the built-in bytes, and the same bytes with a custom
    // section appended (a new hash, the same behaviour).
    let revision_for = |swap: usize| -> Vec<u8> {
        let tag = if fresh { swap + 1 } else { (swap + 1) % 2 };
        let mut bytes = BUILTIN_POLICY_WASM.to_vec();
        if tag > 0 {
            let tag = u8::try_from(tag % 256).unwrap_or(0);
            bytes.extend_from_slice(&[0, 6, 4, b'l', b'o', b'a', b'd', tag]);
        }
        bytes
    };

    let stop = Arc::new(AtomicBool::new(false));
    let decided = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let watch = Arc::new(Mutex::new(FirstSeen {
        revision: runtime.active_revision(),
        at: None,
    }));
    let batch: Vec<t::DecisionInput> = (0..10)
        .map(|i| input(if i % 2 == 0 { "failed" } else { "running" }))
        .collect();
    let threads: Vec<_> = (0..callers)
        .map(|_| {
            let (runtime, stop, decided, failed, watch, batch) = (
                runtime.clone(),
                stop.clone(),
                decided.clone(),
                failed.clone(),
                watch.clone(),
                batch.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let answer = runtime.decide_batch(&batch);
                    match answer.value {
                        Ok(d) => decided.fetch_add(d.len() as u64, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("failed decision: {e}");
                            failed.fetch_add(batch.len() as u64, Ordering::Relaxed)
                        }
                    };
                    if let Ok(mut seen) = watch.lock() {
                        if seen.at.is_none() && answer.revision == seen.revision {
                            seen.at = Some(Instant::now());
                        }
                    }
                }
            })
        })
        .collect();

    let before = decided.load(Ordering::Relaxed);
    let quiet = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    let idle_rate = per_second(decided.load(Ordering::Relaxed) - before, quiet.elapsed());
    println!("callers' decisions/s before the swaps: {idle_rate:.0}");
    println!("swap  activate_ms  live_after_ms  compiled  decisions/s_during  decisions_so_far");
    for swap in 0..swaps {
        let bytes = revision_for(swap);
        let revision = Revision::of(&bytes);
        let compiles = runtime.stats().compiles;
        let decided_before = decided.load(Ordering::Relaxed);
        if let Ok(mut seen) = watch.lock() {
            *seen = FirstSeen {
                revision: revision.clone(),
                at: None,
            };
        }
        let start = Instant::now();
        runtime.activate(&bytes)?;
        let activated = start.elapsed();
        let during = per_second(decided.load(Ordering::Relaxed) - decided_before, activated);
        let compiled = runtime.stats().compiles > compiles;
        let live = loop {
            if let Some(at) = watch.lock().ok().and_then(|s| s.at) {
                break at.duration_since(start);
            }
            std::thread::yield_now();
        };
        println!(
            "{swap:>4}  {:>11.1}  {:>13.1}  {:>8}  {during:>18.0}  {:>16}",
            activated.as_secs_f64() * 1e3,
            live.as_secs_f64() * 1e3,
            if compiled { "yes" } else { "no" },
            decided.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().map_err(|_| anyhow::anyhow!("a caller panicked"))?;
    }
    println!(
        "callers {callers}, swaps {swaps}, decisions {}, failed decisions {}",
        decided.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed)
    );
    Ok(())
}

/// A count over a duration, per second.
fn per_second(count: u64, over: Duration) -> f64 {
    count as f64 / over.as_secs_f64().max(1e-9)
}
