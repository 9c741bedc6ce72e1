//! The store on both backends: conformance of every query, the
//! set-at-a-time functions the worker uses, the chat history, the
//! retention of tool output, and the migrations on a live database.
//! One binary for these (and one for each other group) so CI links four
//! test binaries, not sixteen.

mod cancelled_begin;
mod chat_history;
mod decision_log;
mod history;
mod hot_plans;
mod live_migration;
mod lock_order;
mod retention;
mod store_batch;
mod store_conformance;
mod store_overview;
mod store_plan_set;
mod store_sessions;
mod store_shadow;
mod upkeep;
