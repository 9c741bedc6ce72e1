//! Shared support for the integration tests.
