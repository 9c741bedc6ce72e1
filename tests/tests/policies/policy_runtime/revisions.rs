//! What a revision costs once it has been seen, and what a sandbox is made
//! of: a revision compiles once however often it is checked or activated;
//! the kept compiled revisions are bounded; every sandbox reads the same
//! randomness; a policy that needs more memory runs when the limits say so,
//! and one the pool could never hold is refused when it is compiled.

use nomos_continue::policy::{
    Limits, PolicyError, PolicyFailure, PolicyRuntime, BUILTIN_POLICY_WASM,
};
use nomos_continue_tests::policies::variant;

use super::{hostile_bytes, input};

fn builtin() -> PolicyRuntime {
    PolicyRuntime::new(Limits::default()).expect("the built-in policy loads")
}

#[test]
fn a_revision_activated_again_is_not_compiled_again() {
    let runtime = builtin();
    assert_eq!(runtime.stats().compiles, 1, "the built-in revision");
    let other = variant("compiled-once");
    for bytes in [
        &other[..],
        BUILTIN_POLICY_WASM,
        &other[..],
        BUILTIN_POLICY_WASM,
    ] {
        runtime.activate(bytes).expect("a valid revision activates");
    }
    let stats = runtime.stats();
    assert_eq!(stats.swaps, 4);
    assert_eq!(stats.compiles, 2, "each revision compiled once");
    assert_eq!(stats.compile_cache_hits, 3);
}

#[test]
fn a_checked_revision_activates_on_the_compile_of_its_check() {
    let runtime = builtin();
    let candidate = variant("checked-then-activated");
    let (checked, info) = runtime.check(&candidate).expect("the candidate passes");
    assert_eq!(info.name, "nomos-default");
    assert_eq!(runtime.stats().compiles, 2);
    let activated = runtime.activate(&candidate).expect("it activates");
    assert_eq!(activated, checked);
    assert_eq!(runtime.active_revision(), checked);
    assert_eq!(
        runtime.stats().compiles,
        2,
        "activation reused the check's compile"
    );
}

#[test]
fn kept_revisions_are_bounded_and_the_least_recent_goes_first() {
    let limits = Limits::default().with_compiled_revisions_kept(2);
    let runtime = PolicyRuntime::new(limits).expect("the built-in policy loads");
    let (a, b) = (variant("kept-a"), variant("kept-b"));
    runtime.activate(&a).expect("a activates");
    runtime.activate(&b).expect("b activates");
    assert_eq!(runtime.stats().compiles, 3);
    // Kept: a and b. The built-in revision was the least recently used.
    runtime.activate(&a).expect("a again");
    assert_eq!(runtime.stats().compiles, 3, "a was kept");
    runtime
        .activate(BUILTIN_POLICY_WASM)
        .expect("the built-in again");
    assert_eq!(runtime.stats().compiles, 4, "the built-in was dropped");
}

#[test]
fn a_rejected_candidate_is_not_activated_from_the_kept_revisions_either() {
    let runtime = builtin();
    let broken = std::fs::read(env!("BROKEN_WASM")).expect("built by tests/build.rs");
    for _ in 0..2 {
        assert!(matches!(
            runtime.activate(&broken),
            Err(PolicyError::Rejected(_))
        ));
    }
    assert_eq!(runtime.stats().compiles, 2, "compiled once, vetted twice");
    assert_eq!(runtime.stats().rejected_candidates, 2);
    assert_eq!(runtime.stats().swaps, 0);
}

#[test]
fn every_sandbox_reads_the_same_randomness() {
    // The hostile policy hashes a constant with a fresh `RandomState`,
    // whose keys come from WASI randomness, and reports the hash as an id.
    let probe = |runtime: &PolicyRuntime| {
        runtime
            .extract_links("probe-random")
            .value
            .expect("the probe answers")
    };
    let one = PolicyRuntime::with_policy(Limits::default(), &hostile_bytes())
        .expect("the hostile policy passes vetting");
    let other = PolicyRuntime::with_policy(Limits::default(), &hostile_bytes())
        .expect("the hostile policy passes vetting");
    let first = probe(&one);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(probe(&one), first, "another sandbox of the same runtime");
    assert_eq!(probe(&other), first, "a sandbox of another runtime");
}

#[test]
fn a_policy_that_needs_more_memory_runs_when_the_limits_allow_it() {
    // The hostile policy's "alloc-96mib" takes 96 MiB before answering.
    let small = PolicyRuntime::with_policy(Limits::default(), &hostile_bytes())
        .expect("the hostile policy passes vetting");
    assert!(matches!(
        small.extract_links("alloc-96mib").value,
        Err(PolicyFailure::MemoryExhausted(_))
    ));
    let large = Limits::default().with_max_memory_bytes(256 << 20);
    let large = PolicyRuntime::with_policy(large, &hostile_bytes())
        .expect("the hostile policy passes vetting");
    assert_eq!(large.extract_links("alloc-96mib").value, Ok(Vec::new()));
    assert!(large.decide_batch(&[input("failed")]).value.is_ok());
}

#[test]
fn a_policy_the_pool_cannot_hold_is_refused_when_compiled() {
    let limits = Limits::default().with_memories_per_sandbox(0);
    match PolicyRuntime::new(limits) {
        Err(PolicyError::Invalid(message)) => {
            assert!(
                message.contains("linear memories")
                    && message.contains("pooling allocator")
                    && message.contains("raise it with --policy-memories"),
                "{message}"
            )
        }
        Err(other) => panic!("expected an invalid policy, got {other}"),
        Ok(_) => panic!("a policy with a memory fits no sandbox without one"),
    }
}

/// With a compile cache, a revision compiled by one process is machine code
/// on disk for the next (another replica, `serve` after `policy check`),
/// and that code answers as the fresh compile did.
#[test]
fn a_compile_cache_keeps_a_revision_for_the_next_runtime() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits::default().with_compile_cache(Some(dir.path().to_path_buf()));
    // The compiled code's files (wasmtime also keeps usage statistics
    // beside them), each with its inode: a compile writes a new file.
    let modules = || {
        use std::os::unix::fs::MetadataExt;
        let mut found: Vec<(std::path::PathBuf, u64)> = walk(&dir.path().join("modules"))
            .into_iter()
            .filter(|p| p.is_file() && p.extension().is_none())
            .filter_map(|p| Some((p.clone(), std::fs::metadata(&p).ok()?.ino())))
            .collect();
        found.sort();
        found
    };
    assert!(modules().is_empty());
    let first = PolicyRuntime::with_policy(limits.clone(), &hostile_bytes()).expect("compile");
    let kept = modules();
    assert!(!kept.is_empty(), "the compile left nothing in the cache");
    let second = PolicyRuntime::with_policy(limits, &hostile_bytes()).expect("load");
    assert_eq!(modules(), kept, "the second runtime compiled again");
    assert_eq!(
        second.decide_batch(&[input("failed")]).value,
        first.decide_batch(&[input("failed")]).value
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}
