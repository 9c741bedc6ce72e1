//! The host's policy runtime against policies that misbehave on purpose
//! (`tests/hostile-guest/`, built by `tests/build.rs`): every failure mode
//! ends in a typed failure or refusal, never a crash, a hang or a bad answer
//! acted upon; a policy that keeps failing is replaced by the last good one;
//! swaps under load lose no decision. Where the running policy comes from
//! (a watched file, uploads, the database) is in `policy_runtime/sources.rs`.
//!
//! Compiling a component is the slow part in a debug build, so tests that
//! only read share one runtime per policy; tests that swap get their own.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock};

use nomos_continue::policy::types as t;
use nomos_continue::policy::{
    Limits, PolicyError, PolicyFailure, PolicyRuntime, Revision, BUILTIN_POLICY_WASM,
    DEFAULT_FALLBACK_AFTER, POLICY_EXPORT,
};

mod contracts;
mod revisions;
mod signatures;
mod sources;

const EXECUTION: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

fn wasm(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {path} (built by tests/build.rs): {e}"))
}

fn hostile_bytes() -> Vec<u8> {
    wasm(env!("HOSTILE_WASM"))
}

/// The hostile policy, active from the start. It has no earlier revision to
/// fall back to, so its failures never change what is active and the
/// failure-mode tests can share it.
fn hostile() -> &'static PolicyRuntime {
    static RUNTIME: OnceLock<PolicyRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        PolicyRuntime::with_policy(Limits::default(), &hostile_bytes())
            .expect("the hostile policy passes vetting")
    })
}

/// The default policy, for tests whose activations are all refused.
fn default_runtime() -> &'static PolicyRuntime {
    static RUNTIME: OnceLock<PolicyRuntime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| PolicyRuntime::new(Limits::default()).expect("the built-in policy loads"))
}

fn at(seconds: i64) -> t::Timestamp {
    t::Timestamp {
        seconds,
        nanoseconds: 0,
    }
}

/// A finished execution in an open window; `status` doubles as the
/// hostile policy's trigger.
fn input(status: &str) -> t::DecisionInput {
    t::DecisionInput {
        now: at(1_500),
        execution: t::Execution {
            id: EXECUTION.into(),
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
                route: t::ApprovalRoute::Chat,
            }),
            continuations_in_window: 0,
            still_running: Vec::new(),
        },
        attempts: 0,
    }
}

/// The answer to an ordinary failed execution must be a real note.
fn assert_continues(decisions: &[t::Decision]) {
    match decisions {
        [t::Decision::Continue { note }] => {
            assert!(
                note.starts_with(&format!("execution {EXECUTION} failed")),
                "{note}"
            )
        }
        other => panic!("expected one continuation, got {other:?}"),
    }
}

fn execution_link(id: &str) -> t::LinkRef {
    t::LinkRef::Execution(id.into())
}

fn failure<T: std::fmt::Debug>(value: Result<T, PolicyFailure>) -> PolicyFailure {
    match value {
        Ok(v) => panic!("expected a policy failure, got {v:?}"),
        Err(f) => f,
    }
}

#[test]
fn an_infinite_loop_times_out_and_the_next_call_still_works() {
    let runtime = hostile();
    let deadline = runtime.limits().deadline.as_millis();
    let looped = runtime.extract_links("loop");
    assert_eq!(looped.value, Err(PolicyFailure::Timeout(deadline)));
    assert_eq!(
        looped.revision,
        Revision::of(&hostile_bytes()),
        "a failure names its revision too"
    );
    let looped = runtime.decide_batch(&[input("failed"), input("loop")]);
    assert_eq!(looped.value, Err(PolicyFailure::Timeout(deadline)));

    let next = runtime.extract_links(&format!("running, execution {EXECUTION}"));
    assert_eq!(next.value, Ok(vec![execution_link(EXECUTION)]));
    assert_continues(
        &runtime
            .decide_batch(&[input("failed")])
            .value
            .expect("a good input after a timeout"),
    );
    assert!(
        runtime
            .stats()
            .failures
            .get("timeout")
            .copied()
            .unwrap_or(0)
            >= 2
    );
}

