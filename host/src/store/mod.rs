//! Storage.
