//! The session reads: the list of sessions, one session (its window and
//! counts), and each of its lists as a sub-resource.
//!
//! # Paging
//!
//! Every list answers `{items, next_cursor}`: `?limit=N` (default
//! [`DEFAULT_PAGE_LIMIT`], at most [`MAX_PAGE_LIMIT`](crate::store::MAX_PAGE_LIMIT)) bounds a page, and
//! `?cursor=` (the previous page's `next_cursor`) continues after it. A
//! client that follows `next_cursor` until it is `null` sees every row
//! exactly once. Cursors are opaque keyset positions (see
//! `store::read::session`): stable while rows are added.

pub(super) mod writes;

use std::fmt::Display;
use std::str::FromStr;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use crate::api::error::{parse_id, ApiError};
use crate::api::wire::{self, Page, Session, SessionCounts, SessionItem};
use crate::api::AppState;
use crate::store::{
    check_limit, DeliveryCursor, Judged, LinkCursor, SessionCursor, SessionFilter, SessionStatus,
    StoreError, DEFAULT_PAGE_LIMIT,
};

/// A page's query string; an unknown parameter is a 400, so a misspelt
/// cursor does not silently answer the first page again.
#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(in crate::api) struct PageQuery {
    /// Most rows in the page (1 to 500, default 100).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// The previous page's `next_cursor`.
    cursor: Option<String>,
}

/// `GET /v1/sessions`'s query string.
#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(in crate::api) struct SessionsQuery {
    /// Which sessions: `all` (the default), `open` (a window open now),
    /// `in-flight` (an execution not settled yet), `failed` (a delivery
    /// that gave up), `notices` (a notice for the operator).
    #[param(pattern = "^(all|open|in-flight|failed|notices)$")]
    filter: Option<String>,
    /// Only the sessions showing this status now: `stuck`,
    /// `delivery-failed`, `dropped`, `execution-failed`, `waiting` or `ok`
    /// (one per session, by the precedence `SessionStatus` names); with
    /// `filter`, both must hold.
    #[param(pattern = "^(stuck|delivery-failed|dropped|execution-failed|waiting|ok)$")]
    status: Option<String>,
    /// Most rows in the page (1 to 500, default 100).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// The previous page's `next_cursor`.
    cursor: Option<String>,
}

/// The limit and the parsed cursor of a page's query.
fn page_args<C: FromStr<Err = StoreError>>(
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<(u32, Option<C>), ApiError> {
    let limit = check_limit(limit.unwrap_or(DEFAULT_PAGE_LIMIT))?;
    let cursor = cursor.map(str::parse).transpose()?;
    Ok((limit, cursor))
}

/// A store page on the wire.
fn wire_page<T, W: From<T>, C: Display>(page: crate::store::Page<T, C>) -> Page<W> {
    Page {
        items: page.items.into_iter().map(W::from).collect(),
        next_cursor: page.next.map(|c| c.to_string()),
    }
}

fn query<Q>(q: Result<Query<Q>, QueryRejection>) -> Result<Q, ApiError> {
    q.map(|Query(q)| q)
        .map_err(|e| ApiError::BadRequest(e.body_text()))
}

/// The session's id, and a 404 when nothing is known of it.
async fn known(
    state: &AppState,
    session_id: Result<Path<String>, PathRejection>,
) -> Result<Uuid, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    if state.store.session_known(session_id).await? {
        Ok(session_id)
    } else {
        Err(unknown(session_id))
    }
}

fn unknown(session_id: Uuid) -> ApiError {
    ApiError::NotFound(format!("nothing is known of session {session_id}"))
}

/// The sessions, newest first.
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", params(SessionsQuery),
    responses((status = 200, description = "A page of sessions", body = Page<SessionItem>)))]