#[test]
fn a_memory_bomb_exhausts_its_cap() {
    let runtime = hostile();
    let cap = runtime.limits().max_memory_bytes;
    assert_eq!(
        runtime.extract_links("oom").value,
        Err(PolicyFailure::MemoryExhausted(cap))
    );
    assert_eq!(
        runtime.decide_batch(&[input("oom")]).value,
        Err(PolicyFailure::MemoryExhausted(cap))
    );
    // The next sandbox starts with fresh memory.
    assert_continues(
        &runtime
            .decide_batch(&[input("failed")])
            .value
            .expect("a good input after a memory bomb"),
    );
}

#[test]
fn a_panic_is_a_trap() {
    let runtime = hostile();
    let trapped = failure(runtime.extract_links("trap").value);
    assert!(matches!(trapped, PolicyFailure::Trap(_)), "{trapped:?}");
    let trapped = failure(runtime.decide_batch(&[input("trap")]).value);
    match &trapped {
        PolicyFailure::Trap(message) => {
            assert!(
                message.starts_with(
                    "wasm trap: wasm `unreachable` instruction executed in nomos:continuation/policy@0.2.0#decide-batch; the policy wrote: "
                ),
                "the export first, then what the guest said: {message}"
            );
            assert!(
                message.contains("hostile: trap requested") && !message.contains('\n'),
                "the guest's own panic message, on one line: {message}"
            );
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert!(trapped.is_policy_fault());
}

#[test]
fn malformed_answers_are_refused() {
    let runtime = hostile();
    let cases = [
        (
            "huge",
            failure(runtime.extract_links("huge").value),
            "10000 ids returned (limit 64)",
        ),
        (
            "bad-id",
            failure(runtime.extract_links("bad-id").value),
            "\"not-a-uuid\" is not a canonical lowercase UUID",
        ),
        (
            "empty-task",
            failure(runtime.extract_links("empty-task").value),
            "an empty task id",
        ),
        (
            "long-task",
            failure(runtime.extract_links("long-task").value),
            &format!("task id {:?}… of 1025 bytes (limit 1024)", "t".repeat(64)),
        ),
        (
            "empty-note",
            failure(runtime.decide_batch(&[input("empty-note")]).value),
            "empty note",
        ),
        (
            "huge-note",
            failure(
                runtime
                    .decide_batch(&[input("failed"), input("huge-note")])
                    .value,
            ),
            "note of 65537 bytes (limit 65536)",
        ),
    ];
    for (trigger, got, detail) in cases {
        assert_eq!(got, PolicyFailure::Malformed(detail.into()), "{trigger}");
    }
}

#[test]
fn the_sandbox_grants_no_environment_files_network_stdin_or_clock() {
    // The hostile policy encodes what it could reach as one id (see
    // `probe_env` in tests/hostile-guest/src/bin/hostile.rs): environment
    // variables, arguments, file and network flags, stdin bytes and the
    // wall clock, all zero in a sandbox that grants nothing. Under
    // `wasmtime run` the same call reports one argument and today's time.
    let probed = hostile().extract_links("probe-env");
    assert_eq!(
        probed.value,
        Ok(vec![execution_link("00000000-0000-4000-8000-000000000000")])
    );
}

#[test]
fn every_decision_carries_the_revision_hash() {
    let revision = Revision::of(&hostile_bytes());
    let runtime = hostile();
    assert_eq!(runtime.active_revision(), revision);
    assert_eq!(revision.0.len(), 64, "a sha256 in hex");
    assert_eq!(runtime.decide_batch(&[input("failed")]).revision, revision);
    assert_eq!(runtime.decide_batch(&[input("trap")]).revision, revision);
    assert_eq!(runtime.classify("failed").revision, revision);
    let builtin = default_runtime().decide_batch(&[input("failed")]);
    assert_eq!(builtin.revision, Revision::of(BUILTIN_POLICY_WASM));
    assert_continues(&builtin.value.expect("the default policy decides"));
}

fn invalid_message(result: Result<(Revision, t::PolicyInfo), PolicyError>) -> String {
    match result {
        Err(PolicyError::Invalid(message)) => message,
        other => panic!("expected PolicyError::Invalid, got {other:?}"),
    }
}

#[test]
fn a_component_of_another_world_is_invalid_and_the_missing_export_is_named() {
    let message = invalid_message(default_runtime().check(&wasm(env!("OTHER_WORLD_WASM"))));
    assert!(
        message.contains(&format!("does not export {POLICY_EXPORT}")),
        "{message}"
    );
    assert!(
        message.contains("acme:other/thing@0.1.0"),
        "names what it exports instead: {message}"
    );
}

#[test]
fn a_policy_for_another_contract_version_is_invalid_and_the_version_is_named() {
    let message = invalid_message(default_runtime().check(&wasm(env!("WRONG_VERSION_WASM"))));
    assert!(message.contains(POLICY_EXPORT), "{message}");
    assert!(
        message.contains("nomos:continuation/policy@1.0.0"),
        "names the version it found: {message}"
    );
}

#[test]
fn bytes_that_are_not_a_component_are_invalid() {
    let message = invalid_message(default_runtime().check(b"\0asm not really"));
    assert!(
        message.contains("not a loadable WebAssembly component"),
        "{message}"
    );
}

#[test]
fn a_broken_candidate_is_rejected_with_reasons_and_the_active_revision_stays() {
    let runtime = default_runtime();
    let before = runtime.active_revision();
    let rejected_before = runtime.stats().rejected_candidates;
    let reasons = match runtime.activate(&wasm(env!("BROKEN_WASM"))) {
        Err(PolicyError::Rejected(reasons)) => reasons,
        other => panic!("expected a rejection, got {other:?}"),
    };
    for export in [
        "describe()",
        "soul()",
        "extract-links(probe)",
        "classify(\"failed\")",
        "decide-batch(probe)",
    ] {
        assert!(
            reasons
                .iter()
                .any(|r| r.starts_with(export) && r.contains("policy trapped")),
            "no trap reported for {export}: {reasons:#?}"
        );
    }
    assert_eq!(runtime.active_revision(), before);
    assert_eq!(before, Revision::of(BUILTIN_POLICY_WASM));
    assert!(runtime.stats().rejected_candidates > rejected_before);
    assert_continues(
        &runtime
            .decide_batch(&[input("failed")])
            .value
            .expect("the active policy still answers"),
    );
}

/// The console's playground asks the active revision as a trial: however
/// often it traps there, nothing is counted and nothing falls back, so a
/// runtime token pasting inputs cannot take the policy out of service.
#[test]
fn trials_never_count_toward_a_fall_back() {
    let runtime = PolicyRuntime::new(Limits::default()).expect("the built-in policy loads");
    let bad = runtime
        .activate(&hostile_bytes())
        .expect("the hostile policy passes vetting");
    let before = runtime.stats();
    for _ in 0..DEFAULT_FALLBACK_AFTER * 2 {
        let answer = runtime.trial_decide(&[input("trap")]);
        assert_eq!(answer.revision, bad);
        assert!(matches!(answer.value, Err(PolicyFailure::Trap(_))));
    }
    let extracted = runtime.trial_extract_links(&format!("running, execution {EXECUTION}"));
    assert_eq!(extracted.value, Ok(vec![execution_link(EXECUTION)]));
    assert_eq!(runtime.active_revision(), bad, "a trial made it fall back");
    assert_eq!(runtime.stats(), before, "a trial was counted");
    // A live call still counts: the trials left the count of faults at 0.
    for _ in 1..DEFAULT_FALLBACK_AFTER {
        let _ = runtime.decide_batch(&[input("trap")]);
    }
    assert_eq!(runtime.active_revision(), bad);
}

#[test]
fn consecutive_faults_fall_back_to_the_previous_revision_and_quarantine_the_bad_one() {
    let runtime = PolicyRuntime::new(Limits::default()).expect("the built-in policy loads");
    let good = runtime.active_revision();
    let bad = runtime
        .activate(&hostile_bytes())
        .expect("the hostile policy passes vetting");
    assert_ne!(good, bad);

    // Faults must be consecutive: a good answer in between resets the count.
    for _ in 1..DEFAULT_FALLBACK_AFTER {
        assert!(matches!(
            runtime.decide_batch(&[input("trap")]).value,
            Err(PolicyFailure::Trap(_))
        ));
    }
    assert_continues(
        &runtime
            .decide_batch(&[input("failed")])
            .value
            .expect("the hostile policy on good input"),
    );
    for _ in 1..DEFAULT_FALLBACK_AFTER {
        let answer = runtime.decide_batch(&[input("trap")]);
        assert_eq!(answer.revision, bad);
        assert!(matches!(answer.value, Err(PolicyFailure::Trap(_))));
    }
    assert_eq!(
        runtime.active_revision(),
        bad,
        "one fault short of the limit"
    );
    assert_eq!(runtime.stats().fallbacks, 0);

    let last = runtime.decide_batch(&[input("trap")]);
    assert_eq!(
        last.revision, bad,
        "the failing call is reported on the revision it ran on"
    );
    assert_eq!(
        runtime.active_revision(),
        good,
        "fell back after {DEFAULT_FALLBACK_AFTER} consecutive faults"
    );
    assert_eq!(runtime.stats().fallbacks, 1);
    assert!(runtime.is_quarantined(&bad));

    // The default policy reads "trap" as an unknown, non-terminal status.
    let after = runtime.decide_batch(&[input("trap")]);
    assert_eq!(after.revision, good);
    assert_eq!(after.value, Ok(vec![t::Decision::Wait]));

    match runtime.activate(&hostile_bytes()) {
        Err(PolicyError::Rejected(reasons)) => {
            assert!(
                reasons.iter().any(|r| r.contains("taken out of service")),
                "{reasons:?}"
            )
        }
        other => panic!("a quarantined revision must not come back, got {other:?}"),
    }
    assert_eq!(runtime.active_revision(), good);
}

#[test]
fn a_swap_under_load_loses_no_decision() {
    const CALLERS: usize = 2;
    const SWAPS: usize = 4;
    let runtime =
        Arc::new(PolicyRuntime::new(Limits::default()).expect("the built-in policy loads"));
    let builtin = Revision::of(BUILTIN_POLICY_WASM);
    let hostile = hostile_bytes();
    let expected: BTreeSet<Revision> = [builtin.clone(), Revision::of(&hostile)].into();

    let start = Barrier::new(CALLERS + 1);
    let stop = AtomicBool::new(false);
    let calls = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let seen = Mutex::new(Vec::<Revision>::new());
    std::thread::scope(|scope| {
        for _ in 0..CALLERS {
            scope.spawn(|| {
                let batch = [input("failed"), input("running")];
                let mut mine = Vec::new();
                start.wait();
                while !stop.load(Ordering::Acquire) {
                    let answer = runtime.decide_batch(&batch);
                    match &answer.value {
                        Ok(decisions) if decisions.len() == batch.len() => {}
                        other => {
                            eprintln!("failed decision on {}: {other:?}", answer.revision.short());
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    mine.push(answer.revision);
                    calls.fetch_add(1, Ordering::Release);
                }
                seen.lock().expect("no caller panicked").extend(mine);
            });
        }
        start.wait();
        for swap in 0..SWAPS {
            let bytes: &[u8] = if swap % 2 == 0 {
                &hostile
            } else {
                BUILTIN_POLICY_WASM
            };
            let revision = runtime.activate(bytes).expect("both policies are valid");
            assert_eq!(runtime.active_revision(), revision);
            // Let the callers answer a few batches on this revision (a count,
            // not a clock) before the next swap.
            let target = calls.load(Ordering::Acquire) + 2 * CALLERS as u64;
            while calls.load(Ordering::Acquire) < target {
                std::thread::yield_now();
            }
        }
        stop.store(true, Ordering::Release);
    });

    let seen = seen.into_inner().expect("no caller panicked");
    assert_eq!(
        failed.load(Ordering::Relaxed),
        0,
        "failed decisions during swaps"
    );
    assert_eq!(seen.len() as u64, calls.load(Ordering::Relaxed));
    let distinct: BTreeSet<Revision> = seen.into_iter().collect();
    assert_eq!(
        distinct, expected,
        "every answer carries one of the two revisions, and both answered"
    );
    assert_eq!(runtime.stats().swaps, SWAPS as u64);
    assert_eq!(runtime.active_revision(), builtin);
}
