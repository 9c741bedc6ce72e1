//! Shared support for the integration tests.
pub mod agents;
pub mod api;
pub mod db;
pub mod http;
pub mod replica;
