//! The default nomos-continue continuation policy, as plain Rust.
//!
//! # Layout
//!
//! - [`types`]: the data of the `nomos:continuation` contract, with the JSON
//!   form that `wasmtime run policy.wasm decide` reads and writes.
//! - [`links`]: what a tool result names: protocol tasks (MCP Tasks, A2A)
//!   found in its JSON, and execution ids.
//! - [`extract`]: which execution ids a tool result's text names.
//! - [`classify`]: which status strings are terminal, and which wait for a
//!   person.
//! - [`decide`]: wait / continue / drop for one execution, and the loop guards.
//! - [`note`]: the text the agent is re-invoked with.
//! - [`soul`]: the text appended to the agent's system prompt.
//! - [`cli`]: the stdin/stdout commands of `wasmtime run policy.wasm CMD`.
//!
//! The component in `main.rs` is a thin binding over these functions, so the
//! same logic is unit-tested natively, benchmarked natively against the
//! sandboxed call, and shipped as one `.wasm`.

#![deny(missing_docs)]

pub mod classify;
pub mod cli;
pub mod decide;
pub mod extract;
pub mod links;
pub mod note;
pub mod soul;
pub mod types;

/// The contract this policy implements; the host refuses other majors.
pub const CONTRACT: &str = "nomos:continuation@0.2.0";

/// The name this policy reports in `describe`.
pub const POLICY_NAME: &str = "nomos-default";

/// The policy's name, version and contract.
pub fn describe() -> types::PolicyInfo {
    types::PolicyInfo {
        name: POLICY_NAME.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        contract: CONTRACT.to_string(),
    }
}
