//! MCP 2025-11-25 tasks (mcp 1.30's `experimental` modules): the runtime's
//! MCP client calls the tool task-augmented, posts the task-creating
//! result as the tool result, and forwards every `tasks/get` answer (and
//! status notification) and the `tasks/result` answer to
//! `POST /v1/mcp/tasks`, as `tests/python/mcp_peer.py` does. MCP has no
//! webhook: these forwards are the only way the task's state arrives.

use std::path::Path;

use nomos_continue_tests::python::python;
use nomos_continue_tests::wait::until;
use serde_json::{json, Value};
use uuid::Uuid;

use super::peer::{mcp_runtime, McpCall, McpRun};
use super::{names, Serve, FAILURE, PARTIAL, RUNTIME_TOKEN};

/// Runs the peer's `tool` (with `python`, the main environment's) as the
/// runtime of a fresh approved session; the session, the task's execution
/// id and what the peer did.
async fn run(serve: &Serve, python: &Path, tool: &str) -> (Uuid, String, McpRun) {
    let session = Uuid::new_v4();
    serve.approve(session).await;
    let base = serve.url("");
    let run = mcp_runtime(python, tool, &base, RUNTIME_TOKEN, session).await;
    for call in &run.calls {
        assert_eq!(
            call.status, 200,
            "{} {} -> {}",
            call.path, call.body, call.answer
        );
    }
    let linked = &run
        .calls
        .first()
        .expect("the tool result was posted")
        .answer;
    let execution = linked["linked"][0]
        .as_str()
        .unwrap_or_else(|| panic!("the CreateTaskResult links the task: {linked}"))
        .to_owned();
    for call in run.forwarded() {
        assert_eq!(
            call.answer["execution_id"],
            execution.as_str(),
            "{}",
            call.answer
        );
    }
    (session, execution, run)
}

/// The forward of the `tasks/get` answer in `status`, the first one.
fn poll_in<'a>(run: &'a McpRun, status: &str) -> &'a McpCall {
    run.forwarded()
        .into_iter()
        .find(|c| c.body["status"] == status && c.body.get("taskId").is_some())
        .unwrap_or_else(|| panic!("no tasks/get answer in {status}: {run:?}"))
}

