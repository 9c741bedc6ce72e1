//! The host-side bindings of the contract: one `bindgen!` per version the
//! host serves.
//!
//! Why two: a policy built against 0.1.0 (`wit/v0.1.0/policy.wit`) exports
//! `nomos:continuation/policy@0.1.0`, whose functions and types differ from
//! 0.2.0's (`wit/policy.wit`), and wasmtime checks a component against the
//! exact interface it was generated for. The host keeps serving 0.1.0
//! policies, so it needs both; `instance` puts one face on them. Nothing
//! else in the host names a version's bindings.

/// The current contract, `nomos:continuation@0.2.0`.
pub(crate) mod v2 {
    wasmtime::component::bindgen!({
        world: "continuation-policy",
        path: "../wit",
    });

    pub use nomos::continuation::types as wit;
}

/// The previous contract, `nomos:continuation@0.1.0`, kept verbatim.
pub(crate) mod v1 {
    wasmtime::component::bindgen!({
        world: "continuation-policy",
        path: "../wit/v0.1.0",
    });

    pub use nomos::continuation::types as wit;
}