pub(in crate::api) async fn sessions(
    State(state): State<AppState>,
    params: Result<Query<SessionsQuery>, QueryRejection>,
) -> Result<Json<Page<SessionItem>>, ApiError> {
    let params = query(params)?;
    let filter: SessionFilter = params.filter.as_deref().unwrap_or("all").parse()?;
    let status: Option<SessionStatus> = params.status.as_deref().map(str::parse).transpose()?;
    let (limit, after) = page_args::<SessionCursor>(params.limit, params.cursor.as_deref())?;
    let now = state.clock.now();
    let judged = Judged::at(now, state.stuck_after);
    let page = state
        .store
        .sessions_page(filter, status, after, limit, judged)
        .await?;
    Ok(Json(Page {
        items: page
            .items
            .into_iter()
            .map(|row| SessionItem::at(row, now))
            .collect(),
        next_cursor: page.next.map(|c| c.to_string()),
    }))
}

/// The session's window and counts; 404 if nothing is known of it.
#[utoipa::path(get, path = "/v1/sessions/{session_id}", tag = "sessions",
    params(("session_id" = Uuid, Path, description = "The chat session")),
    responses((status = 200, description = "The session", body = Session)))]
pub(in crate::api) async fn session(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
) -> Result<Json<Session>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let store = &state.store;
    let now = state.clock.now();
    let judged = Judged::at(now, state.stuck_after);
    let Some(row) = store.session_row(session_id, judged).await? else {
        return Err(unknown(session_id));
    };
    let counts = store.session_counts(session_id).await?;
    let item = SessionItem::at(row, now);
    Ok(Json(Session {
        session_id,
        first_seen_at: item.first_seen_at,
        window: item.window,
        counts: SessionCounts {
            links: counts.links,
            in_flight: item.in_flight,
            deliveries: counts.deliveries,
            pending_deliveries: item.pending_deliveries,
            failed_deliveries: item.failed_deliveries,
            notices: counts.notices,
        },
        status: item.status,
        last_reason: item.last_reason,
        last_activity_at: item.last_activity_at,
    }))
}

/// The executions linked to the session, oldest first.
#[utoipa::path(get, path = "/v1/sessions/{session_id}/links", tag = "sessions",
    params(("session_id" = Uuid, Path, description = "The chat session"), PageQuery),
    responses((status = 200, description = "A page of links", body = Page<wire::Link>)))]
pub(in crate::api) async fn links(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    params: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<Page<wire::Link>>, ApiError> {
    let session_id = known(&state, session_id).await?;
    let params = query(params)?;
    let (limit, after) = page_args::<LinkCursor>(params.limit, params.cursor.as_deref())?;
    let page = state.store.session_links(session_id, after, limit).await?;
    Ok(Json(wire_page(page)))
}

/// The session's deliveries (continuations and notices), newest first.
#[utoipa::path(get, path = "/v1/sessions/{session_id}/deliveries", tag = "sessions",
    params(("session_id" = Uuid, Path, description = "The chat session"), PageQuery),
    responses((status = 200, description = "A page of deliveries", body = Page<wire::Delivery>)))]
pub(in crate::api) async fn deliveries(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    params: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<Page<wire::Delivery>>, ApiError> {
    let session_id = known(&state, session_id).await?;
    let params = query(params)?;
    let (limit, after) = page_args::<DeliveryCursor>(params.limit, params.cursor.as_deref())?;
    let page = state
        .store
        .session_deliveries(session_id, after, limit)
        .await?;
    Ok(Json(wire_page(page)))
}

/// The session's notices (deliveries of kind `notice`), newest first, each
/// with what the operator's channel did with it.
#[utoipa::path(get, path = "/v1/sessions/{session_id}/notices", tag = "sessions",
    params(("session_id" = Uuid, Path, description = "The chat session"), PageQuery),
    responses((status = 200, description = "A page of notices", body = Page<wire::Notice>)))]
pub(in crate::api) async fn notices(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    params: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<Page<wire::Notice>>, ApiError> {
    let session_id = known(&state, session_id).await?;
    let params = query(params)?;
    let (limit, after) = page_args::<DeliveryCursor>(params.limit, params.cursor.as_deref())?;
    let page = state
        .store
        .session_notice_deliveries(session_id, after, limit)
        .await?;
    Ok(Json(wire_page(page)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MAX_PAGE_LIMIT;

    #[test]
    fn the_documented_page_bounds_are_the_stores() {
        assert_eq!(DEFAULT_PAGE_LIMIT, 100);
        assert_eq!(MAX_PAGE_LIMIT, 500);
    }
}
