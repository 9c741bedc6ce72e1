//! `GET /v1/sessions/{id}`: the session's window and counts, and a page of
//! each of its lists (links, ledger, notices).
//!
//! # Paging
//!
//! `?limit=N` (default [`DEFAULT_PAGE_LIMIT`], at most
//! [`MAX_PAGE_LIMIT`](crate::store::MAX_PAGE_LIMIT))
//! bounds each list. The answer's `next` names, for each list with more
//! rows, the query parameter and the cursor that continue it
//! (`{"links_cursor": "…"}`), or is `null` when every list is complete.
//!
//! A request without a cursor answers the first page of every list. A
//! request with cursors answers only the lists it names, each from after
//! its cursor; the others are left out of the answer. So a client that
//! sends back every entry of `next` (with the same `limit`) until `next`
//! is `null` sees every row of every list exactly once, and a client that
//! follows one list never receives the others again. Cursors are opaque
//! keyset positions (see `store::read::session`): stable while rows are added.

pub(super) mod writes;

use std::fmt::Display;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::api::error::{parse_id, ApiError};
use crate::api::AppState;
use crate::store::{
    check_limit, DeliveryCursor, LinkCursor, NoticeCursor, Page, SessionCounts, StoreError,
    DEFAULT_PAGE_LIMIT,
};

/// The query string; an unknown parameter is a 400, so a misspelt cursor
/// does not silently answer the first page again.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::api) struct SessionQuery {
    limit: Option<u32>,
    links_cursor: Option<String>,
    deliveries_cursor: Option<String>,
    notices_cursor: Option<String>,
}

/// A cursor parameter, parsed if given.
fn cursor<C: std::str::FromStr<Err = StoreError>>(
    text: Option<&String>,
) -> Result<Option<C>, ApiError> {
    text.map(|t| t.parse::<C>()).transpose().map_err(Into::into)
}

/// Puts a page of one list into the answer as `name`, and its cursor into
/// `next` as `{name}_cursor` when the list has more rows.
fn put<T: Serialize, C: Display>(
    answer: &mut Map<String, Value>,
    next: &mut Map<String, Value>,
    name: &str,
    page: Page<T, C>,
) {
    answer.insert(name.to_owned(), json!(page.items));
    if let Some(c) = page.next {
        next.insert(format!("{name}_cursor"), json!(c.to_string()));
    }
}

/// The session's window, counts and a page of each list asked for (see
/// the module docs); 404 if nothing is known of it.
pub(in crate::api) async fn session(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    params: Result<Query<SessionQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let Query(params) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let limit = check_limit(params.limit.unwrap_or(DEFAULT_PAGE_LIMIT))?;
    let links: Option<LinkCursor> = cursor(params.links_cursor.as_ref())?;
    let deliveries: Option<DeliveryCursor> = cursor(params.deliveries_cursor.as_ref())?;
    let notices: Option<NoticeCursor> = cursor(params.notices_cursor.as_ref())?;
    let first_page = links.is_none() && deliveries.is_none() && notices.is_none();

    let store = &state.store;
    let window = store.window(session_id).await?;
    let counts = store.session_counts(session_id).await?;
    if window.is_none() && counts == SessionCounts::default() {
        return Err(ApiError::NotFound(format!(
            "nothing is known of session {session_id}"
        )));
    }
    let mut answer = Map::new();
    answer.insert("session_id".into(), json!(session_id));
    answer.insert("window".into(), json!(window));
    answer.insert("counts".into(), json!(counts));
    answer.insert("limit".into(), json!(limit));
    let mut next = Map::new();
    if first_page || links.is_some() {
        let page = store.session_links(session_id, links, limit).await?;
        put(&mut answer, &mut next, "links", page);
    }
    if first_page || deliveries.is_some() {
        let page = store
            .session_deliveries(session_id, deliveries, limit)
            .await?;
        put(&mut answer, &mut next, "deliveries", page);
    }
    if first_page || notices.is_some() {
        let page = store.session_notices(session_id, notices, limit).await?;
        put(&mut answer, &mut next, "notices", page);
    }
    let next = if next.is_empty() {
        Value::Null
    } else {
        Value::Object(next)
    };
    answer.insert("next".into(), next);
    Ok(Json(Value::Object(answer)))
}
