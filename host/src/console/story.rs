//! A page of a session's timeline told one execution at a time: each
//! linked execution is one collapsible group whose summary is how it ended,
//! holding its steps in time order (linked → status reports → decisions →
//! continuation queued, its failed attempts, delivered or ended → settled →
//! late reports). Repeated decisions (one per retry) are attempts of one
//! step, not rows of their own, so a 60-execution session is 60 rows.
//!
//! Every text from the outside (results, notes, errors, reasons) is shown
//! without terminal escapes (`format::plain`); a result keeps its first and
//! last lines (`format::Output`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::format::{at, plain, short, Output};
use crate::store::{
    Delivery, DeliveryState, LateReport, Link, LoggedDecision, Recorded, Settlement, Shown,
};
use crate::store::{Execution, TaskSource, Window};

/// A button that calls the API, shown to the admin token only.
pub(super) struct Action {
    pub(super) name: &'static str,
    pub(super) label: &'static str,
    pub(super) api: String,
    pub(super) confirm: String,
    pub(super) danger: bool,
}

/// One of several decisions on the same execution.
pub(super) struct Attempt {
    pub(super) when: String,
    pub(super) text: String,
    pub(super) detail: String,
    pub(super) left_out: i64,
    pub(super) decision: i64,
}

/// One step of the story, at its time.
pub(super) struct Event {
    at: DateTime<Utc>,
    pub(super) step: &'static str,
    pub(super) text: String,
    pub(super) output: Option<Output>,
    pub(super) detail: String,
    pub(super) left_out: i64,
    pub(super) decision: Option<i64>,
    pub(super) attempts: Vec<Attempt>,
    pub(super) actions: Vec<Action>,
}

impl Event {
    fn new(at: DateTime<Utc>, step: &'static str, text: String) -> Self {
        Event {
            at,
            step,
            text,
            output: None,
            detail: String::new(),
            left_out: 0,
            decision: None,
            attempts: Vec::new(),
            actions: Vec::new(),
        }
    }

    fn with_detail(mut self, detail: &str, left_out: i64) -> Self {
        self.detail = plain(detail);
        self.left_out = left_out;
        self
    }

    pub(super) fn when(&self) -> String {
        at(self.at)
    }
}

/// One execution's steps, and how it ended, for its summary line.
pub(super) struct Group {
    pub(super) execution: String,
    pub(super) status: String,
    pub(super) state: String,
    pub(super) state_class: &'static str,
    pub(super) linked: String,
    /// The protocol task the execution stands for, as the runtime knows it
    /// (`A2A task "…"`), or empty.
    pub(super) task: String,
    pub(super) open: bool,
    pub(super) events: Vec<Event>,
}

/// What one page of the timeline read.
pub(super) struct Read<'a> {
    pub(super) links: &'a [Link],
    pub(super) executions: &'a [Shown<Execution>],
    pub(super) late: Vec<Shown<LateReport>>,
    pub(super) decisions: Vec<Shown<LoggedDecision>>,
    pub(super) deliveries: &'a [Shown<Delivery>],
}

/// The window's own events. Only the latest approval is kept (an approval
/// after an expiry replaces the window), so it is named as the current one.
pub(super) fn window_events(w: &Window) -> Vec<Event> {
    let text = match w.closed_at {
        None => format!("window opened by {} until {}", w.route, at(w.expires_at)),
        Some(_) => format!("window opened by {}", w.route),
    };
    let mut events = vec![Event::new(w.opened_at, "approved", text)];
    if let Some(closed) = w.closed_at {
        events.push(Event::new(closed, "denied", "window closed".into()));
    }
    events
}

/// The buttons a delivery in this state offers: send it again (ended), or
/// give up on it (not delivered yet, or failed).
pub(super) fn actions(d: &Delivery) -> Vec<Action> {
    let mut out = Vec::new();
    if matches!(d.state, DeliveryState::Failed | DeliveryState::Dropped) {
        out.push(Action {
            name: "retry",
            label: "Retry",
            api: format!("/v1/deliveries/{}/retry", d.id),
            confirm: format!(
                "Send {} {} again, with the same key?",
                d.kind, d.idempotency_key
            ),
            danger: false,
        });
    }
    if matches!(d.state, DeliveryState::Pending | DeliveryState::Failed) {
        out.push(Action {
            name: "drop",
            label: "Drop",
            api: format!("/v1/deliveries/{}/drop", d.id),
            confirm: format!(
                "Give up on {} {}? It will not be sent.",
                d.kind, d.idempotency_key
            ),
            danger: true,
        });
    }
    out
}

