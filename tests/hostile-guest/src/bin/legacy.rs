//! A policy built against the previous contract, `nomos:continuation@0.1.0`
//! (`wit/v0.1.0`), answering as the default policy did then: execution ids
//! only, no person's class (a status waiting for a person is not terminal
//! to it), no task in its input. The host must still serve it.

#[cfg(target_arch = "wasm32")]
mod component {
    use nomos_policy_default as policy;
    use policy::types as t;

    wit_bindgen::generate!({
        world: "continuation-policy",
        path: "../../wit/v0.1.0",
    });

    use exports::nomos::continuation::policy::Guest;
    use nomos::continuation::types as w;

    struct Legacy;

    impl Guest for Legacy {
        fn extract_execution_ids(text: String) -> Vec<String> {
            policy::extract::extract_execution_ids(&text)
        }

        fn classify(status: String) -> w::StatusClass {
            match policy::classify::classify(&status) {
                t::StatusClass::Terminal(o) => w::StatusClass::Terminal(outcome(o)),
                t::StatusClass::NonTerminal | t::StatusClass::AwaitingPerson(_) => {
                    w::StatusClass::NonTerminal
                }
            }
        }

        fn decide(input: w::DecisionInput) -> w::Decision {
            decision(policy::decide::decide(&decision_input(input)))
        }

        fn decide_batch(inputs: Vec<w::DecisionInput>) -> Vec<w::Decision> {
            inputs.into_iter().map(Self::decide).collect()
        }

        fn soul() -> String {
            policy::soul::soul().to_string()
        }

        fn describe() -> w::PolicyInfo {
            w::PolicyInfo {
                name: "legacy".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                contract: "nomos:continuation@0.1.0".into(),
            }
        }
    }

    /// 0.1.0's execution has no task; the rest is the same record.
    fn execution(e: w::Execution) -> t::Execution {
        let w::Execution {
            id,
            status,
            result,
            finished_at,
        } = e;
        let finished_at = finished_at.map(timestamp);
        let task = None;
        t::Execution {
            id,
            status,
            result,
            finished_at,
            task,
        }
    }

    include!("../../../../guest/src/convert/shared.rs");

    export!(Legacy);
}

/// The component's `wasi:cli/run`; the tests only call the typed exports.
fn main() {}
