//! A policy that passes vetting and decides otherwise than the default one:
//! the candidate a shadow test runs beside the active revision.
//!
//! It extracts and classifies like the default policy. Deciding, it drops
//! whatever the default policy would continue, and, when the execution's
//! result (free text, which the default policy only quotes) asks it to,
//! misbehaves: `"shadow-loop"` spins until the host's deadline,
//! `"shadow-trap"` panics. So the same traffic can be continued by the
//! active revision and refused, or failed on, by the shadow.

#[cfg(target_arch = "wasm32")]
mod component {
    use nomos_policy_default as policy;
    use policy::types as t;

    wit_bindgen::generate!({
        world: "continuation-policy",
        path: "../../wit",
    });

    use exports::nomos::continuation::policy::Guest;
    use nomos::continuation::types as w;

    /// The reason of every drop the default policy would not have made.
    const CONTRARY: &str = "contrary: no automatic continuation";

    struct Contrary;

    impl Guest for Contrary {
        fn extract_execution_ids(text: String) -> Vec<String> {
            policy::extract::extract_execution_ids(&text)
        }

        fn classify(status: String) -> w::StatusClass {
            match policy::classify::classify(&status) {
                t::StatusClass::NonTerminal => w::StatusClass::NonTerminal,
                t::StatusClass::Terminal(t::Outcome::Completed) => {
                    w::StatusClass::Terminal(w::Outcome::Completed)
                }
                t::StatusClass::Terminal(t::Outcome::Failed) => {
                    w::StatusClass::Terminal(w::Outcome::Failed)
                }
                t::StatusClass::Terminal(t::Outcome::Cancelled) => {
                    w::StatusClass::Terminal(w::Outcome::Cancelled)
                }
            }
        }

        fn decide(input: w::DecisionInput) -> w::Decision {
            decide_one(input)
        }

        fn decide_batch(inputs: Vec<w::DecisionInput>) -> Vec<w::Decision> {
            inputs.into_iter().map(decide_one).collect()
        }

        fn soul() -> String {
            policy::soul::soul().to_string()
        }

        fn describe() -> w::PolicyInfo {
            w::PolicyInfo {
                name: "contrary".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                contract: policy::CONTRACT.into(),
            }
        }
    }

    fn decide_one(input: w::DecisionInput) -> w::Decision {
        if input.execution.result.contains("shadow-loop") {
            spin();
        }
        if input.execution.result.contains("shadow-trap") {
            panic!("contrary: trap requested");
        }
        match policy::decide::decide(&decision_input(input)) {
            t::Decision::Wait => w::Decision::Wait,
            t::Decision::Continue { .. } => w::Decision::Drop(CONTRARY.into()),
            t::Decision::Drop { reason } => w::Decision::Drop(reason),
        }
    }

    /// Busy work the optimiser cannot remove; only the host's epoch deadline
    /// ends it.
    fn spin() -> ! {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
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

    export!(Contrary);
}

/// The component's `wasi:cli/run`; the tests only call the typed exports.
fn main() {}