/// A delivery's steps: queued, its failed attempts, how it ended.
fn delivery_events(d: &Shown<Delivery>, admin: bool) -> Vec<Event> {
    let (row, left_out) = (&d.row, d.left_out);
    let text = format!("{} queued, key {}", row.kind, row.idempotency_key);
    let mut events =
        vec![Event::new(row.created_at, "queued", text).with_detail(&row.note, left_out)];
    let error = row.last_error.as_deref().map(plain);
    let error = error.as_deref().unwrap_or("no error recorded");
    // `attempts` counts the failed ones.
    let mut end = match row.state {
        DeliveryState::Delivered => {
            let text = match row.attempts {
                0 => "delivered at the first attempt".to_owned(),
                n => format!("delivered after {n} failed attempt(s)"),
            };
            Event::new(
                row.delivered_at.unwrap_or(row.updated_at),
                "delivered",
                text,
            )
        }
        DeliveryState::Failed => Event::new(
            row.updated_at,
            "failed",
            format!("gave up after {} failed attempt(s): {error}", row.attempts),
        ),
        DeliveryState::Dropped => Event::new(
            row.updated_at,
            "dropped",
            format!("dropped, never sent: {error}"),
        ),
        DeliveryState::Pending if row.attempts > 0 => Event::new(
            row.updated_at,
            "retrying",
            format!("{} failed attempt(s), trying again: {error}", row.attempts),
        ),
        DeliveryState::Pending => return with_actions(events, row, admin),
    };
    end.actions = if admin { actions(row) } else { Vec::new() };
    events.push(end);
    events
}

fn with_actions(mut events: Vec<Event>, row: &Delivery, admin: bool) -> Vec<Event> {
    if let (true, Some(last)) = (admin, events.last_mut()) {
        last.actions = actions(row);
    }
    events
}

/// Repeated decisions on one execution as one step with its attempts.
fn decided(decisions: Vec<&Shown<LoggedDecision>>) -> Option<Event> {
    let text = |d: &LoggedDecision| {
        let n = &d.decision;
        let mut text = format!("{} by revision {}", n.action, short(&n.revision));
        if let Some(detail) = &n.detail {
            text = format!("{text} ({})", plain(detail));
        }
        if let Some(key) = &n.idempotency_key {
            text = format!("{text}, key {key}");
        }
        text
    };
    let detail = |d: &LoggedDecision| recorded_detail(&d.decision.recorded);
    let first = decisions.first()?;
    let last = decisions.last()?;
    if decisions.len() == 1 {
        let mut event = Event::new(first.row.decided_at, "decided", text(&first.row))
            .with_detail(&detail(&first.row), first.left_out);
        event.decision = Some(first.row.id);
        return Some(event);
    }
    let summary = format!(
        "decided {} times; last: {}",
        decisions.len(),
        text(&last.row)
    );
    let mut event = Event::new(first.row.decided_at, "decided", summary);
    event.attempts = decisions
        .iter()
        .map(|d| Attempt {
            when: at(d.row.decided_at),
            text: text(&d.row),
            detail: plain(&detail(&d.row)),
            left_out: d.left_out,
            decision: d.row.id,
        })
        .collect();
    Some(event)
}

/// What a decision recorded, for its step's detail: a whole row's input and
/// output; a compact row's answer and the input's fields as kept (the
/// result is the execution's, shown with it; the whole input opens in the
/// playground).
fn recorded_detail(recorded: &Recorded) -> String {
    let (input, answer) = match recorded {
        Recorded::Whole { input, output } => {
            return format!("input:\n{input}\n\noutput:\n{output}")
        }
        Recorded::Compact { input, answer, .. } => (input, answer),
    };
    let window = match &input.window {
        Some(w) => format!(
            "opened {} by {}, expires {}",
            at(w.opened_at),
            w.route,
            at(w.expires_at)
        ),
        None => "none".into(),
    };
    let cut = match input.result_cut {
        Some(limit) => format!(", cut to {limit} bytes"),
        None => String::new(),
    };
    format!(
        "answer: {answer}\n\ninput, as kept: now {}; status {}; window {window}; {} \
         continuations in it; {} other executions running; {} failed calls before; the \
         execution's result{cut}",
        at(input.now),
        input.status,
        input.continuations_in_window,
        input.still_running.len(),
        input.attempts,
    )
}

