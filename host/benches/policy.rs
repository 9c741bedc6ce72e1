//! The cost of a policy decision in the sandbox (a fresh instance per call,
//! per batch of 100, and amortised on a live instance), the instantiation
//! alone, and the wall time of activating a revision: one never seen
//! before (compiled) and one compiled before (kept).
//!
//! `cargo bench -p nomos-continue --features test-support --bench policy -- --warm-up-time 1 --measurement-time 3`
//! (figures in BENCHMARKS.md). The same logic as a native call, which these
//! are compared with, is measured where the guest crate is a dependency:
//! `cargo bench -p nomos-continue-tests --bench native_decide` (the host
//! links no policy crate). Failed decisions during a swap under load are
//! measured by `examples/swap_under_load.rs`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use nomos_continue::policy::types as t;
use nomos_continue::policy::{Limits, PolicyRuntime, BUILTIN_POLICY_WASM};

/// A failed execution in an open window: the default policy continues it
/// with a note, its most expensive common path.
fn input() -> t::DecisionInput {
    let at = |seconds| t::Timestamp {
        seconds,
        nanoseconds: 0,
    };
    t::DecisionInput {
        now: at(1_500),
        execution: t::Execution {
            id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
            status: "failed".into(),
            result: "ssh: connection refused\nretrying in 5s\nssh: connection refused".into(),
            finished_at: Some(at(1_499)),
            task: None,
        },
        session: t::Session {
            id: "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d".into(),
            window: Some(t::Window {
                opened_at: at(1_000),
                expires_at: at(2_800),
                route: t::ApprovalRoute::Button,
            }),
            continuations_in_window: 2,
            still_running: vec!["00000000-0000-4000-8000-000000000001".into()],
        },
        attempts: 0,
    }
}

fn runtime() -> PolicyRuntime {
    PolicyRuntime::new(Limits::default()).expect("the built-in policy loads")
}

fn decisions(c: &mut Criterion) {
    let runtime = runtime();
    let one = input();
    let hundred = vec![one.clone(); 100];
    assert!(
        runtime
            .decide_batch(std::slice::from_ref(&one))
            .value
            .is_ok(),
        "the policy decides"
    );

    let mut group = c.benchmark_group("decision");
    group.bench_function("guest_live_instance", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            runtime
                .bench_live_calls(iters, black_box(&one))
                .expect("live calls");
            start.elapsed()
        })
    });
    group.bench_function("guest_fresh_instance_batch_of_1", |b| {
        b.iter(|| {
            runtime
                .decide_batch(black_box(std::slice::from_ref(&one)))
                .value
                .expect("decides")
        })
    });
    group.throughput(Throughput::Elements(100));
    group.bench_function("guest_fresh_instance_batch_of_100", |b| {
        b.iter(|| {
            runtime
                .decide_batch(black_box(&hundred))
                .value
                .expect("decides")
        })
    });
    group.finish();
}

fn instantiation(c: &mut Criterion) {
    let runtime = runtime();
    c.bench_function("instantiate_fresh_sandbox", |b| {
        b.iter(|| runtime.bench_instantiate().expect("instantiates"))
    });
}

/// The built-in bytes with a custom section carrying `tag` appended: a new
/// revision (another hash) with the same behaviour.
fn tagged(tag: u32) -> Vec<u8> {
    let mut bytes = BUILTIN_POLICY_WASM.to_vec();
    bytes.extend_from_slice(&[0, 9, 4, b'b', b'e', b'n', b'c']);
    bytes.extend_from_slice(&tag.to_le_bytes());
    bytes
}

fn swap(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group("swap");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    // A revision never seen before: compile, type-check, probes, swap.
    let mut next = 0u32;
    group.bench_function("activate_new_revision", |b| {
        b.iter_batched(
            || {
                next += 1;
                tagged(next)
            },
            |bytes| {
                runtime
                    .activate(&bytes)
                    .expect("a valid revision activates")
            },
            BatchSize::PerIteration,
        )
    });
    // Two revisions in turn, both compiled before: probes and swap only.
    let other = tagged(0);
    let mut flip = false;
    group.bench_function("activate_kept_revision", |b| {
        b.iter_batched(
            || {
                flip = !flip;
                if flip {
                    other.as_slice()
                } else {
                    BUILTIN_POLICY_WASM
                }
            },
            |bytes| runtime.activate(bytes).expect("a valid revision activates"),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, decisions, instantiation, swap);
criterion_main!(benches);
