//! The protocols' own shapes of a task's status, read into the few facts
//! the engine records: which task, its state verbatim, the text a note
//! should carry.
//!
//! Why a module of its own: A2A (1.0's protobuf JSON and 0.3's `kind`
//! discriminated JSON) and MCP Tasks (the 2025-11-25 experimental tasks and
//! the 2026 `io.modelcontextprotocol/tasks` extension) each say the same
//! few things in different words, and the API's receivers should not know
//! which words. Everything here is pure: parsing and mapping, no database,
//! no HTTP. What a state means (terminal, a person's) stays the policy's
//! decision: states are passed on as the protocol spells them.
//!
//! - `a2a`: push bodies and `GetTask` answers of both versions → [`a2a::TaskUpdate`].
//! - `mcp`: task objects, tool results and status notifications of both
//!   versions, bare or in their JSON-RPC envelope → [`mcp::McpUpdate`].
//! - `result`: the text a note carries, gathered and capped.

pub mod a2a;
pub mod mcp;
pub mod result;

#[cfg(test)]
mod captures;

/// A body that is none of the shapes a receiver takes.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtocolError {
    /// Not JSON, or JSON of no known shape; says what was expected.
    #[error("not {expected}: {reason}")]
    Shape {
        /// The shape the receiver takes (`an A2A push body`, ...).
        expected: &'static str,
        /// What is wrong with this one.
        reason: String,
    },
    /// The body names another task than the one it was sent for.
    #[error("the body names task {named:?}, not {expected:?}")]
    OtherTask {
        /// The task the caller expected.
        expected: String,
        /// The task the body names.
        named: String,
    },
}

/// A JSON string field of `value`, if it is one and not empty.
fn text_field<'a>(value: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    value
        .get(key)
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
}
