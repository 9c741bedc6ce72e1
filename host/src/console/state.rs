//! What every console handler reaches.

use std::sync::Arc;

use axum::http::HeaderMap;

use super::candidates::Candidates;
use crate::api::{bearer, AppState, Scope};

/// The API's state (the same store, policy, clock and tokens), and the
/// candidates held for the playground.
#[derive(Clone)]
pub(super) struct Console {
    pub(super) app: AppState,
    pub(super) candidates: Arc<Candidates>,
}

impl Console {
    /// The widest scope the request's token opens (with no token
    /// configured, every scope): what the page offers to do.
    pub(super) fn scope(&self, headers: &HeaderMap) -> Option<Scope> {
        self.app.auth.widest(bearer(headers))
    }

    /// One line saying what the request's token may do, for the page.
    pub(super) fn signed_in(&self, headers: &HeaderMap) -> &'static str {
        match (self.app.auth.is_enforced(), self.scope(headers)) {
            (false, _) => "No token is set: this console may do everything (loopback only).",
            (true, Some(Scope::Admin)) => {
                "Signed in with the admin token: reads, retries and drops deliveries, changes \
                 the policy."
            }
            (true, Some(Scope::Runtime)) => {
                "Signed in with the runtime's token: reads and retries; dropping a delivery \
                 and changing the policy need the admin token."
            }
            (true, _) => "Signed in with the read token: this console shows, and changes nothing.",
        }
    }
}
