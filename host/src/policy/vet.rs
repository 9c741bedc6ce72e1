//! The checks a candidate passes before it may become active: it compiles,
//! matches the contract, and answers a set of probe inputs (and any golden
//! cases the operator configured) within the production limits.

use super::compiled::CompiledPolicy;
use super::eval;
use super::golden::{self, GoldenCase};
use super::sandbox::Sandbox;
use super::types as t;
use super::PolicyError;

/// Golden cases a candidate must reproduce exactly, on top of the probes.
#[derive(Debug, Clone, Default)]
pub struct Vetting {
    /// The cases.
    pub cases: Vec<GoldenCase>,
}

/// Vets a compiled candidate; every problem found is listed. Cheap next to
/// the compile (milliseconds), so a revision compiled before is vetted
/// again against the cases configured now.
pub(crate) fn vet(
    sandbox: &Sandbox,
    compiled: &CompiledPolicy,
    vetting: &Vetting,
) -> Result<(), PolicyError> {
    let mut problems = probe(sandbox, compiled);
    for case in &vetting.cases {
        let output = golden::run_case(sandbox, compiled, case);
        if let Some(diff) = golden::mismatch(case, &output) {
            problems.push(diff);
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(PolicyError::Rejected(problems))
    }
}

const PROBE_ID: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

/// Runs every export once on representative inputs. Answers may differ
/// between policies; they must only be well-formed and in time.
fn probe(sandbox: &Sandbox, policy: &CompiledPolicy) -> Vec<String> {
    let mut problems = Vec::new();
    let mut check = |what: &str, result: Result<(), eval::PolicyFailure>| {
        if let Err(e) = result {
            problems.push(format!("{what}: {e}"));
        }
    };
    // The contract a policy names is the one it exports (0.2.x or 0.1.x).
    let contract = policy.pre.version().contract_prefix();
    check(
        "describe()",
        eval::describe(sandbox, policy).and_then(|info| {
            if info.contract.starts_with(contract) {
                Ok(())
            } else {
                Err(eval::PolicyFailure::Malformed(format!(
                    "contract {:?}, expected {contract}x",
                    info.contract
                )))
            }
        }),
    );
    check(
        "soul()",
        eval::soul(sandbox, policy).and_then(|s| {
            if s.trim().is_empty() {
                Err(eval::PolicyFailure::Malformed("empty SOUL text".into()))
            } else {
                Ok(())
            }
        }),
    );
    let text = format!(
        "pct_create: running, execution {PROBE_ID}\n{}",
        "log line\n".repeat(10_000)
    );
    check(
        "extract-links(probe)",
        eval::extract_links(sandbox, policy, &text).map(drop),
    );
    for (what, text) in probe_tool_results() {
        check(
            &format!("extract-links({what})"),
            eval::extract_links(sandbox, policy, &text).map(drop),
        );
    }
    for status in [
        "running",
        "completed",
        "failed",
        "cancelled",
        "",
        "???",
        "input-required",
        "auth_required",
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
    ] {
        check(
            &format!("classify({status:?})"),
            eval::classify(sandbox, policy, status).map(drop),
        );
    }
    check(
        "decide-batch(probe)",
        eval::decide_batch(sandbox, policy, &probe_inputs()).map(drop),
    );
    problems
}

/// Tool results naming protocol tasks, each shape a policy may meet: an MCP
/// task-creating `tools/call` answer in its JSON-RPC envelope, an A2A 1.0
/// task, an A2A 0.3 task, and a CallToolResult carrying one as text.
fn probe_tool_results() -> [(&'static str, String); 4] {
    [
        (
            "mcp task",
            r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-1","status":"working"}}}"#
                .into(),
        ),
        (
            "a2a task",
            r#"{"id":"t-2","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}"#.into(),
        ),
        (
            "a2a 0.3 task",
            r#"{"kind":"task","id":"t-3","contextId":"c","status":{"state":"working"}}"#.into(),
        ),
        (
            "task as text",
            format!(
                r#"{{"content":[{{"type":"text","text":"{{\"task\":{{\"taskId\":\"{}\"}}}}"}}]}}"#,
                "t".repeat(2048)
            ),
        ),
    ]
}

pub(super) fn probe_inputs() -> Vec<t::DecisionInput> {
    let at = |seconds| t::Timestamp {
        seconds,
        nanoseconds: 0,
    };
    let window = t::Window {
        opened_at: at(1_000),
        expires_at: at(2_800),
        route: t::ApprovalRoute::Button,
    };
    let input =
        |status: &str, result: String, now, window: Option<t::Window>, count| t::DecisionInput {
            now: at(now),
            execution: t::Execution {
                id: PROBE_ID.into(),
                status: status.into(),
                result,
                finished_at: Some(at(now)),
                task: None,
            },
            session: t::Session {
                id: "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d".into(),
                window,
                continuations_in_window: count,
                still_running: vec!["00000000-0000-4000-8000-000000000001".into()],
            },
            attempts: 0,
        };
    vec![
        input("running", String::new(), 1_500, Some(window.clone()), 0),
        input(
            "failed",
            "ssh: connection refused".into(),
            1_500,
            Some(window.clone()),
            0,
        ),
        input(
            "completed",
            "x".repeat(200_000),
            1_500,
            Some(window.clone()),
            0,
        ),
        input("failed", "boom".into(), 3_000, Some(window.clone()), 0),
        input("failed", "boom".into(), 1_500, None, 0),
        input("completed", "ok".into(), 1_500, Some(window.clone()), 1_000),
        input(
            "input-required",
            String::new(),
            1_500,
            Some(window.clone()),
            0,
        ),
        // A protocol task's execution: a note may name the task.
        t::DecisionInput {
            execution: t::Execution {
                task: Some(t::TaskRef {
                    protocol: t::TaskProtocol::A2a,
                    id: "probe-task".into(),
                }),
                ..input("completed", "ok".into(), 1_500, None, 0).execution
            },
            ..input("completed", "ok".into(), 1_500, Some(window), 0)
        },
    ]
}
