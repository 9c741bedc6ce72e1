//! The sessions view (a page of sessions, filtered or searched) and one
//! session's timeline: window → tool result's links → status reports →
//! decisions → deliveries → notices, a page of links at a time.

use std::collections::BTreeSet;

use askama::Template;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::Html;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use super::format::{at, excerpt, render, short, window_state};
use super::state::Console;
use crate::api::{parse_id, ApiError};
use crate::store::{
    DeliveryCursor, DeliveryState, LinkCursor, NoticeCursor, Page, SessionCursor, SessionFilter,
    SessionRow,
};

/// Rows per page in every console list: enough to scan, small enough that
/// a page is a few index probes per row.
const PAGE: u32 = 50;
/// Most bytes of a result, input or note shown before it is cut.
const SHOWN_BYTES: usize = 4 << 10;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    filter: Option<String>,
    q: Option<String>,
    cursor: Option<String>,
}

struct FilterLink {
    name: &'static str,
    href: String,
    current: bool,
}

struct RowView {
    id: String,
    first_seen: String,
    window_class: &'static str,
    window: String,
    in_flight: i64,
    pending: i64,
    failed: i64,
    notices: i64,
}

#[derive(Template)]
#[template(path = "sessions.html")]
struct SessionsView {
    filters: Vec<FilterLink>,
    query: String,
    found: Option<String>,
    rows: Vec<RowView>,
    next: Option<String>,
}

fn row_view(row: &SessionRow, now: DateTime<Utc>) -> RowView {
    let (window_class, window) = window_state(row.window.as_ref(), now);
    RowView {
        id: row.session_id.to_string(),
        first_seen: at(row.first_seen_at),
        window_class,
        window,
        in_flight: row.in_flight,
        pending: row.pending,
        failed: row.failed,
        notices: row.notices,
    }
}

