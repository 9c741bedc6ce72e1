//! The sessions view: the overview strip (`overview`), then a page of
//! sessions, newest first, each with its status, filtered by a list filter
//! or a status, or the one session a session or execution id names.

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Html;
use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::format::{plain, render, span, window_state, Moment, WindowPhrase};
use super::overview::Strip;
use super::state::Console;
use crate::api::{parse_id, ApiError};
use crate::store::{Judged, Page, SessionCursor, SessionFilter, SessionRow, SessionStatus};

/// Rows per page in every console list: enough to scan, small enough that
/// a page is a few index probes per row.
pub(super) const PAGE: u32 = 50;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    filter: Option<String>,
    status: Option<String>,
    q: Option<String>,
    cursor: Option<String>,
}

struct FilterLink {
    name: &'static str,
    href: String,
    current: bool,
}

pub(super) struct RowView {
    pub(super) id: String,
    pub(super) first_seen: Moment,
    pub(super) window_class: &'static str,
    pub(super) window: WindowPhrase,
    pub(super) in_flight: i64,
    pub(super) pending: i64,
    pub(super) failed: i64,
    pub(super) failed_executions: i64,
    pub(super) notices: i64,
    pub(super) status: &'static str,
    pub(super) status_text: String,
    pub(super) trouble: bool,
    pub(super) last_reason: String,
    pub(super) last_activity: Moment,
}

#[derive(Template)]
#[template(path = "sessions.html")]
struct SessionsView {
    /// What the signed-in token may do.
    signed_in: &'static str,
    strip: Strip,
    filters: Vec<FilterLink>,
    statuses: Vec<FilterLink>,
    query: String,
    found: Option<String>,
    rows: Vec<RowView>,
    next: Option<String>,
}

pub(super) fn row_view(row: &SessionRow, now: DateTime<Utc>) -> RowView {
    let (window_class, window) = window_state(row.window.as_ref(), now);
    let status_text = match (row.status, row.waiting_since) {
        (SessionStatus::Waiting, Some(since)) => {
            format!("waiting {}", span((now - since).num_seconds()))
        }
        (status, _) => status.name().replace('-', " "),
    };
    RowView {
        id: row.session_id.to_string(),
        first_seen: Moment::new(row.first_seen_at, now),
        window_class,
        window,
        in_flight: row.in_flight,
        pending: row.pending,
        failed: row.failed,
        failed_executions: row.failed_executions,
        notices: row.notices,
        status: row.status.name(),
        status_text,
        trouble: row.status.is_trouble(),
        last_reason: row.last_reason.as_deref().map(plain).unwrap_or_default(),
        last_activity: Moment::new(row.last_activity, now),
    }
}

/// A page of sessions; with `q`, the one session it names or the session
/// an execution of that id is linked to.
pub(super) async fn list(
    State(console): State<Console>,
    query: Result<Query<ListQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Html<String>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let store = &console.app.store;
    let now = console.app.clock.now();
    let judged = Judged::at(now, console.app.stuck_after);
    let filter: SessionFilter = query.filter.as_deref().unwrap_or("all").parse()?;
    let status: Option<SessionStatus> = query.status.as_deref().map(str::parse).transpose()?;
    let search = query.q.as_deref().map(str::trim).unwrap_or("");
    let listing = search.is_empty();
    let filters = SessionFilter::ALL
        .into_iter()
        .map(|f| FilterLink {
            name: f.name(),
            href: format!("#/sessions?filter={}", f.name()),
            current: f == filter && status.is_none() && listing,
        })
        .collect();
    let statuses = SessionStatus::PRECEDENCE
        .into_iter()
        .map(|s| FilterLink {
            name: s.name(),
            href: format!("#/sessions?status={}", s.name()),
            current: Some(s) == status && listing,
        })
        .collect();
    let mut view = SessionsView {
        signed_in: console.signed_in(&headers),
        strip: Strip::of(store.pulse(now).await?),
        filters,
        statuses,
        query: search.to_owned(),
        found: None,
        rows: Vec::new(),
        next: None,
    };
    if !listing {
        let id = parse_id("search", search)?;
        let (row, found) = match store.session_row(id, judged).await? {
            Some(row) => (Some(row), format!("session {id}")),
            None => match store.session_of_execution(id).await? {
                Some(session) => (
                    store.session_row(session, judged).await?,
                    format!("execution {id} is linked to session {session}"),
                ),
                None => (
                    None,
                    format!("no session or linked execution has the id {id}"),
                ),
            },
        };
        view.rows = row.iter().map(|r| row_view(r, now)).collect();
        view.found = Some(found);
        return render(&view);
    }
    let cursor: Option<SessionCursor> = query.cursor.as_deref().map(str::parse).transpose()?;
    let Page { items, next } = store
        .sessions_page(filter, status, cursor, PAGE, judged)
        .await?;
    view.rows = items.iter().map(|r| row_view(r, now)).collect();
    let status_part = status.map(|s| format!("&status={s}")).unwrap_or_default();
    view.next = next.map(|c| {
        format!(
            "#/sessions?filter={}{status_part}&cursor={c}",
            filter.name()
        )
    });
    render(&view)
}
