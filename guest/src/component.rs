//! The typed exports: conversions between the generated bindings and the
//! plain Rust types, and nothing else.

use nomos_policy_default as policy;
use policy::types as t;

wit_bindgen::generate!({
    world: "continuation-policy",
    path: "../wit",
});

use exports::nomos::continuation::policy::Guest;
use nomos::continuation::types as w;

struct DefaultPolicy;

impl Guest for DefaultPolicy {
    fn extract_execution_ids(text: String) -> Vec<String> {
        policy::extract::extract_execution_ids(&text)
    }

    fn classify(status: String) -> w::StatusClass {
        match policy::classify::classify(&status) {
            t::StatusClass::NonTerminal => w::StatusClass::NonTerminal,
            t::StatusClass::Terminal(o) => w::StatusClass::Terminal(outcome(o)),
        }
    }

    fn decide(input: w::DecisionInput) -> w::Decision {
        decision(policy::decide::decide(&decision_input(input)))
    }

    fn decide_batch(inputs: Vec<w::DecisionInput>) -> Vec<w::Decision> {
        inputs
            .into_iter()
            .map(|i| decision(policy::decide::decide(&decision_input(i))))
            .collect()
    }

    fn soul() -> String {
        policy::soul::soul().to_string()
    }

    fn describe() -> w::PolicyInfo {
        let info = policy::describe();
        w::PolicyInfo {
            name: info.name,
            version: info.version,
            contract: info.contract,
        }
    }
}

fn outcome(o: t::Outcome) -> w::Outcome {
    match o {
        t::Outcome::Completed => w::Outcome::Completed,
        t::Outcome::Failed => w::Outcome::Failed,
        t::Outcome::Cancelled => w::Outcome::Cancelled,
    }
}

fn timestamp(ts: w::Timestamp) -> t::Timestamp {
    t::Timestamp {
        seconds: ts.seconds,
        nanoseconds: ts.nanoseconds,
    }
}

fn decision_input(i: w::DecisionInput) -> t::DecisionInput {
    t::DecisionInput {
        now: timestamp(i.now),
        execution: t::Execution {
            id: i.execution.id,
            status: i.execution.status,
            result: i.execution.result,
            finished_at: i.execution.finished_at.map(timestamp),
        },
        session: t::Session {
            id: i.session.id,
            window: i.session.window.map(|win| t::Window {
                opened_at: timestamp(win.opened_at),
                expires_at: timestamp(win.expires_at),
                route: match win.route {
                    w::ApprovalRoute::Button => t::ApprovalRoute::Button,
                    w::ApprovalRoute::Chat => t::ApprovalRoute::Chat,
                    w::ApprovalRoute::Api => t::ApprovalRoute::Api,
                },
            }),
            continuations_in_window: i.session.continuations_in_window,
            still_running: i.session.still_running,
        },
        attempts: i.attempts,
    }
}

fn decision(d: t::Decision) -> w::Decision {
    match d {
        t::Decision::Wait => w::Decision::Wait,
        t::Decision::Continue { note } => w::Decision::Continue(note),
        t::Decision::Drop { reason } => w::Decision::Drop(reason),
    }
}

export!(DefaultPolicy);
