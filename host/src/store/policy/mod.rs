//! The policy's tables: its revisions and the active one (`revisions`),
//! the shadow revision and its disagreements (`shadow`), the decision log
//! (`decisions`) and the status classes each revision answered
//! (`classes`). The store keeps bytes and answers; running a revision is
//! the sandbox's business, never the store's.

pub(crate) mod classes;
pub(crate) mod decisions;
pub(crate) mod revisions;
pub(crate) mod shadow;
