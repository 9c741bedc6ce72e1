//! The continuation policy: golden cases through the host and the real
//! `wasmtime` CLI, the same cases for the Python and JavaScript policies,
//! the runtime against hostile guests, and the policy tutorials run as
//! written.

mod golden;
mod languages;
mod policy_runtime;
mod replay;
mod tutorial;
