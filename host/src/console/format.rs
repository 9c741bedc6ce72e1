//! How the console writes what it shows: times and windows in one form
//! everywhere (so a timeline reads in order), revisions shortened, and a
//! template turned into a fragment or an error.

use axum::response::Html;
use chrono::{DateTime, Utc};

use crate::api::ApiError;
use crate::store::Window;

/// A time to the millisecond, in UTC.
pub fn at(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S%.3fZ").to_string()
}

/// A window's state at `now`, as a CSS class and a phrase.
pub fn window_state(window: Option<&Window>, now: DateTime<Utc>) -> (&'static str, String) {
    match window {
        None => ("none", "never approved".into()),
        Some(w) => match w.closed_at {
            Some(closed) => ("closed", format!("denied at {}", at(closed))),
            None if w.is_open_at(now) => ("open", format!("open until {}", at(w.expires_at))),
            None => ("closed", format!("expired at {}", at(w.expires_at))),
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
        let at_ = |w: &Window, now| window_state(Some(w), t(now));
        assert_eq!(
            at_(&window, "2026-12-01T04:10:00Z"),
            ("open", "open until 2026-12-01 04:30:00.000Z".to_owned())
        );
        assert_eq!(
            at_(&window, "2026-12-01T04:30:00Z"),
            ("closed", "expired at 2026-12-01 04:30:00.000Z".to_owned())
        );
        window.closed_at = Some(t("2026-12-01T04:05:00Z"));
        assert_eq!(
            at_(&window, "2026-12-01T04:10:00Z"),
            ("closed", "denied at 2026-12-01 04:05:00.000Z".to_owned())
        );
        assert_eq!(window_state(None, t("2026-12-01T04:10:00Z")).0, "none");
    }
}
