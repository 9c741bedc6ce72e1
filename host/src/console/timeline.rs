//! One session's timeline: the window, then for a page of its links each
//! step in time order (linked from a tool result → status reports →
//! decisions → continuation queued and delivered → settled → late
//! reports), then a page of its ledger and of its notices.
//!
//! Long texts (results, inputs, notes) arrive cut by the store (see
//! `store::read::timeline`); a page says how much it left out.

use std::collections::BTreeSet;

use askama::Template;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::Html;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use super::format::{at, render, short, window_state, Moment, WindowPhrase};
use super::sessions::{row_view, RowView, PAGE};
use super::state::Console;
use crate::api::{parse_id, ApiError};
use crate::store::{DeliveryCursor, DeliveryState, LinkCursor, NoticeCursor, Shown, Window};

/// Decisions and late reports read for a page of links: a few each; an
/// execution decided again and again (a wait logged on every pass that
/// changed its answer) may have more, and the page then says so.
const STEPS: i64 = PAGE as i64 * 4;

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

/// One step of the story, at its time.
struct Event {
    at: DateTime<Utc>,
    step: &'static str,
    execution: String,
    text: String,
    detail: String,
    left_out: i64,
    decision: Option<i64>,
}

impl Event {
    fn new(at: DateTime<Utc>, step: &'static str, execution: Option<Uuid>, text: String) -> Self {
        Event {
            at,
            step,
            execution: execution.map(|e| e.to_string()).unwrap_or_default(),
            text,
            detail: String::new(),
            left_out: 0,
            decision: None,
        }
    }

    fn with_detail(mut self, detail: String, left_out: i64) -> Self {
        self.detail = detail;
        self.left_out = left_out;
        self
    }

    fn when(&self, now: &DateTime<Utc>) -> Moment {
        Moment::new(self.at, *now)
    }
}

struct LedgerView {
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
}

struct NoticeView {
    at: Moment,
    key: String,
    message: String,
}

#[derive(Template)]
#[template(path = "session.html")]
struct TimelineView {
    id: String,
    window_class: &'static str,
    window: WindowPhrase,
    row: RowView,
    /// The time of rendering, that the events' ages are counted from.
    now: DateTime<Utc>,
    events: Vec<Event>,
    steps_cut: bool,
    links_next: Option<String>,
    ledger: Vec<LedgerView>,
    ledger_next: Option<String>,
    notices: Vec<NoticeView>,
    notices_next: Option<String>,
}

/// The window's own events. Only the latest approval is kept (an approval
/// after an expiry replaces the window), so it is named as the current one.
fn window_events(w: &Window, events: &mut Vec<Event>) {
    let text = match w.closed_at {
        None => format!("window opened by {} until {}", w.route, at(w.expires_at)),
        Some(_) => format!("window opened by {}", w.route),
    };
    events.push(Event::new(w.opened_at, "approved", None, text));
    if let Some(closed) = w.closed_at {
        events.push(Event::new(closed, "denied", None, "window closed".into()));
    }
}

/// The session's timeline (see the module docs); 404 if nothing is known
/// of it.
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
    if let (None, Some(w)) = (&links_after, &row.window) {
        window_events(w, &mut events);
    }
    let links = store.session_links(id, links_after, PAGE).await?;
    let ids: Vec<Uuid> = links.items.iter().map(|l| l.execution_id).collect();
    let executions = store.shown_executions(&ids).await?;
    let mut late = store.shown_late_reports(&ids, STEPS + 1).await?;
    let mut decisions = store.shown_decisions(id, &ids, STEPS + 1).await?;
    let steps_cut = late.len() as i64 > STEPS || decisions.len() as i64 > STEPS;
    late.truncate(STEPS as usize);
    decisions.truncate(STEPS as usize);
    let delivery_ids: Vec<Uuid> = links
        .items
        .iter()
        .filter_map(|l| l.delivery_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let deliveries = store.shown_deliveries(&delivery_ids).await?;
    for link in &links.items {
        let e = Some(link.execution_id);
        let text = "linked from a tool result".to_owned();
        events.push(Event::new(link.created_at, "linked", e, text));
        if let Some(Shown { row: x, left_out }) =
            executions.iter().find(|x| x.row.id == link.execution_id)
        {
            let (step, when) = match x.finished_at {
                Some(t) => ("finished", t),
                None => ("reported", x.updated_at),
            };
            let text = format!("status {}", x.status);
            events.push(Event::new(when, step, e, text).with_detail(x.result.clone(), *left_out));
        }
    }
    // Terminal is final: a report after it is kept, not applied.
    for Shown { row: r, left_out } in late {
        let text = format!("late report {}, kept, not applied", r.status);
        let event = Event::new(r.reported_at, "late", Some(r.execution_id), text);
        events.push(event.with_detail(r.result, left_out));
    }
    for Shown { row: d, left_out } in decisions {
        let n = d.decision;
        let mut text = format!("{} by revision {}", n.action, short(&n.revision));
        if let Some(detail) = &n.detail {
            text = format!("{text} ({detail})");
        }
        if let Some(key) = &n.idempotency_key {
            text = format!("{text}, key {key}");
        }
        let detail = format!("input:\n{}\n\noutput:\n{}", n.input, n.output);
        let mut event = Event::new(d.decided_at, "decided", Some(n.execution_id), text)
            .with_detail(detail, left_out);
        event.decision = Some(d.id);
        events.push(event);
    }
    for Shown { row: d, left_out } in &deliveries {
        let first = d.execution_ids.first().copied();
        let text = format!("{} queued, key {}", d.kind, d.idempotency_key);
        let queued = Event::new(d.created_at, "queued", first, text);
        events.push(queued.with_detail(d.note.clone(), *left_out));
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
    // the same instant: pushed after it, so it sorts after it.
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

    let ledger = store.shown_ledger(id, ledger_after, PAGE).await?;
    let notices = store.session_notices(id, notices_after, PAGE).await?;
    let (window_class, window) = window_state(row.window.as_ref(), now);
    let view = TimelineView {
        id: id.to_string(),
        window_class,
        window,
        row: row_view(&row, now),
        now,
        events,
        steps_cut,
        links_next: links.next.map(|c| query.moved(id, "links", c)),
        ledger: ledger
            .items
            .into_iter()
            .map(|d| ledger_view(d, now))
            .collect(),
        ledger_next: ledger.next.map(|c| query.moved(id, "ledger", c)),
        notices: notices
            .items
            .into_iter()
            .map(|n| NoticeView {
                at: Moment::new(n.created_at, now),
                key: n.idempotency_key,
                message: n.message,
            })
            .collect(),
        notices_next: notices.next.map(|c| query.moved(id, "notices", c)),
    };
    render(&view)
}

fn ledger_view(
    Shown { row: d, left_out }: Shown<crate::store::Delivery>,
    now: DateTime<Utc>,
) -> LedgerView {
    LedgerView {
        key: d.idempotency_key,
        kind: d.kind.to_string(),
        state: d.state.to_string(),
        attempts: d.attempts,
        created: Moment::new(d.created_at, now),
        delivered: Moment::maybe(d.delivered_at, now),
        executions: d.execution_ids.len(),
        revision: short(&d.policy_revision).to_owned(),
        last_error: d.last_error.unwrap_or_default(),
        note: d.note,
        left_out,
    }
}
