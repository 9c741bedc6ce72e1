//! The typed exports: the generated bindings meet the plain Rust types
//! here, and nothing else happens. The conversions are in `convert/`,
//! included (not modules) so the test policies of `tests/hostile-guest`,
//! which have bindings of their own, share them.

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
    fn extract_links(text: String) -> Vec<w::LinkRef> {
        links(policy::links::extract_links(&text))
    }

    fn classify(status: String) -> w::StatusClass {
        status_class(policy::classify::classify(&status))
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

include!("convert/shared.rs");
include!("convert/current.rs");

export!(DefaultPolicy);
