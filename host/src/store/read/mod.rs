//! Read models, each named for its reader: one session's lists for the
//! API and the console (`session`), the console's list of sessions
//! (`sessions`), one session's timeline (`timeline`), and the whole
//! deployment's counts for `status` and `/metrics` (`overview`). They
//! only read; every write is in the table modules.

pub(crate) mod overview;
pub(crate) mod session;
pub(crate) mod sessions;
pub(crate) mod timeline;
