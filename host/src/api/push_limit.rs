//! Rate limits on the A2A push route, the one route meant to face agents
//! on the internet: one per push token and one for the whole server.
//!
//! The server-wide limit is taken before anything else (no database read
//! for a flood); the per-token one after the token is checked, and keyed
//! by its digest, so a caller with a wrong token can neither grow the
//! limiter's table nor spend a real token's allowance. Past either the
//! answer is 429 with `Retry-After` (`rate-limited`).
//!
//! The buckets are `governor`'s (GCRA): a rate of `N/s` admits bursts of
//! `N` and then one every `1/N` s.

use derive_setters::Setters;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::ApiError;

/// `--push-rate`'s default: twenty pushes a second per token, far above
/// what one task's status updates need.
pub const DEFAULT_PUSH_RATE: &str = "20/s";
/// `--push-rate-total`'s default: a thousand pushes a second in all, above
/// the engine's sustained intake.
pub const DEFAULT_PUSH_RATE_TOTAL: &str = "1000/s";

/// Past this many tokens, idle ones are forgotten (a full bucket holds no
/// state worth keeping).
const FORGET_PAST: usize = 10_000;

/// A rate: `count` requests per `per`, written `N/s`, `N/m` or `N/h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests per period, and the burst admitted at once.
    pub count: NonZeroU32,
    /// The period.
    pub per: Duration,
}

impl Rate {
    /// Parses `N/s`, `N/m`, `N/h`; `0` is no limit (`None`).
    pub fn parse(text: &str) -> Result<Option<Rate>, String> {
        let text = text.trim();
        if text == "0" {
            return Ok(None);
        }
        let refuse = || format!("{text:?} is not a rate: write `20/s`, `600/m`, `1000/h` or `0`");
        let (count, unit) = text.split_once('/').ok_or_else(refuse)?;
        let count = count.trim().parse::<u32>().map_err(|_| refuse())?;
        let per = match unit.trim() {
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            _ => return Err(refuse()),
        };
        Ok(NonZeroU32::new(count).map(|count| Rate { count, per }))
    }

    fn quota(self) -> Quota {
        let each = self.per / self.count.get();
        // A period too short to count in nanoseconds is no limit worth
        // the name; the largest rate governor takes stands for it.
        Quota::with_period(each.max(Duration::from_nanos(1)))
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
            .allow_burst(self.count)
    }
}

/// The push route's limits (`serve --push-rate`, `--push-rate-total`);
/// `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Setters)]
#[setters(prefix = "with_")]
#[non_exhaustive]
pub struct PushLimits {
    /// Per push token.
    pub per_token: Option<Rate>,
    /// For the whole server.
    pub total: Option<Rate>,
}

impl Default for PushLimits {
    fn default() -> Self {
        let rate = |text| Rate::parse(text).ok().flatten();
        Self {
            per_token: rate(DEFAULT_PUSH_RATE),
            total: rate(DEFAULT_PUSH_RATE_TOTAL),
        }
    }
}

/// The buckets of one server.
pub struct PushLimiter {
    total: Option<DefaultDirectRateLimiter>,
    per_token: Option<DefaultKeyedRateLimiter<String>>,
}

impl std::fmt::Debug for PushLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushLimiter")
            .field("total", &self.total.is_some())
            .field("per_token", &self.per_token.is_some())
            .finish()
    }
}

impl PushLimiter {
    /// Buckets for `limits`, all full.
    pub fn new(limits: PushLimits) -> Self {
        Self {
            total: limits.total.map(|r| RateLimiter::direct(r.quota())),
            per_token: limits.per_token.map(|r| RateLimiter::keyed(r.quota())),
        }
    }

    /// Takes one push from the server-wide bucket.
    pub fn admit_any(&self) -> Result<(), ApiError> {
        match &self.total {
            Some(limiter) => limiter.check().map_err(refused),
            None => Ok(()),
        }
    }

    /// Takes one push from the bucket of the token whose digest is `key`.
    pub fn admit_token(&self, key: &str) -> Result<(), ApiError> {
        let Some(limiter) = &self.per_token else {
            return Ok(());
        };
        if limiter.len() > FORGET_PAST {
            limiter.retain_recent();
        }
        limiter.check_key(&key.to_owned()).map_err(refused)
    }
}

/// A 429 telling when the bucket next admits a push, in whole seconds.
fn refused(not_until: governor::NotUntil<<DefaultClock as Clock>::Instant>) -> ApiError {
    let wait = not_until.wait_time_from(DefaultClock::default().now());
    let retry_after_secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    ApiError::RateLimited {
        retry_after_secs: retry_after_secs.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_a_count_per_unit_or_zero() {
        let rate = Rate::parse("20/s").expect("parsed").expect("limited");
        assert_eq!((rate.count.get(), rate.per), (20, Duration::from_secs(1)));
        assert_eq!(
            Rate::parse(" 600/m ").expect("parsed").map(|r| r.per),
            Some(Duration::from_secs(60))
        );
        assert_eq!(Rate::parse("0"), Ok(None));
        for bad in ["20", "20/d", "x/s", "-1/s", ""] {
            assert!(Rate::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    /// An hour's rate so no bucket refills while the test runs.
    #[test]
    fn a_token_past_its_burst_is_refused_and_another_is_not() {
        let limits = PushLimits {
            per_token: Rate::parse("2/h").expect("parsed"),
            total: Rate::parse("3/h").expect("parsed"),
        };
        let limiter = PushLimiter::new(limits);
        let (one, two) = ("one", "two");
        assert!(limiter.admit_token(one).is_ok());
        assert!(limiter.admit_token(one).is_ok());
        match limiter.admit_token(one) {
            Err(ApiError::RateLimited { retry_after_secs }) => {
                assert!((1..=1800).contains(&retry_after_secs), "{retry_after_secs}")
            }
            other => panic!("third push of one token: {other:?}"),
        }
        assert!(limiter.admit_token(two).is_ok(), "another token's bucket");
        for _ in 0..3 {
            assert!(limiter.admit_any().is_ok());
        }
        assert!(matches!(
            limiter.admit_any(),
            Err(ApiError::RateLimited { .. })
        ));
        let open = PushLimiter::new(PushLimits {
            per_token: None,
            total: None,
        });
        for _ in 0..100 {
            assert!(open.admit_any().is_ok() && open.admit_token(one).is_ok());
        }
    }
}
