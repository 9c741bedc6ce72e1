//! What every console handler reaches.

use std::sync::Arc;

use super::candidates::Candidates;
use crate::api::AppState;

/// The API's state (the same store, policy, clock and tokens), and the
/// candidates held for the playground.
#[derive(Clone)]
pub(super) struct Console {
    pub(super) app: AppState,
    pub(super) candidates: Arc<Candidates>,
}
