//! One session's timeline: its status and the window, then a page of its
//! links, one collapsible group per execution (`story`), then a page of its
//! ledger and of its notices (each with the agent's and the operator
//! channel's state).
//!
//! Long texts (results, inputs, notes) arrive cut by the store (see
//! `store::read::timeline`); a page says how much it left out. The retry
//! and drop buttons are rendered for the admin token only: the fragment is
//! rendered for the token that asked for it.

use askama::Template;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Html;
use serde::Deserialize;
use uuid::Uuid;

use super::format::{plain, render, short, window_state, Moment, WindowPhrase};
use super::sessions::{row_view, RowView, PAGE};
use super::state::Console;
use super::story::{self, Action, Event, Group, Read};
use crate::api::{parse_id, ApiError, Scope};
use crate::store::{DeliveryCursor, Judged, LinkCursor, NoticeRow, Shown};

/// Executions per page of the timeline: each is one collapsed row, so a
/// page of a hundred is about as tall as the old page of fifty steps'
/// worth was.
const EXECUTIONS: u32 = 100;

/// Decisions and late reports read for a page of links: a few each; an
/// execution decided again and again (a wait logged on every pass that
/// changed its answer) may have more, and the page then says so.
const STEPS: i64 = EXECUTIONS as i64 * 4;

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct TimelineQuery {
    links: Option<String>,
    ledger: Option<String>,
    notices: Option<String>,
}

impl TimelineQuery {
    /// The hash of this page with one list moved on to `cursor`, the
    /// others kept where they are.
    fn moved(&self, session: Uuid, list: &str, cursor: impl std::fmt::Display) -> String {
        let mut at = self.clone();
        let cursor = Some(cursor.to_string());
        match list {
            "links" => at.links = cursor,
            "ledger" => at.ledger = cursor,
            _ => at.notices = cursor,
        }
        let parts: Vec<String> = [
            ("links", &at.links),
            ("ledger", &at.ledger),
            ("notices", &at.notices),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_ref().map(|v| format!("{name}={v}")))
        .collect();
        format!("#/session/{session}?{}", parts.join("&"))
    }
}

struct LedgerView {
    id: String,
    key: String,
    kind: String,
    state: String,
    attempts: i32,
    created: Moment,
    delivered: Moment,
    executions: usize,
    revision: String,
    last_error: String,
    note: String,
    left_out: i64,
    actions: Vec<Action>,
}

struct NoticeView {
    at: Moment,
    key: String,
    message: String,
    agent: String,
    operator: String,
    undelivered: bool,
}

#[derive(Template)]
#[template(path = "session.html")]
struct TimelineView {
    id: String,
    window_class: &'static str,
    window: WindowPhrase,
    row: RowView,
    admin: bool,
    session_events: Vec<Event>,
    groups: Vec<Group>,
    steps_cut: bool,
    links_next: Option<String>,
    ledger: Vec<LedgerView>,
    ledger_next: Option<String>,
    notices: Vec<NoticeView>,
    notices_next: Option<String>,
}

/// The session's timeline (see the module docs); 404 if nothing is known
/// of it.
pub(super) async fn timeline(
    State(console): State<Console>,
    session_id: Result<Path<String>, PathRejection>,
    query: Result<Query<TimelineQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Html<String>, ApiError> {
    let id = parse_id("session id", &session_id?.0)?;
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let links_after: Option<LinkCursor> = query.links.as_deref().map(str::parse).transpose()?;
    let ledger_after: Option<DeliveryCursor> =
        query.ledger.as_deref().map(str::parse).transpose()?;
    let notices_after: Option<DeliveryCursor> =
        query.notices.as_deref().map(str::parse).transpose()?;
    let store = &console.app.store;
    let now = console.app.clock.now();
    let admin = is_admin(&console, &headers);
    let row = store
        .session_row(id, Judged::at(now, console.app.stuck_after))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("nothing is known of session {id}")))?;
    let session_events = match (&links_after, &row.window) {
        (None, Some(w)) => story::window_events(w),
        _ => Vec::new(),
    };
    let links = store.session_links(id, links_after, EXECUTIONS).await?;
    let ids: Vec<Uuid> = links.items.iter().map(|l| l.execution_id).collect();
    let executions = store.shown_executions(&ids).await?;
    let mut late = store.shown_late_reports(&ids, STEPS + 1).await?;
    let mut decisions = store.shown_decisions(id, &ids, STEPS + 1).await?;
    let steps_cut = late.len() as i64 > STEPS || decisions.len() as i64 > STEPS;
    late.truncate(STEPS as usize);
    decisions.truncate(STEPS as usize);
    let deliveries = store
        .shown_deliveries(&story::delivery_ids(&links.items))
        .await?;
    let groups = story::groups(
        Read {
            links: &links.items,
            executions: &executions,
            late,
            decisions,
            deliveries: &deliveries,
        },
        admin,
    );

    let ledger = store.shown_ledger(id, ledger_after, PAGE).await?;
    let notices = store
        .session_notice_deliveries(id, notices_after, PAGE)
        .await?;
    let (window_class, window) = window_state(row.window.as_ref(), now);
    let view = TimelineView {
        id: id.to_string(),
        window_class,
        window,
        row: row_view(&row, now),
        admin,
        session_events,
        groups,
        steps_cut,
        links_next: links.next.map(|c| query.moved(id, "links", c)),
        ledger: ledger
            .items
            .into_iter()
            .map(|d| ledger_view(d, admin, now))
            .collect(),
        ledger_next: ledger.next.map(|c| query.moved(id, "ledger", c)),
        notices: notices
            .items
            .into_iter()
            .map(|n| notice_view(n, now))
            .collect(),
        notices_next: notices.next.map(|c| query.moved(id, "notices", c)),
    };
    render(&view)
}

/// Whether the request's token opens the admin routes (the retry and drop
/// buttons call them); with no token configured every route is open.
fn is_admin(console: &Console, headers: &HeaderMap) -> bool {
    console.scope(headers) == Some(Scope::Admin)
}

fn notice_view(n: NoticeRow, now: chrono::DateTime<chrono::Utc>) -> NoticeView {
    let undelivered = n.undelivered();
    let d = n.delivery;
    let operator = match n.operator {
        None => "no operator row".to_owned(),
        Some(o) => match o.last_error {
            Some(e) => format!(
                "{} after {} failed attempt(s): {}",
                o.state,
                o.attempts,
                plain(&e)
            ),
            None => o.state,
        },
    };
    let agent = match &d.last_error {
        Some(e) => format!("{}: {}", d.state, plain(e)),
        None => d.state.to_string(),
    };
    NoticeView {
        at: Moment::new(d.created_at, now),
        key: d.idempotency_key,
        message: plain(&d.note),
        agent,
        operator,
        undelivered,
    }
}

fn ledger_view(
    shown: Shown<crate::store::Delivery>,
    admin: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> LedgerView {
    let actions = if admin {
        story::actions(&shown.row)
    } else {
        Vec::new()
    };
    let Shown {
        row: d, left_out, ..
    } = shown;
    LedgerView {
        id: d.id.to_string(),
        key: d.idempotency_key,
        kind: d.kind.to_string(),
        state: d.state.to_string(),
        attempts: d.attempts,
        created: Moment::new(d.created_at, now),
        delivered: Moment::maybe(d.delivered_at, now),
        executions: d.execution_ids.len(),
        revision: short(&d.policy_revision).to_owned(),
        last_error: d.last_error.as_deref().map(plain).unwrap_or_default(),
        note: plain(&d.note),
        left_out,
        actions,
    }
}
