//! The continuation policy: golden cases through the host and the real
//! `wasmtime` CLI, the same cases for the Python and JavaScript policies,
//! the runtime against hostile guests, and the policy tutorials run as
//! written.

#[path = "golden.rs"]
mod golden;
#[path = "languages.rs"]
mod languages;
#[path = "policy_runtime.rs"]
mod policy_runtime;
#[path = "replay.rs"]
mod replay;
#[path = "tutorial.rs"]
mod tutorial;
