//! What a revision costs once it has been seen: it compiles once however
//! often it is checked or activated, and the kept compiled revisions are
//! bounded.

use nomos_continue::policy::{Limits, PolicyError, PolicyRuntime, BUILTIN_POLICY_WASM};
use nomos_continue_tests::policies::variant;

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
    let limits = Limits {
        compiled_revisions_kept: 2,
        ..Limits::default()
    };
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
