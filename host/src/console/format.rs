//! How the console writes what it shows: times and windows in one form
//! everywhere (so a timeline reads in order), long texts cut, revisions
//! shortened, and a template turned into a fragment or an error.

use axum::response::Html;
use chrono::{DateTime, Utc};

use crate::api::ApiError;
use crate::policy::PolicyTaskFailed;
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

/// Text cut to `max` bytes at a character boundary, and how much was cut,
/// so a megabyte result does not make a page of megabytes.
pub fn excerpt(text: &str, max: usize) -> (String, usize) {
    if text.len() <= max {
        return (text.to_owned(), 0);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), text.len() - end)
}

/// The first 12 characters of a revision's hash, as the CLI shows it.
pub fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// A policy call whose task died: a 503, as the API answers it.
pub fn task_failed(e: PolicyTaskFailed) -> ApiError {
    ApiError::PolicyUnavailable(format!("policy task failed: {e}"))
}
