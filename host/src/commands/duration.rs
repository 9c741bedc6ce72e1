//! One way to write a duration on the command line: a number and a unit
//! (`250ms`, `6s`, `10m`, `7d`, `1h 30m`), or `0` for what zero has always
//! meant to the flag (off, or kept for ever). A bare number other than `0`
//! is refused rather than guessed: `--lease 6` could mean seconds or days.
//!
//! The flags that took a unit in their name (`--poll-ms`, `--lease-secs`,
//! `--decision-log-days`, …) still work for a release, hidden from the
//! help; each use logs one deprecation line naming its replacement.

use std::time::Duration;

/// Parses a duration flag's value (see the module's doc).
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.parse::<u64>().is_ok() {
        return Err(format!(
            "{text:?} needs a unit: `{text}s`, `{text}m`, `{text}d`, `{text}ms` (only `0` may \
             go without one)"
        ));
    }
    humantime::parse_duration(text).map_err(|e| format!("{text:?} is not a duration: {e}"))
}

/// A unit one of the deprecated flags is counted in.
#[derive(Debug, Clone, Copy)]
pub enum Unit {
    Millis,
    Secs,
    Days,
}

impl Unit {
    fn of(self, count: u64) -> Duration {
        match self {
            Unit::Millis => Duration::from_millis(count),
            Unit::Secs => Duration::from_secs(count),
            Unit::Days => Duration::from_secs(count.saturating_mul(24 * 3600)),
        }
    }
}

/// A deprecated flag's value, if given: the flag's count in its unit;
/// `None` takes the new flag's. Logs which flag replaces it.
pub fn legacy(old: Option<u64>, unit: Unit, names: (&str, &str), current: Duration) -> Duration {
    let Some(count) = old else {
        return current;
    };
    deprecated(names, unit.of(count))
}

/// [`legacy`] for the `-days` retention flags, which also took a duration
/// (`12h`) beside a bare count of days.
pub fn legacy_days(old: Option<&str>, names: (&str, &str), current: Duration) -> Duration {
    let Some(text) = old else {
        return current;
    };
    let kept = match text.trim().parse::<u64>() {
        Ok(days) => Unit::Days.of(days),
        // Checked by `days_or_duration` at parse time.
        Err(_) => parse(text).unwrap_or(current),
    };
    deprecated(names, kept)
}

/// Logs that the old of `names` was given, with the new flag's value
/// written the new way, and answers `value`.
fn deprecated((old_name, new_name): (&str, &str), value: Duration) -> Duration {
    tracing::warn!(
        "{old_name} is deprecated and goes in a later release: use {new_name} with a unit \
         (`{new_name} {}`)",
        humantime::format_duration(value)
    );
    value
}

/// The `-days` flags' value parser: a bare count of days, or a duration.
pub fn days_or_duration(text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    if trimmed.parse::<u64>().is_ok() || parse(trimmed).is_ok() {
        return Ok(trimmed.to_owned());
    }
    Err(format!(
        "{trimmed:?} is neither a number of days nor a duration"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_has_a_unit_and_zero_needs_none() {
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse(" 6s "), Ok(Duration::from_secs(6)));
        assert_eq!(parse("7d"), Ok(Duration::from_secs(7 * 24 * 3600)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        let bare = parse("6").expect_err("refused");
        assert!(
            bare.contains("needs a unit") && bare.contains("`6s`"),
            "{bare}"
        );
        let junk = parse("soon").expect_err("refused");
        assert!(junk.contains("not a duration"), "{junk}");
    }

    #[test]
    fn a_deprecated_flag_keeps_its_unit() {
        let names = ("--old", "--new");
        let current = Duration::from_secs(1);
        assert_eq!(legacy(None, Unit::Millis, names, current), current);
        assert_eq!(
            legacy(Some(1500), Unit::Millis, names, current),
            Duration::from_millis(1500)
        );
        assert_eq!(legacy(Some(0), Unit::Secs, names, current), Duration::ZERO);
        assert_eq!(
            legacy_days(Some("7"), names, current),
            Duration::from_secs(7 * 24 * 3600)
        );
        assert_eq!(
            legacy_days(Some("12h"), names, current),
            Duration::from_secs(12 * 3600)
        );
        assert_eq!(legacy_days(Some("0"), names, current), Duration::ZERO);
        assert!(days_or_duration("7 weeks ago").is_err());
    }
}
