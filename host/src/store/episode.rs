//! A failure episode of one loop that uses the database: logged once when
//! it starts, with its cause, and once when it ends, with how long it
//! lasted and how many attempts failed meanwhile.
//!
//! Why: when the database is unreachable, out of connections or out of
//! disk, every loop (worker passes, lease renewals, records, the rescuer,
//! the notifier, the heartbeat) fails on every try, several times a
//! second. One line per failed try would bury the cause an operator needs
//! under thousands of copies of it; no line would hide the outage. So each
//! loop keeps one `Episode`: the first failure is logged at `warn` with its
//! error, the others only at `debug`, and the first success after them
//! logs the end. Why here: every loop that logs a database failure uses the
//! store, and no other module is shared by all of them.

use std::fmt::Display;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// One loop's failure episode (see the module doc). Shared by the tasks of
/// one loop (behind an `Arc`), so that their failures make one episode.
#[derive(Debug)]
pub struct Episode {
    what: &'static str,
    open: Mutex<Option<Open>>,
}

#[derive(Debug)]
struct Open {
    since: Instant,
    failures: u64,
}

impl Episode {
    /// An episode of `what` (a loop's name as an operator reads it: "worker
    /// pass", "lease renewal"), not started.
    pub const fn new(what: &'static str) -> Self {
        Self {
            what,
            open: Mutex::new(None),
        }
    }

    /// A failed try: starts the episode (logged at `warn` with `error`) or
    /// counts one more failure in it (logged at `debug` only).
    pub fn failed(&self, error: &dyn Display) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        match open.as_mut() {
            Some(open) => {
                open.failures += 1;
                tracing::debug!(what = self.what, "{} failed again: {error}", self.what);
            }
            None => {
                *open = Some(Open {
                    since: Instant::now(),
                    failures: 1,
                });
                tracing::warn!(
                    what = self.what,
                    "{} failed: {error}; retrying, logged again when it succeeds",
                    self.what
                );
            }
        }
    }

    /// A try that worked: ends the episode, if one is open, with one line.
    pub fn succeeded(&self) {
        let ended = self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(open) = ended {
            let lasted = open.since.elapsed();
            tracing::warn!(
                what = self.what,
                failures = open.failures,
                "{} works again after {:.1} s and {} failed tries",
                self.what,
                lasted.as_secs_f64(),
                open.failures
            );
        }
    }

    /// Records `result`'s outcome (see [`Self::failed`], [`Self::succeeded`])
    /// and passes it on.
    pub fn observe<T, E: Display>(&self, result: Result<T, E>) -> Result<T, E> {
        match &result {
            Ok(_) => self.succeeded(),
            Err(e) => self.failed(e),
        }
        result
    }
}
