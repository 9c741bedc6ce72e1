//! The one conversion of the contract's data: between the host's types
//! ([`super::types`]) and the generated bindings.
//!
//! Why all in one file: the host's types and the bindings describe one
//! contract; each mapping is written once, here, so a change to `wit/` has
//! one place to land. The store's rows become the host's types on the
//! worker's side (`worker::input`): the sandbox knows no database.

use super::bindings::wit as w;
use super::types as t;

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
