//! The store on both backends: conformance of every query, the
//! set-at-a-time functions the worker uses, the chat history, and the
//! migrations on a live database.
//! One binary for these (and one for each other group) so CI links four
//! test binaries, not sixteen.

#[path = "chat_history.rs"]
mod chat_history;
#[path = "decision_log.rs"]
mod decision_log;
#[path = "live_migration.rs"]
mod live_migration;
#[path = "store_batch.rs"]
mod store_batch;
#[path = "store_conformance.rs"]
mod store_conformance;
#[path = "store_plan_set.rs"]
mod store_plan_set;
#[path = "store_sessions.rs"]
mod store_sessions;
#[path = "store_shadow.rs"]
mod store_shadow;
