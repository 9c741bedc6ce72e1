//! The time the worker acts on, injectable so tests can move it by hand
//! instead of sleeping.

use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// A source of "now".
pub trait Clock: Send + Sync {
    /// The current time, in UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

#[cfg(any(test, feature = "test-support"))]
/// A clock that only moves when told to; for tests and the demo.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

#[cfg(any(test, feature = "test-support"))]
impl ManualClock {
    /// A clock that reads `start` until it is advanced or set.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward (or back, with a negative duration).
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        *now += by;
    }

    /// Sets the clock.
    #[cfg(feature = "test-support")]
    pub fn set(&self, to: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = to;
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A local clock corrected by an offset to another clock, so that every
/// replica times assent windows by one clock: the database's.
///
/// Why: `opened_at` is stamped by the replica that took the approval and
/// `now` by the replica that plans; with each on its own wall clock, a skew
/// of two seconds drops a failure that arrives in the window's first two
/// seconds (or continues one just after it expired). The offset is measured
/// against the database ([`OffsetClock::sync`]) at start-up and then
/// periodically, so replicas agree to within a round trip.
pub struct OffsetClock {
    local: std::sync::Arc<dyn Clock>,
    offset: Mutex<Duration>,
}

impl OffsetClock {
    /// No offset until the first [`OffsetClock::sync`].
    pub fn new(local: std::sync::Arc<dyn Clock>) -> Self {
        Self {
            local,
            offset: Mutex::new(Duration::zero()),
        }
    }

    /// Measures the offset to `reference` (read once, between two local
    /// readings whose midpoint it is compared with) and keeps it. Returns it.
    pub async fn sync<F, E>(&self, reference: F) -> Result<Duration, E>
    where
        F: std::future::Future<Output = Result<DateTime<Utc>, E>>,
    {
        let before = self.local.now();
        let remote = reference.await?;
        let after = self.local.now();
        let offset = remote - (before + (after - before) / 2);
        *self.offset.lock().unwrap_or_else(|p| p.into_inner()) = offset;
        Ok(offset)
    }

    /// The offset in force.
    pub fn offset(&self) -> Duration {
        *self.offset.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        self.local.now() + self.offset()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn offset_clock_follows_its_reference() {
        let start = DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000);
        let local = Arc::new(ManualClock::new(start - Duration::seconds(2)));
        let clock = OffsetClock::new(local.clone());
        assert_eq!(clock.now(), start - Duration::seconds(2));
        let offset = clock
            .sync(async { Ok::<_, std::convert::Infallible>(start) })
            .await
            .unwrap_or(Duration::zero());
        assert_eq!(offset, Duration::seconds(2));
        assert_eq!(clock.now(), start);
        local.advance(Duration::seconds(5));
        assert_eq!(clock.now(), start + Duration::seconds(5));
    }
}