/// How a link ended, or where it is, as a phrase and a class.
fn final_state(
    link: &Link,
    execution: Option<&Execution>,
    delivery: Option<&Delivery>,
) -> (String, &'static str) {
    let reason = || link.reason.as_deref().map(plain).unwrap_or_default();
    match link.outcome {
        Some(Settlement::Continued) => ("continued".into(), "ok"),
        Some(Settlement::Dropped) => (format!("dropped: {}", reason()), "dropped"),
        Some(Settlement::Failed) => (format!("delivery failed: {}", reason()), "failed"),
        None => match (delivery, execution) {
            (Some(d), _) if d.attempts > 0 => {
                let error = d.last_error.as_deref().map(plain).unwrap_or_default();
                (
                    format!("retrying ({} failed): {error}", d.attempts),
                    "failed",
                )
            }
            (Some(_), _) => ("continuation pending".into(), "waiting"),
            (None, Some(x)) if x.finished_at.is_some() => ("finished, waiting".into(), "waiting"),
            (None, Some(_)) => ("running".into(), "running"),
            (None, None) => ("no report yet".into(), "running"),
        },
    }
}

/// The page's groups, one per link, in the page's order.
pub(super) fn groups(read: Read<'_>, admin: bool) -> Vec<Group> {
    let Read {
        links,
        executions,
        late,
        decisions,
        deliveries,
    } = read;
    let few = links.len() <= 3;
    links
        .iter()
        .map(|link| {
            let id = link.execution_id;
            let task = link.task.as_ref().map_or_else(String::new, |t| {
                let protocol = match t.source {
                    TaskSource::Mcp => "MCP",
                    TaskSource::A2a => "A2A",
                };
                format!("{protocol} task {:?}", plain(&t.task_id))
            });
            let linked_from = match task.as_str() {
                "" => "linked from a tool result".to_string(),
                task => format!("linked from a tool result: the {task}"),
            };
            let mut events = vec![Event::new(link.created_at, "linked", linked_from)];
            let execution = executions.iter().find(|x| x.row.id == id);
            if let Some(x) = execution {
                let (step, when) = match x.row.finished_at {
                    Some(t) => ("finished", t),
                    None => ("reported", x.row.updated_at),
                };
                let mut event = Event::new(when, step, format!("status {}", plain(&x.row.status)));
                event.output = Some(Output::of(&x.row.result, &x.tail, x.left_out, x.lines));
                events.push(event);
            }
            let mine: Vec<&Shown<LoggedDecision>> = decisions
                .iter()
                .filter(|d| d.row.decision.execution_id == id)
                .collect();
            events.extend(decided(mine));
            let delivery = link
                .delivery_id
                .and_then(|d| deliveries.iter().find(|s| s.row.id == d));
            for d in deliveries
                .iter()
                .filter(|d| d.row.execution_ids.contains(&id))
            {
                events.extend(delivery_events(d, admin));
            }
            // Settled in the transaction that records its delivery, at the
            // same instant: pushed after it, so it sorts after it.
            if let (Some(outcome), Some(t)) = (link.outcome, link.continued_at) {
                let mut text = outcome.to_string();
                if let Some(reason) = &link.reason {
                    text = format!("{text}: {}", plain(reason));
                }
                let step = match outcome {
                    Settlement::Continued => "settled",
                    Settlement::Dropped => "dropped",
                    Settlement::Failed => "failed",
                };
                events.push(Event::new(t, step, text));
            }
            // Terminal is final: a report after it is kept, not applied.
            for r in late.iter().filter(|r| r.row.execution_id == id) {
                let text = format!("late report {}, kept, not applied", plain(&r.row.status));
                events.push(
                    Event::new(r.row.reported_at, "late", text)
                        .with_detail(&r.row.result, r.left_out),
                );
            }
            // Stable: events of one instant keep the order they were pushed
            // in, which is the order they happen in.
            events.sort_by_key(|e| e.at);
            let (state, state_class) =
                final_state(link, execution.map(|x| &x.row), delivery.map(|d| &d.row));
            Group {
                execution: id.to_string(),
                status: execution
                    .map(|x| plain(&x.row.status))
                    .unwrap_or_else(|| "no report".into()),
                state,
                state_class,
                linked: at(link.created_at),
                task,
                open: few || matches!(state_class, "failed" | "dropped"),
                events,
            }
        })
        .collect()
}

/// The ids of the deliveries a page of links was folded into.
pub(super) fn delivery_ids(links: &[Link]) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = links.iter().filter_map(|l| l.delivery_id).collect();
    ids.sort();
    ids.dedup();
    ids
}
