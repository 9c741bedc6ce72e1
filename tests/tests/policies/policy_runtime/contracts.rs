//! The contract versions the host serves: a policy of 0.2.0 (the default)
//! sees an execution's protocol task and may name tasks and a person's
//! state; a policy of 0.1.0 (`tests/hostile-guest/src/bin/legacy.rs`, built
//! against `wit/v0.1.0`) is still loaded, vetted and called, its execution
//! ids read as links and its classes as they were.

use nomos_continue::policy::types as t;
use nomos_continue::policy::{Limits, PolicyRuntime};

use super::{assert_continues, default_runtime, execution_link, input, wasm, EXECUTION};

fn legacy_bytes() -> Vec<u8> {
    wasm(env!("LEGACY_WASM"))
}

fn with_task(status: &str) -> t::DecisionInput {
    let mut one = input(status);
    one.execution.task = Some(t::TaskRef {
        protocol: t::TaskProtocol::A2a,
        id: "task-7".into(),
    });
    one
}

#[test]
fn a_policy_of_contract_0_1_0_is_vetted_loaded_and_answers() {
    let bytes = legacy_bytes();
    let (_, info) = default_runtime()
        .check(&bytes)
        .expect("vetting accepts a 0.1.0 policy");
    assert_eq!(info.contract, "nomos:continuation@0.1.0");
    let runtime = PolicyRuntime::with_policy(Limits::default(), &bytes)
        .expect("the 0.1.0 policy becomes active");
    let text = format!("running, execution {EXECUTION}, again execution {EXECUTION}");
    assert_eq!(
        runtime.extract_links(&text).value,
        Ok(vec![execution_link(EXECUTION)]),
        "its execution ids are links, once each"
    );
    let mcp = r#"{"task": {"taskId": "t-1", "status": "working"}}"#;
    assert_eq!(runtime.extract_links(mcp).value, Ok(Vec::new()));
    assert_eq!(
        runtime.classify("failed").value,
        Ok(t::StatusClass::Terminal(t::Outcome::Failed))
    );
    assert_eq!(
        runtime.classify("input-required").value,
        Ok(t::StatusClass::NonTerminal),
        "0.1.0 has no person's class"
    );
    // The task is not passed to it (0.1.0 has no such field): the note
    // names the execution alone.
    let decided = runtime.decide_batch(&[with_task("failed"), input("running")]);
    match decided.value.as_deref() {
        Ok([t::Decision::Continue { note }, t::Decision::Wait]) => {
            assert!(
                note.starts_with(&format!("execution {EXECUTION} failed: ")),
                "{note}"
            )
        }
        other => panic!("expected a continuation and a wait, got {other:?}"),
    }
    assert!(runtime.soul().value.is_ok_and(|s| !s.is_empty()));
}

#[test]
fn a_policy_of_contract_0_2_0_sees_tasks_and_a_persons_state() {
    let runtime = default_runtime();
    let mcp = r#"{"jsonrpc": "2.0", "id": 1, "result": {"task": {"taskId": "t-1", "status": "working"}}}"#;
    assert_eq!(
        runtime.extract_links(mcp).value,
        Ok(vec![t::LinkRef::Task(t::TaskRef {
            protocol: t::TaskProtocol::Mcp,
            id: "t-1".into(),
        })])
    );
    assert_eq!(
        runtime.classify("TASK_STATE_AUTH_REQUIRED").value,
        Ok(t::StatusClass::AwaitingPerson(t::PersonNeed::Authorization))
    );
    let decided = runtime.decide_batch(&[with_task("failed"), with_task("input-required")]);
    match decided.value.as_deref() {
        Ok([t::Decision::Continue { note }, t::Decision::Wait]) => assert!(
            note.starts_with(&format!(
                "execution {EXECUTION} (a2a task \"task-7\") failed: "
            )),
            "{note}"
        ),
        other => panic!("expected a continuation and a wait, got {other:?}"),
    }
    assert_continues(
        &runtime
            .decide_batch(&[input("failed")])
            .value
            .expect("decides"),
    );
}
