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
        fn extract_links(text: String) -> Vec<w::LinkRef> {
            links(policy::links::extract_links(&text))
        }

        fn classify(status: String) -> w::StatusClass {
            status_class(policy::classify::classify(&status))
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
            t::Decision::Continue { .. } => w::Decision::Drop(CONTRARY.into()),
            other => decision(other),
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

    include!("../../../../guest/src/convert/shared.rs");
    include!("../../../../guest/src/convert/current.rs");

    export!(Contrary);
}

/// The component's `wasi:cli/run`; the tests only call the typed exports.
fn main() {}
