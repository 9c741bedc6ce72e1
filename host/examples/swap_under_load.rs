//! Hot swap under load: caller threads decide batches in a loop while the
//! main thread activates a new revision (compile, type-check, probes, swap)
//! several times. Prints, per swap, the wall time of `activate`, the time
//! from the start of the swap until a caller first got an answer from the
//! new revision, and at the end the number of failed decisions.
//!
//! `cargo run --release -p nomos-continue --example swap_under_load [SWAPS] [CALLERS]`

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

    let runtime = Arc::new(PolicyRuntime::new(Limits::default())?);
    // Two valid revisions: the built-in bytes, and the same bytes with a
    // custom section appended (a new hash, the same behaviour).
    let mut other = BUILTIN_POLICY_WASM.to_vec();
    other.extend_from_slice(&[0, 5, 4, b'l', b'o', b'a', b'd']);
    let revisions = [BUILTIN_POLICY_WASM.to_vec(), other];

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

    std::thread::sleep(Duration::from_millis(500));
    println!("swap  activate_ms  live_after_ms  decisions_so_far");
    for swap in 0..swaps {
        let bytes = &revisions[(swap + 1) % 2];
        let revision = Revision::of(bytes);
        if let Ok(mut seen) = watch.lock() {
            *seen = FirstSeen {
                revision: revision.clone(),
                at: None,
            };
        }
        let start = Instant::now();
        runtime.activate(bytes)?;
        let activated = start.elapsed();
        let live = loop {
            if let Some(at) = watch.lock().ok().and_then(|s| s.at) {
                break at.duration_since(start);
            }
            std::thread::yield_now();
        };
        println!(
            "{swap:>4}  {:>11.1}  {:>13.1}  {:>16}",
            activated.as_secs_f64() * 1e3,
            live.as_secs_f64() * 1e3,
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
