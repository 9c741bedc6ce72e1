//! Where the store's rows meet the policy's types: the mappings the worker
//! builds decision inputs with (`.into()`, never field by field).
//!
//! Why here and not in `policy/`: the sandbox knows no database, and the
//! store knows nothing above it; the worker is the one place that holds both.

use crate::policy::types as t;
use crate::store;

impl From<store::Route> for t::ApprovalRoute {
    fn from(route: store::Route) -> Self {
        match route {
            store::Route::Button => t::ApprovalRoute::Button,
            store::Route::Chat => t::ApprovalRoute::Chat,
            store::Route::Api => t::ApprovalRoute::Api,
        }
    }
}

/// A window row as the policy sees it. Whether the row is still open (a
/// denial closes it) is the caller's question, not this mapping's.
impl From<&store::Window> for t::Window {
    fn from(row: &store::Window) -> Self {
        t::Window {
            opened_at: row.opened_at.into(),
            expires_at: row.expires_at.into(),
            route: row.route.into(),
        }
    }
}
