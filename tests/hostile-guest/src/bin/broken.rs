//! A policy of the right world whose every export traps: it loads and
//! type-checks, so only the vetting probes can refuse it, with reasons.

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        world: "continuation-policy",
        path: "../../wit",
    });

    use exports::nomos::continuation::policy::Guest;
    use nomos::continuation::types as w;

    struct Broken;

    impl Guest for Broken {
        fn extract_links(_text: String) -> Vec<w::LinkRef> {
            panic!("broken: extract-links")
        }
        fn classify(_status: String) -> w::StatusClass {
            panic!("broken: classify")
        }
        fn decide(_input: w::DecisionInput) -> w::Decision {
            panic!("broken: decide")
        }
        fn decide_batch(_inputs: Vec<w::DecisionInput>) -> Vec<w::Decision> {
            panic!("broken: decide-batch")
        }
        fn soul() -> String {
            panic!("broken: soul")
        }
        fn describe() -> w::PolicyInfo {
            panic!("broken: describe")
        }
    }

    export!(Broken);
}

/// The component's `wasi:cli/run`.
fn main() {}
