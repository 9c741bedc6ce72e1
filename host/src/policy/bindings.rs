//! The one `bindgen!` of the project: host-side bindings for the
//! `continuation-policy` world in `wit/policy.wit`.

wasmtime::component::bindgen!({
    world: "continuation-policy",
    path: "../wit",
});

pub use nomos::continuation::types as wit;
