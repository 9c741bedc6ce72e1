//! nomos-continue: the system, not a person typing "continue", is the event
//! loop of an agent whose tools run asynchronously.
//!
//! # Layout
//!
//! - [`policy`]: the sandboxed WebAssembly continuation policy: loading and
//!   type-checking a component, running it under limits, hot swap.
//! - [`deploy`]: which policy revision runs when a watched file, uploads
//!   and the database all name one (the database decides), and the
//!   watchers that converge on it.
//! - [`signing`]: Ed25519 keys and detached signatures of policy
//!   revisions, and their text files (checked by [`deploy`]).
//! - [`classes`]: how the active revision classifies each status, asked of
//!   the policy once and kept in the store.
//! - [`store`]: every SQL query, for PostgreSQL and the embedded SQLite
//!   default, and the migrations.
//! - [`agent`]: the [`agent::Agent`] trait the runtime implements and the
//!   webhook and `chatWith` adapters (with `chatWith`'s history in the store).
//! - [`worker`]: the continuation worker (plan, deliver), its rescuer and
//!   its wake-ups.
//! - [`api`]: the HTTP API (axum) a runtime beside this process calls.
//! - [`console`]: the operator's web console at `/ui`: sessions, one
//!   session's timeline, the policy and a playground, as HTML rendered on
//!   the server from the same store and policy, behind the API's tokens.
//! - [`server`]: the one assembly of all of the above into a running
//!   process ([`server::serve`]), used by `serve`, the demo and the tests.
//! - [`clock`]: the injectable "now" the worker acts on.
//! - [`metrics`]: counters and histograms for `/metrics`.
//! - [`demo`]: the seed's scenario replayed end to end (`nomos-continue demo`).
//! - [`commands`]: the subcommands of the `nomos-continue` binary.

#![deny(missing_docs)]

pub mod agent;
pub mod api;
pub mod classes;
pub mod clock;
pub mod commands;
pub mod console;
pub mod demo;
pub mod deploy;
pub mod metrics;
pub mod policy;
pub mod server;
pub mod signing;
pub mod store;
pub mod worker;
