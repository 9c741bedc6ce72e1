//! The continuation policy: golden cases through the host and the real
//! `wasmtime` CLI, the runtime against hostile guests, and the policy
//! tutorial run as written.

#[path = "golden.rs"]
mod golden;
#[path = "policy_runtime.rs"]
mod policy_runtime;
#[path = "replay.rs"]
mod replay;
#[path = "tutorial.rs"]
mod tutorial;