/// The forward of the `tasks/result` answer (the last call).
fn result_of(run: &McpRun) -> &McpCall {
    let last = run.forwarded().pop().expect("forwards");
    assert!(
        last.body.get("_meta").is_some(),
        "tasks/result comes last: {last:?}"
    );
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_tool_result_with_is_error_fails_the_task_and_continues_once() {
    let Some(python) = python() else { return };
    let serve = Serve::start().await;
    let (session, execution, run) = run(&serve, &python, "fail").await;
    // The SDK ends an isError task `completed`: without its result that
    // state waits; the result makes it a failure.
    let completed = poll_in(&run, "completed");
    assert_eq!(completed.answer["applied"], false, "{}", completed.answer);
    let result = result_of(&run);
    assert_eq!(result.body["isError"], true);
    assert_eq!(result.answer["applied"], true, "{}", result.answer);
    assert_eq!(
        result.answer["execution"]["status"], "failed",
        "{}",
        result.answer
    );

    let continuation = serve
        .delivered(session, "continuation", Some(&execution))
        .await;
    let note = continuation["note"].as_str().unwrap_or_default();
    assert!(note.contains(FAILURE), "the note has the failure: {note}");
    assert!(note.contains(PARTIAL), "the note has the content: {note}");

    // The result forwarded again, then an old `working`: neither applies.
    let working = poll_in(&run, "working");
    for (what, body) in [
        ("the duplicate", &result.body),
        ("the old working", &working.body),
    ] {
        let again = serve.post("/v1/mcp/tasks", body).await;
        assert_eq!(again.status, 200, "{what}: {}", again.body);
        assert_eq!(again.body["applied"], false, "{what}: {}", again.body);
    }
    let recorded = serve.execution(&execution).await;
    assert_eq!(recorded["status"], "failed", "{recorded}");

    let continuations = serve.after_a_sentinel(session).await;
    assert_eq!(
        continuations.len(),
        2,
        "the task's and the sentinel's: {continuations:?}"
    );
    assert_eq!(continuations[0]["execution_ids"], json!([execution]));
    assert_eq!(serve.agent_events("continuation.v1", session).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_failed_task_continues_with_its_status_message() {
    let Some(python) = python() else { return };
    let serve = Serve::start().await;
    let (session, execution, run) = run(&serve, &python, "raise").await;
    // The SDK's tasks/result of a failed task carries nothing but its
    // task's id: the failure is the tasks/get answer's statusMessage.
    let failed = poll_in(&run, "failed");
    assert_eq!(failed.body["statusMessage"], FAILURE);
    let continuation = serve
        .delivered(session, "continuation", Some(&execution))
        .await;
    let note = continuation["note"].as_str().unwrap_or_default();
    assert!(
        note.contains(FAILURE),
        "the note has the status message: {note}"
    );
    let recorded = serve.execution(&execution).await;
    assert_eq!(recorded["status"], "failed", "{recorded}");
    assert_eq!(serve.deliveries(session, "continuation").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_task_asking_for_input_notifies_and_never_continues() {
    let Some(python) = python() else { return };
    let serve = Serve::start().await;
    let (session, execution, run) = run(&serve, &python, "input").await;
    let asking = poll_in(&run, "input_required");
    assert_eq!(
        asking.answer["applied"], true,
        "a person's state applies: {}",
        asking.answer
    );

    serve.delivered(session, "notice", None).await;
    assert_eq!(serve.agent_events("notice.v1", session).len(), 1);
    until("the operator's copy of the notice", async || {
        (!serve.operator_events(session).is_empty()).then_some(())
    })
    .await;
    let recorded: Value = serve.execution(&execution).await;
    assert_eq!(recorded["status"], "input_required", "{recorded}");
    assert_eq!(recorded["terminal"], false);

    let again = serve.post("/v1/mcp/tasks", &asking.body).await;
    assert_eq!(again.status, 200, "{}", again.body);

    let continuations = serve.after_a_sentinel(session).await;
    assert_eq!(
        continuations.len(),
        1,
        "only the sentinel: {continuations:?}"
    );
    assert!(!names(&continuations[0], &execution), "{continuations:?}");
    assert_eq!(
        serve.deliveries(session, "notice").await.len(),
        1,
        "one notice per entry"
    );
}

/// The 2026 extension (`io.modelcontextprotocol/tasks`) against its real
/// peer, `tests/peers/mcp-tasks-2026` (rmcp; see [`mcp_2026_peer`]). The test plays the
/// runtime: the flat task-creating answer is the tool result, each
/// `tasks/get` answer is forwarded, and the terminal one carries the
/// result inline, so no `tasks/result` is needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_2026_a_task_with_its_result_inline_fails_and_continues_once() {
    let Some(peer) = mcp_2026_peer() else {
        return;
    };
    let output = tokio::process::Command::new(&peer)
        .arg("fail")
        .output()
        .await
        .unwrap_or_else(|e| panic!("run {peer:?}: {e}"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let (created, polled) = answers.split_first().expect("a task-creating answer");
    assert_eq!(created["body"]["resultType"], "task", "{created}");

    let serve = Serve::start().await;
    let session = Uuid::new_v4();
    serve.approve(session).await;
    let linked = serve.tool_result(session, &created["body"]).await;
    let execution = linked["linked"][0]
        .as_str()
        .unwrap_or_else(|| panic!("the 2026 task-creating result links the task: {linked}"))
        .to_owned();
    for answer in polled {
        let forwarded = serve.post("/v1/mcp/tasks", &answer["body"]).await;
        assert_eq!(forwarded.status, 200, "{answer} -> {}", forwarded.body);
    }
    let continuation = serve
        .delivered(session, "continuation", Some(&execution))
        .await;
    let note = continuation["note"].as_str().unwrap_or_default();
    assert!(note.contains(FAILURE) && note.contains(PARTIAL), "{note}");
    let recorded = serve.execution(&execution).await;
    assert_eq!(
        recorded["status"], "failed",
        "isError is a failure: {recorded}"
    );
}

/// The 2026 peer's binary: `NOMOS_MCP_2026_PEER`, or the one `.ci/run`
/// builds beside the test build (`target/peers`, its own project, so the
/// workspace's build never compiles rmcp). Missing, it is built here under
/// `CI=true` (about 80 CPU-seconds), and skipped with a word otherwise.
fn mcp_2026_peer() -> Option<std::path::PathBuf> {
    if let Some(peer) = std::env::var_os("NOMOS_MCP_2026_PEER") {
        return Some(peer.into());
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = root.join("target/peers");
    let peer = target.join("debug/nomos-peer-mcp-tasks-2026");
    if peer.exists() {
        return Some(peer);
    }
    if !nomos_continue_tests::db::in_ci() {
        eprintln!(
            "skipped: no built 2026 MCP peer; build it with `cargo build --manifest-path \
             tests/peers/mcp-tasks-2026/Cargo.toml --target-dir target/peers`"
        );
        return None;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = std::process::Command::new(cargo)
        .arg("build")
        .arg("--locked")
        .arg("--manifest-path")
        .arg(root.join("tests/peers/mcp-tasks-2026/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .status()
        .expect("run cargo for the 2026 MCP peer");
    assert!(built.success(), "building the 2026 MCP peer failed");
    Some(peer)
}
