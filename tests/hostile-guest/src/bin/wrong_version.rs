//! A well-behaved policy built against `nomos:continuation@1.0.0` (a copy of
//! the contract with only the version changed): the host, which speaks
//! 0.1.0, must refuse it and say which version it found.

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        world: "continuation-policy",
        path: "wit-v1",
    });

    use exports::nomos::continuation::policy::Guest;
    use nomos::continuation::types as w;

    struct WrongVersion;

    impl Guest for WrongVersion {
        fn extract_execution_ids(_text: String) -> Vec<String> {
            Vec::new()
        }
        fn classify(_status: String) -> w::StatusClass {
            w::StatusClass::NonTerminal
        }
        fn decide(_input: w::DecisionInput) -> w::Decision {
            w::Decision::Wait
        }
        fn decide_batch(inputs: Vec<w::DecisionInput>) -> Vec<w::Decision> {
            inputs.iter().map(|_| w::Decision::Wait).collect()
        }
        fn soul() -> String {
            "built for contract 1.0.0".into()
        }
        fn describe() -> w::PolicyInfo {
            w::PolicyInfo {
                name: "wrong-version".into(),
                version: "1.0.0".into(),
                contract: "nomos:continuation@1.0.0".into(),
            }
        }
    }

    export!(WrongVersion);
}

/// The component's `wasi:cli/run`.
fn main() {}
