//! Shared support for the integration tests.
pub mod db;
pub mod http;
