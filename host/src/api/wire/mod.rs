//! The API's wire types: one per request and response shape.
//!
//! Why a set of its own: the store's rows carry what the engine needs to
//! keep its promises (leases, fencing tokens, claim and shortage counts);
//! none of that is an integrator's business, and a renamed column must not
//! change the contract. Handlers build these from the store's types, the
//! OpenAPI document (`openapi.rs`) is generated from them, and a test fails
//! when the committed `docs/openapi.json` differs from what they generate.
//!
//! Every field's doc comment is its description in the document.

mod ledger;
mod overview;
mod policy;
mod problem;
mod session;
mod tasks;

pub use ledger::*;
pub use overview::*;
pub use policy::*;
pub use problem::*;
pub use session::*;
pub use tasks::*;

use serde::Serialize;
use utoipa::ToSchema;

/// One page of a list, newest or oldest first as the route says.
///
/// `next_cursor` continues the list (pass it back as `?cursor=`); `null`
/// when this page is the last. Cursors are opaque and stay valid while rows
/// are added.
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    /// The rows of this page.
    pub items: Vec<T>,
    /// The cursor of the next page, or `null` on the last page.
    pub next_cursor: Option<String>,
}

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// Always `ok`: the process answers.
    pub status: String,
}

/// `GET /readyz`: what the server needs to serve, each checked now.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// All of the below.
    pub ready: bool,
    /// The database answered.
    pub database: bool,
    /// It is migrated to this build's latest migration.
    pub migrated: bool,
    /// The active policy revision, or `null` if the policy did not answer.
    pub policy_revision: Option<String>,
}
