//! The store on both backends: conformance of every query, the
//! set-at-a-time functions the worker uses, and the chat history.
//! One binary for these (and one for each other group) so CI links four
//! test binaries, not sixteen.

#[path = "chat_history.rs"]
mod chat_history;
#[path = "store_batch.rs"]
mod store_batch;
#[path = "store_conformance.rs"]
mod store_conformance;
