//! A component of another package's world (`acme:other`): the host must
//! refuse it and name the `nomos:continuation/policy` export it lacks.

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        world: "other",
        path: "wit-other",
    });

    struct Other;

    impl exports::acme::other::thing::Guest for Other {
        fn hello() -> String {
            "hello from another world".into()
        }
    }

    export!(Other);
}

/// The component's `wasi:cli/run`.
fn main() {}
