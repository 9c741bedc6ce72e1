//! nomos-continue: the system, not a person typing "continue", is the event
//! loop of an agent whose tools run asynchronously.
//!
//! # Embedding
//!
//! A runtime embeds the engine through what this root re-exports: open a
//! [`Database`], implement [`Agent`] (or let the configuration name a
//! webhook), and run the one assembly, [`Server`], with a [`ServeConfig`]
//! built from its defaults (`ServeConfig::default().with_…`; the
//! configurations are `#[non_exhaustive]`, so a new setting is not a
//! breaking change). Start it with the HTTP API on a listener
//! ([`Server::start`]) or without one ([`Server::start_in_process`]); what
//! the runtime writes goes in through [`Running::intake`], in process: the
//! operations the HTTP API's write routes call. `examples/embed.rs` runs
//! the seed's story this way.
//!
//! ```no_run
//! # async fn run(agent: std::sync::Arc<dyn nomos_continue::Agent>) -> anyhow::Result<()> {
//! use nomos_continue::{Database, Route, ServeConfig, Server, WorkerConfig};
//!
//! let config = ServeConfig::default()
//!     .with_worker(WorkerConfig::default().with_worker_id("runtime-1".into()));
//! let database = Database::connect("sqlite:nomos-continue.db").await?;
//! database.migrate().await?;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! let running = Server::new(config, database)
//!     .with_agent(agent)
//!     .start_in_process(shutdown)
//!     .await?;
//! let (session, execution) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
//! let intake = running.intake();
//! intake.approve(session, Route::Api, None).await?;
//! let text = format!("started, execution {execution}");
//! intake.link_tool_result(session, text, None).await?;
//! intake.record_status(execution, "failed", "exit 1", None).await?;
//! // ... the agent is re-invoked through `Agent::continue_session` ...
//! running.stop().await
//! # }
//! ```
//!
//! Everything else is the engine's own. The `test-support` feature makes
//! the modules below public for this repository's tests, examples and
//! benchmarks; it is not a stable interface.
//!
//! # Layout
//!
//! - `policy`: the sandboxed WebAssembly continuation policy: loading and
//!   type-checking a component, running it under limits, hot swap.
//! - `deploy`: which policy revision runs when a watched file, uploads and
//!   the database all name one (the database decides), and the one watch
//!   loop the file and database watchers share.
//! - `signing`: Ed25519 keys and detached signatures of policy revisions,
//!   and their text files (checked by `deploy`).
//! - `classes`: how the active revision classifies each status, asked of
//!   the policy once and kept in the store.
//! - `store`: every SQL query, for PostgreSQL and the embedded SQLite
//!   default, grouped by table and by reader, and the migrations.
//! - `agent`: the [`Agent`] trait the runtime implements and the webhook,
//!   `chatWith` (its history in the store) and stdout adapters.
//! - `worker`: the continuation worker: a planner that writes
//!   continuations and a deliverer that calls the agent, and its wake-ups.
//! - `maintenance`: the loops beside the worker, each on its own interval:
//!   the rescuer (expired leases), the retention (decision log, tool output,
//!   settled history), the stuck watch (executions running past
//!   `--stuck-after` in an open window), the A2A task poller, and the
//!   start-up warning when PostgreSQL will not vacuum the store's tables.
//! - `intake`: what comes in, whoever brings it: a tool result's links, a
//!   status report, an approval, a protocol task and its pushes, as plain
//!   methods of [`Intake`] that the API, the pollers and an embedding
//!   runtime call alike.
//! - `api`: the HTTP API (axum), one handler module per resource: parse,
//!   authorise, call the intake, answer.
//! - `protocols`: MCP Tasks and A2A bodies of every version read into the
//!   task, its state verbatim and the text a note carries (pure: no
//!   database, no HTTP).
//! - `console`: the operator's web console at `/ui`, rendered on the
//!   server from the same store and policy, behind the API's tokens.
//! - `server`: the one assembly of all of the above into a running process
//!   ([`serve`], [`Server`]), used by `serve`, the demo and the tests.
//! - `telemetry`: W3C trace context kept with each link and carried back
//!   with its continuation, the `link`, `decide` and `deliver` spans, and
//!   their OTLP export.
//! - `clock`: the injectable "now" the worker acts on.
//! - `redact`: what of a configured URL a log line or an error may show.
//! - `metrics`: counters and histograms for `/metrics`.
//! - `commands`: the subcommands of the `nomos-continue` binary (the demo
//!   among them); `main.rs` only parses arguments.

