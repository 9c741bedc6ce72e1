//! The one conversion of the contract's data: between the host's types
//! ([`super::types`]) and the generated bindings, and from the store's rows
//! into the host's types.
//!
//! Why all in one file: three families describe one contract (the store's
//! rows, the host's types, the bindings). Each mapping is written once,
//! here, so a change to `wit/` or to the store has one place to land; the
//! worker builds decision inputs with `.into()`, never field by field.

use super::bindings::wit as w;
use super::types as t;
use crate::store;

impl From<store::Route> for t::ApprovalRoute {
    fn from(route: store::Route) -> Self {
        match route {
            store::Route::Button => t::ApprovalRoute::Button,
            store::Route::Chat => t::ApprovalRoute::Chat,
            store::Route::Api => t::ApprovalRoute::Api,
        }
    }
}

/// A window row as the policy sees it. Whether the row is still open (a
/// denial closes it) is the caller's question, not this mapping's.
impl From<&store::Window> for t::Window {
    fn from(row: &store::Window) -> Self {
        t::Window {
            opened_at: row.opened_at.into(),
            expires_at: row.expires_at.into(),
            route: row.route.into(),
        }
    }
}

pub(crate) fn timestamp(ts: t::Timestamp) -> w::Timestamp {
    w::Timestamp {
        seconds: ts.seconds,
        nanoseconds: ts.nanoseconds,
    }
}

pub(crate) fn route(r: t::ApprovalRoute) -> w::ApprovalRoute {
    match r {
        t::ApprovalRoute::Button => w::ApprovalRoute::Button,
        t::ApprovalRoute::Chat => w::ApprovalRoute::Chat,
        t::ApprovalRoute::Api => w::ApprovalRoute::Api,
    }
}

pub(crate) fn decision_input(i: &t::DecisionInput) -> w::DecisionInput {
    w::DecisionInput {
        now: timestamp(i.now),
        execution: w::Execution {
            id: i.execution.id.clone(),
            status: i.execution.status.clone(),
            result: i.execution.result.clone(),
            finished_at: i.execution.finished_at.map(timestamp),
        },
        session: w::Session {
            id: i.session.id.clone(),
            window: i.session.window.as_ref().map(|win| w::Window {
                opened_at: timestamp(win.opened_at),
                expires_at: timestamp(win.expires_at),
                route: route(win.route),
            }),
            continuations_in_window: i.session.continuations_in_window,
            still_running: i.session.still_running.clone(),
        },
        attempts: i.attempts,
    }
}

pub(crate) fn decision(d: w::Decision) -> t::Decision {
    match d {
        w::Decision::Wait => t::Decision::Wait,
        w::Decision::Continue(note) => t::Decision::Continue { note },
        w::Decision::Drop(reason) => t::Decision::Drop { reason },
    }
}

pub(crate) fn status_class(c: w::StatusClass) -> t::StatusClass {
    match c {
        w::StatusClass::NonTerminal => t::StatusClass::NonTerminal,
        w::StatusClass::Terminal(o) => t::StatusClass::Terminal(match o {
            w::Outcome::Completed => t::Outcome::Completed,
            w::Outcome::Failed => t::Outcome::Failed,
            w::Outcome::Cancelled => t::Outcome::Cancelled,
        }),
    }
}

pub(crate) fn policy_info(p: w::PolicyInfo) -> t::PolicyInfo {
    t::PolicyInfo {
        name: p.name,
        version: p.version,
        contract: p.contract,
    }
}
