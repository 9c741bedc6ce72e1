//! Read models, each named for its reader: one session's lists for the
//! API and the console (`session`), the console's list of sessions
//! (`sessions`) and each one's status (`status`), a session's notices
//! with their operator rows (`notices`), one session's timeline
//! (`timeline`), the whole deployment's counts for `status` and
//! `/metrics` (`overview`), and the operator's overview strip and
//! `GET /v1/overview` (`pulse`). They only read; every write is in the
//! table modules.

pub(crate) mod notices;
pub(crate) mod overview;
pub(crate) mod pulse;
pub(crate) mod session;
pub(crate) mod sessions;
pub(crate) mod status;
pub(crate) mod timeline;
