//! How the console writes what it shows: times and windows in one form
//! everywhere (so a timeline reads in order), revisions shortened, and a
//! template turned into a fragment or an error.
//!
//! A time on a view is a [`Moment`]: its age ("3 min ago", "in 12 min")
//! as text, readable without the script, inside a `<time>` whose
//! `datetime` and `title` (shown on hover) are the exact UTC time. The
//! page's script writes the ages again as time passes, in the same words
//! ([`age`] and `console.js`'s `age` must agree), against the server's
//! clock (the [`NOW_HEADER`] of each fragment), not the browser's.

use std::fmt;

use askama::filters::HtmlSafe;
use axum::response::Html;
use chrono::{DateTime, SecondsFormat, Utc};

use crate::api::ApiError;
use crate::store::Window;

/// A time to the millisecond, in UTC.
pub fn at(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S%.3fZ").to_string()
}

/// The header each fragment carries with the server's clock at the
/// time it was rendered (RFC 3339, milliseconds), so that the script ages
/// times against the clock that rendered them.
pub const NOW_HEADER: &str = "x-console-now";

/// The time `t` is from `now`, in the console's words: "now" within a
/// second, then seconds, minutes, hours, and days past two days; "… ago"
/// in the past, "in …" in the future. Counted in whole units, rounded
/// down.
pub fn age(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let ms = (t - now).num_milliseconds();
    let s = ms.unsigned_abs() / 1000;
    let span = match s {
        0 => return "now".into(),
        1..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..172_800 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    };
    if ms < 0 {
        format!("{span} ago")
    } else {
        format!("in {span}")
    }
}

/// A time as a view shows it (see the module docs); nothing for `None`.
/// Written into a template as it is: it escapes nothing because it holds
/// no text but digits and the words of [`age`].
#[derive(Clone, Copy)]
pub struct Moment {
    at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
}

impl Moment {
    /// `t`, aged at `now`.
    pub fn new(t: DateTime<Utc>, now: DateTime<Utc>) -> Moment {
        Moment { at: Some(t), now }
    }

    /// `t` if there is one; an empty cell otherwise.
    pub fn maybe(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Moment {
        Moment { at: t, now }
    }
}

impl fmt::Display for Moment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(t) = self.at else { return Ok(()) };
        write!(
            f,
            r#"<time datetime="{}" title="{} UTC">{}</time>"#,
            t.to_rfc3339_opts(SecondsFormat::Millis, true),
            t.format("%Y-%m-%d %H:%M:%S%.3f"),
            age(t, self.now)
        )
    }
}

impl HtmlSafe for Moment {}

/// A window's state as a view shows it: a phrase with a [`Moment`] in it.
#[derive(Clone, Copy)]
pub struct WindowPhrase {
    words: &'static str,
    at: Option<Moment>,
}

impl fmt::Display for WindowPhrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some(at) => write!(f, "{} {at}", self.words),
            None => f.write_str(self.words),
        }
    }
}

impl HtmlSafe for WindowPhrase {}

/// A window's state at `now`, as a CSS class and a phrase.
pub fn window_state(window: Option<&Window>, now: DateTime<Utc>) -> (&'static str, WindowPhrase) {
    let phrase = |words, t| WindowPhrase {
        words,
        at: Some(Moment::new(t, now)),
    };
    match window {
        None => (
            "none",
            WindowPhrase {
                words: "never approved",
                at: None,
            },
        ),
        Some(w) => match w.closed_at {
            Some(closed) => ("closed", phrase("denied", closed)),
            None if w.is_open_at(now) => ("open", phrase("open, closes", w.expires_at)),
            None => ("closed", phrase("expired", w.expires_at)),
        },
    }
}

/// Renders a template into a fragment; a template that fails to render is
/// a bug, answered as a 500 with its message.
pub fn render(template: &impl askama::Template) -> Result<Html<String>, ApiError> {
    template
        .render()
        .map(Html)
        .map_err(|e| ApiError::Internal(format!("console template: {e}")))
}

/// The first 12 characters of a revision's hash, as the CLI shows it.
pub fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_is_shown_by_its_first_twelve_characters() {
        assert_eq!(short("0123456789abcdef"), "0123456789ab");
        assert_eq!(short("abc"), "abc");
    }

    #[test]
    fn a_window_reads_open_denied_or_expired_at_the_time_given() {
        let t = |s: &str| s.parse::<DateTime<Utc>>().expect("a time");
        let mut window = Window {
            session_id: uuid::Uuid::nil(),
            opened_at: t("2026-12-01T04:00:00Z"),
            expires_at: t("2026-12-01T04:30:00Z"),
            route: crate::store::Route::Button,
            continuations: 0,
            closed_at: None,
            updated_at: t("2026-12-01T04:00:00Z"),
        };
        let at_ = |w: &Window, now| {
            let (class, phrase) = window_state(Some(w), t(now));
            (class, phrase.to_string())
        };
        let time = |iso: &str, title: &str, age: &str| {
            format!(r#"<time datetime="{iso}" title="{title} UTC">{age}</time>"#)
        };
        let expires = ("2026-12-01T04:30:00.000Z", "2026-12-01 04:30:00.000");
        assert_eq!(
            at_(&window, "2026-12-01T04:10:00Z"),
            (
                "open",
                format!("open, closes {}", time(expires.0, expires.1, "in 20 min"))
            )
        );
        assert_eq!(
            at_(&window, "2026-12-01T04:30:00Z"),
            (
                "closed",
                format!("expired {}", time(expires.0, expires.1, "now"))
            )
        );
        window.closed_at = Some(t("2026-12-01T04:05:00Z"));
        let denied = time(
            "2026-12-01T04:05:00.000Z",
            "2026-12-01 04:05:00.000",
            "5 min ago",
        );
        assert_eq!(
            at_(&window, "2026-12-01T04:10:00Z"),
            ("closed", format!("denied {denied}"))
        );
        assert_eq!(window_state(None, t("2026-12-01T04:10:00Z")).0, "none");
        assert_eq!(
            Moment::maybe(None, t("2026-12-01T04:10:00Z")).to_string(),
            ""
        );
    }

    #[test]
    fn an_age_is_counted_in_whole_units_before_or_after_now() {
        let now = "2026-12-01T04:00:00Z"
            .parse::<DateTime<Utc>>()
            .expect("a time");
        let cases = [
            (0, "now"),
            (-999, "now"),
            (999, "now"),
            (-1_000, "1 s ago"),
            (59_999, "in 59 s"),
            (-60_000, "1 min ago"),
            (12 * 60_000 + 59_000, "in 12 min"),
            (-3_600_000, "1 h ago"),
            (47 * 3_600_000, "in 47 h"),
            (-48 * 3_600_000, "2 days ago"),
            (10 * 86_400_000, "in 10 days"),
        ];
        for (ms, words) in cases {
            let t = now + chrono::Duration::milliseconds(ms);
            assert_eq!(age(t, now), words, "{ms} ms");
        }
    }
}
