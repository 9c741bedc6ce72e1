//! The default policy's decision as a native call, with no sandbox: the
//! baseline the sandboxed figures of `host/benches/policy.rs` are compared
//! with (BENCHMARKS.md). It lives here because it needs the guest crate's
//! own Rust API, which the host does not link.
//!
//! `cargo bench -p nomos-continue-tests --bench native_decide -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use nomos_policy_default::{cli, decide};

/// The input of `host/benches/policy.rs`, in its JSON form: a failed
/// execution in an open window, which the policy continues with a note.
const INPUT: &str = r#"{
    "now": "1970-01-01T00:25:00Z",
    "execution": {
        "id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "status": "failed",
        "result": "ssh: connection refused\nretrying in 5s\nssh: connection refused",
        "finished_at": "1970-01-01T00:24:59Z"
    },
    "session": {
        "id": "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d",
        "window": {
            "opened_at": "1970-01-01T00:16:40Z",
            "expires_at": "1970-01-01T00:46:40Z",
            "route": "button"
        },
        "continuations_in_window": 2,
        "still_running": ["00000000-0000-4000-8000-000000000001"]
    },
    "attempts": 0
}"#;

fn native(c: &mut Criterion) {
    let input = cli::parse_decision_input(INPUT).expect("the input parses");
    c.bench_function("decision/native", |b| {
        b.iter(|| decide::decide(black_box(&input)))
    });
}

criterion_group!(benches, native);
criterion_main!(benches);
