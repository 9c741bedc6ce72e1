//! The one way a test waits for something another task or process does:
//! look at it again and again until it holds, within a bound that guards
//! against a hung test and is never the thing measured.
//!
//! Why polling and not a sleep: a sleep assumes how long the other side
//! takes; a look asks what it did. The bound is generous (a debug build on
//! a loaded two-core machine) and only turns a hang into a failure that
//! names what was waited for.

use std::time::Duration;

/// How long a test waits for anything before it fails.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The pause between two looks.
const LOOK: Duration = Duration::from_millis(10);

/// Looks with `check` until it answers `Some`, and returns that; panics
/// naming `what` after [`PATIENCE`].
pub async fn until<T>(what: &str, check: impl AsyncFnMut() -> Option<T>) -> T {
    within(PATIENCE, what, check).await
}

/// [`until`] with a bound of its own (a process start on a cold machine).
pub async fn within<T>(patience: Duration, what: &str, check: impl AsyncFnMut() -> Option<T>) -> T {
    match try_within(patience, check).await {
        Some(value) => value,
        None => panic!("gave up after {patience:?} waiting for {what}"),
    }
}

/// [`within`] that answers `None` when the bound passes, for a caller
/// that has more to say about the failure (a process's output).
pub async fn try_within<T>(
    patience: Duration,
    mut check: impl AsyncFnMut() -> Option<T>,
) -> Option<T> {
    let looking = async {
        loop {
            if let Some(value) = check().await {
                return value;
            }
            tokio::time::sleep(LOOK).await;
        }
    };
    tokio::time::timeout(patience, looking).await.ok()
}

/// Looks with `ready` until it holds; panics naming `what` after
/// [`PATIENCE`].
pub async fn until_true(what: &str, mut ready: impl AsyncFnMut() -> bool) {
    until(what, async || ready().await.then_some(())).await;
}
