//! `nomos-continue policy check|test|decide|extract` through the real
//! binary: what a policy author sees, exit statuses included.
//!
//! These live in the host crate because only here does cargo build the
//! binary for the tests and hand over its path (`CARGO_BIN_EXE_…`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use nomos_continue::policy::{Revision, BUILTIN_POLICY_PATH, BUILTIN_POLICY_WASM};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden")
}

/// Runs the binary with `args`, feeding `stdin`.
fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nomos-continue"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn nomos-continue");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.to_string();
    let writer = std::thread::spawn(move || pipe.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("wait for nomos-continue");
    writer.join().expect("stdin writer").expect("write stdin");
    output
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

/// A failed command prints exactly one line on stderr and exits 2.
fn assert_one_line_error(output: &Output, needle: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr:?}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains(needle),
        "{stderr:?}"
    );
    assert!(!stderr.starts_with("error: error:"), "{stderr:?}");
}

#[test]
fn check_accepts_the_builtin_policy_and_prints_its_revision() {
    let output = run(&["policy", "check", BUILTIN_POLICY_PATH], "");
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout} {}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("revision {}", Revision::of(BUILTIN_POLICY_WASM))),
        "{stdout}"
    );
    assert!(stdout.contains("policy nomos-default "), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("ok"));
}

#[test]
fn check_refuses_bytes_that_are_not_a_policy_with_the_reason() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("garbage.wasm");
    std::fs::write(&path, b"not wasm at all").expect("write");
    let output = run(&["policy", "check", path.to_str().expect("UTF-8 path")], "");
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("refused"), "{stdout}");
    assert!(
        stdout.contains("not a loadable WebAssembly component"),
        "{stdout}"
    );
}

#[test]
fn a_missing_policy_file_is_exit_2_with_one_line() {
    for command in ["check", "test", "decide", "extract"] {
        let output = run(&["policy", command, "/nonexistent/policy.wasm"], "");
        assert_one_line_error(&output, "/nonexistent/policy.wasm");
    }
}

#[test]
fn test_passes_every_golden_case_of_the_builtin_policy() {
    let dir = golden_dir();
    let output = run(
        &[
            "policy",
            "test",
            BUILTIN_POLICY_PATH,
            dir.to_str().expect("UTF-8 path"),
        ],
        "",
    );
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let summary = stdout.lines().last().expect("a summary line");
    assert!(summary.ends_with(" passed, 0 failed"), "{summary}");
    let passed: usize = summary
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(passed >= 60, "{summary}");
}

#[test]
fn test_reports_each_failing_case_and_exits_1() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let soul = dir.path().join("soul");
    let classify = dir.path().join("classify");
    std::fs::create_dir_all(&soul).expect("mkdir");
    std::fs::create_dir_all(&classify).expect("mkdir");
    std::fs::write(soul.join("wrong.in"), "").expect("write");
    std::fs::write(soul.join("wrong.out"), "not the SOUL text\n").expect("write");
    std::fs::write(classify.join("failed.in"), "failed").expect("write");
    std::fs::write(
        classify.join("failed.out"),
        "{\"terminal\":true,\"outcome\":\"failed\"}\n",
    )
    .expect("write");
    let output = run(
        &[
            "policy",
            "test",
            BUILTIN_POLICY_PATH,
            dir.path().to_str().expect("UTF-8 path"),
        ],
        "",
    );
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert_eq!(failures.len(), 1, "{stdout}");
    assert!(failures[0].starts_with("FAIL soul/wrong: "), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("1 passed, 1 failed"));
}

#[test]
fn decide_prints_what_the_golden_file_expects() {
    let case = golden_dir().join("decide/cancelled-continues");
    let input = std::fs::read_to_string(case.with_extension("in")).expect("golden input");
    let expected = std::fs::read_to_string(case.with_extension("out")).expect("golden output");
    let output = run(&["policy", "decide", BUILTIN_POLICY_PATH], &input);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), expected);
}

#[test]
fn decide_refuses_bad_input_in_one_line() {
    let case = golden_dir().join("decide/bad-timestamp");
    let input = std::fs::read_to_string(case.with_extension("in")).expect("golden input");
    let expected = std::fs::read_to_string(case.with_extension("err")).expect("golden error");
    let output = run(&["policy", "decide", BUILTIN_POLICY_PATH], &input);
    assert_one_line_error(&output, "invalid timestamp");
    assert_eq!(
        text(&output.stderr).trim_end(),
        expected.trim_end(),
        "the guest's own message"
    );
}

#[test]
fn extract_prints_the_links_as_a_json_array() {
    let id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
    let output = run(
        &["policy", "extract", BUILTIN_POLICY_PATH],
        &format!("running, Execution {}", id.to_uppercase()),
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        format!("[{{\"execution\":\"{id}\"}}]\n")
    );
    // A protocol's task in a structured tool result (an A2A 0.3 task).
    let output = run(
        &["policy", "extract", BUILTIN_POLICY_PATH],
        r#"{"kind":"task","id":"export-7","contextId":"c","status":{"state":"working"}}"#,
    );
    assert_eq!(
        text(&output.stdout),
        "[{\"task\":{\"protocol\":\"a2a\",\"id\":\"export-7\"}}]\n"
    );
    let output = run(&["policy", "extract", BUILTIN_POLICY_PATH], "no ids here");
    assert_eq!(text(&output.stdout), "[]\n");
}