/// A page of sessions; with `q`, the one session it names or the session
/// an execution of that id is linked to.
pub(super) async fn list(
    State(console): State<Console>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Html<String>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let store = &console.app.store;
    let now = console.app.clock.now();
    let filter: SessionFilter = query.filter.as_deref().unwrap_or("all").parse()?;
    let search = query.q.as_deref().map(str::trim).unwrap_or("");
    let filters = SessionFilter::ALL
        .into_iter()
        .map(|f| FilterLink {
            name: f.name(),
            href: format!("#/sessions?filter={}", f.name()),
            current: f == filter && search.is_empty(),
        })
        .collect();
    let mut view = SessionsView {
        filters,
        query: search.to_owned(),
        found: None,
        rows: Vec::new(),
        next: None,
    };
    if !search.is_empty() {
        let id = parse_id("search", search)?;
        let (row, found) = match store.session_row(id).await? {
            Some(row) => (Some(row), format!("session {id}")),
            None => match store.session_of_execution(id).await? {
                Some(session) => (
                    store.session_row(session).await?,
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
    let Page { items, next } = store.sessions_page(filter, cursor, PAGE, now).await?;
    view.rows = items.iter().map(|r| row_view(r, now)).collect();
    view.next = next.map(|c| format!("#/sessions?filter={}&cursor={c}", filter.name()));
    render(&view)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TimelineQuery {
    links: Option<String>,
    ledger: Option<String>,
    notices: Option<String>,
}

/// One step of the story, at its time.
struct Event {
    at: DateTime<Utc>,
    step: &'static str,
    execution: String,
    text: String,
    detail: String,
    cut: usize,
}

impl Event {
    fn new(at: DateTime<Utc>, step: &'static str, execution: Option<Uuid>, text: String) -> Self {
        Event {
            at,
            step,
            execution: execution.map(|e| e.to_string()).unwrap_or_default(),
            text,
            detail: String::new(),
            cut: 0,
        }
    }

    fn with_detail(mut self, detail: &str) -> Self {
        (self.detail, self.cut) = excerpt(detail, SHOWN_BYTES);
        self
    }

    fn when(&self) -> String {
        at(self.at)
    }
}

struct LedgerView {
    key: String,
    kind: String,
    state: String,
    attempts: i32,
    created: String,
    delivered: String,
    executions: usize,
    revision: String,
    last_error: String,
    note: String,
    cut: usize,
}

struct NoticeView {
    at: String,
    key: String,
    message: String,
}

#[derive(Template)]
#[template(path = "session.html")]
struct TimelineView {
    id: String,
    window_class: &'static str,
    window: String,
    row: RowView,
    events: Vec<Event>,
    links_next: Option<String>,
    ledger: Vec<LedgerView>,
    ledger_next: Option<String>,
    notices: Vec<NoticeView>,
    notices_next: Option<String>,
}

/// The session's timeline: a page of its links with everything that
/// happened to them, in time order, then a page of its ledger and of its
/// notices. 404 if nothing is known of it.
pub(super) async fn timeline(
    State(console): State<Console>,
    session_id: Result<Path<String>, PathRejection>,
    query: Result<Query<TimelineQuery>, QueryRejection>,
) -> Result<Html<String>, ApiError> {
    let id = parse_id("session id", &session_id?.0)?;
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let links_after: Option<LinkCursor> = query.links.as_deref().map(str::parse).transpose()?;
    let ledger_after: Option<DeliveryCursor> =
        query.ledger.as_deref().map(str::parse).transpose()?;
    let notices_after: Option<NoticeCursor> =
        query.notices.as_deref().map(str::parse).transpose()?;
    let store = &console.app.store;
    let now = console.app.clock.now();
    let row = store
        .session_row(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("nothing is known of session {id}")))?;
    let mut events = Vec::new();
    if links_after.is_none() {
        if let Some(w) = &row.window {
            let text = format!("approved by {} until {}", w.route, at(w.expires_at));
            events.push(Event::new(w.opened_at, "approved", None, text));
            if let Some(closed) = w.closed_at {
                events.push(Event::new(closed, "denied", None, "window closed".into()));
            }
        }
    }
    let links = store.session_links(id, links_after, PAGE).await?;
    let ids: Vec<Uuid> = links.items.iter().map(|l| l.execution_id).collect();
    let executions = store.executions(&ids).await?;
    let late = store.late_reports_of(&ids, i64::from(PAGE) * 4).await?;
    let decisions = store.decisions_on(id, &ids, i64::from(PAGE) * 4).await?;
    let delivery_ids: Vec<Uuid> = links
        .items
        .iter()
        .filter_map(|l| l.delivery_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let deliveries = store.deliveries_by_id(&delivery_ids).await?;
    for link in &links.items {
        let e = Some(link.execution_id);
        events.push(Event::new(
            link.created_at,
            "linked",
            e,
            "linked from a tool result".into(),
        ));
        if let Some(x) = executions.iter().find(|x| x.id == link.execution_id) {
            let (step, when) = match x.finished_at {
                Some(t) => ("finished", t),
                None => ("reported", x.updated_at),
            };
            let text = format!("status {}", x.status);
            events.push(Event::new(when, step, e, text).with_detail(&x.result));
        }
    }
    // Terminal is final: a report after it is kept, not applied.
    for r in &late {
        let text = format!("late report {}, kept, not applied", r.status);
        events.push(
            Event::new(r.reported_at, "late", Some(r.execution_id), text).with_detail(&r.result),
        );
    }
    for d in &decisions {
        let n = &d.decision;
        let mut text = format!("{} by revision {}", n.action, short(&n.revision));
        if let Some(detail) = &n.detail {
            text = format!("{text} ({detail})");
        }
        if let Some(key) = &n.idempotency_key {
            text = format!("{text}, key {key}");
        }
        let detail = format!("input:\n{}\n\noutput:\n{}", n.input, n.output);
        events.push(
            Event::new(d.decided_at, "decided", Some(n.execution_id), text).with_detail(&detail),
        );
    }
    for d in &deliveries {
        let first = d.execution_ids.first().copied();
        let text = format!("{} queued, key {}", d.kind, d.idempotency_key);
        events.push(Event::new(d.created_at, "queued", first, text).with_detail(&d.note));
        // `attempts` counts the failed ones.
        if let Some(t) = d.delivered_at {
            let text = match d.attempts {
                0 => "delivered at the first attempt".to_owned(),
                n => format!("delivered after {n} failed attempt(s)"),
            };
            events.push(Event::new(t, "delivered", first, text));
        } else if d.state == DeliveryState::Failed {
            let text = format!(
                "gave up after {} failed attempt(s): {}",
                d.attempts,
                d.last_error.as_deref().unwrap_or("no error recorded")
            );
            events.push(Event::new(d.updated_at, "failed", first, text));
        }
    }
    // A link is settled in the transaction that records its delivery, at
    // the same instant: pushed last, so it sorts after it.
    for link in &links.items {
        if let (Some(outcome), Some(t)) = (link.outcome, link.continued_at) {
            let mut text = outcome.to_string();
            if let Some(reason) = &link.reason {
                text = format!("{text}: {reason}");
            }
            events.push(Event::new(t, "settled", Some(link.execution_id), text));
        }
    }
    // Stable: events of one instant keep the order they were pushed in,
    // which is the order they happen in.
    events.sort_by_key(|e| e.at);

    let ledger = store.session_deliveries(id, ledger_after, PAGE).await?;
    let notices = store.session_notices(id, notices_after, PAGE).await?;
    let base = format!("#/session/{id}");
    let (window_class, window) = window_state(row.window.as_ref(), now);
    let view = TimelineView {
        id: id.to_string(),
        window_class,
        window,
        row: row_view(&row, now),
        events,
        links_next: links.next.map(|c| format!("{base}?links={c}")),
        ledger: ledger
            .items
            .iter()
            .map(|d| {
                let (note, cut) = excerpt(&d.note, SHOWN_BYTES);
                LedgerView {
                    key: d.idempotency_key.clone(),
                    kind: d.kind.to_string(),
                    state: d.state.to_string(),
                    attempts: d.attempts,
                    created: at(d.created_at),
                    delivered: d.delivered_at.map(at).unwrap_or_default(),
                    executions: d.execution_ids.len(),
                    revision: short(&d.policy_revision).to_owned(),
                    last_error: d.last_error.clone().unwrap_or_default(),
                    note,
                    cut,
                }
            })
            .collect(),
        ledger_next: ledger.next.map(|c| format!("{base}?ledger={c}")),
        notices: notices
            .items
            .iter()
            .map(|n| NoticeView {
                at: at(n.created_at),
                key: n.idempotency_key.clone(),
                message: n.message.clone(),
            })
            .collect(),
        notices_next: notices.next.map(|c| format!("{base}?notices={c}")),
    };
    render(&view)
}