#![deny(missing_docs)]
// Every type an embedder meets in a signature can be named from the root.
#![warn(unnameable_types)]

// The internal modules: public under `test-support`, private otherwise.
// (Written out, not generated: a macro-made `mod` hides the modules from
// rustfmt and from tools that read the source.)
#[cfg(feature = "test-support")]
pub mod agent;
#[cfg(not(feature = "test-support"))]
mod agent;
#[cfg(feature = "test-support")]
pub mod api;
#[cfg(not(feature = "test-support"))]
mod api;
#[cfg(feature = "test-support")]
pub mod classes;
#[cfg(not(feature = "test-support"))]
mod classes;
#[cfg(feature = "test-support")]
pub mod clock;
#[cfg(not(feature = "test-support"))]
mod clock;
#[cfg(feature = "test-support")]
pub mod console;
#[cfg(not(feature = "test-support"))]
mod console;
#[cfg(feature = "test-support")]
pub mod deploy;
#[cfg(not(feature = "test-support"))]
mod deploy;
#[cfg(feature = "test-support")]
pub mod intake;
#[cfg(not(feature = "test-support"))]
mod intake;
#[cfg(feature = "test-support")]
pub mod maintenance;
#[cfg(not(feature = "test-support"))]
mod maintenance;
#[cfg(feature = "test-support")]
pub mod metrics;
#[cfg(not(feature = "test-support"))]
mod metrics;
#[cfg(feature = "test-support")]
pub mod policy;
#[cfg(not(feature = "test-support"))]
mod policy;
#[cfg(feature = "test-support")]
pub mod protocols;
#[cfg(not(feature = "test-support"))]
mod protocols;
#[cfg(feature = "test-support")]
pub mod server;
#[cfg(not(feature = "test-support"))]
mod server;
#[cfg(feature = "test-support")]
pub mod signing;
#[cfg(not(feature = "test-support"))]
mod signing;
#[cfg(feature = "test-support")]
pub mod store;
#[cfg(not(feature = "test-support"))]
mod store;
#[cfg(feature = "test-support")]
pub mod telemetry;
#[cfg(not(feature = "test-support"))]
mod telemetry;
#[cfg(feature = "test-support")]
pub mod worker;
#[cfg(not(feature = "test-support"))]
mod worker;

mod redact;

/// The binary's subcommands (`main.rs` calls them); not an embedding API.
#[doc(hidden)]
pub mod commands;

pub use agent::{
    async_trait, Agent, AgentError, Continuation, ExecutionReport, HistoryError, Notice,
    NotifyFormat, Operator, OperatorConfig, SecretError, WebhookSecret,
};
pub use api::{PushLimits, Rate};
pub use intake::{
    Intake, IntakeError, Linked, McpRecorded, PushConfiguration, Recorded,
    SessionPushConfiguration, TaskRegistered, TaskRegistration,
};
pub use policy::{Limits, Revision};
pub use server::{serve, Insecure, Running, ServeConfig, Server, TlsError, TlsFiles};
pub use store::{
    Backend, Claim, Database, Delivery, DeliveryKind, DeliveryState, Execution, LinkOutcome,
    LinkTask, OperatorNotice, Role, Route, StoreError, TaskSource, Turn, Window,
};
pub use telemetry::{InvalidTraceparent, TraceContext};
pub use worker::{NotifyConfig, WorkerConfig};
