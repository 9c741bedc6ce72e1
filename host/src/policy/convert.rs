//! The one conversion of the contract's data: between the host's types
//! ([`super::types`]) and the generated bindings of each contract version.
//!
//! Why all in one file: the host's types and the bindings describe one
//! contract; each mapping is written once, here, so a change to `wit/` has
//! one place to land. What 0.1.0 and 0.2.0 share has the same shape in both
//! bindings but distinct Rust types, so it is written once as a macro and
//! stamped out per version; what differs (an execution's task, the
//! person's class, links) is written beside it. The store's rows become the
//! host's types on the worker's side (`worker::input`): the sandbox knows
//! no database.

use super::types as t;

/// The conversions both versions share, over a version's `wit` module
/// (`w`); `field = function` pairs add the execution's fields that only a
/// version has, each computed by `function(&t::Execution)`.
macro_rules! shared {
    ($($field:ident = $value:path),* $(,)?) => {
        use super::t;

        fn execution(e: &t::Execution) -> w::Execution {
            w::Execution {
                id: e.id.clone(),
                status: e.status.clone(),
                result: e.result.clone(),
                finished_at: e.finished_at.map(timestamp),
                $($field: $value(e),)*
            }
        }

        fn timestamp(ts: t::Timestamp) -> w::Timestamp {
            w::Timestamp {
                seconds: ts.seconds,
                nanoseconds: ts.nanoseconds,
            }
        }

        fn route(r: t::ApprovalRoute) -> w::ApprovalRoute {
            match r {
                t::ApprovalRoute::Button => w::ApprovalRoute::Button,
                t::ApprovalRoute::Chat => w::ApprovalRoute::Chat,
                t::ApprovalRoute::Api => w::ApprovalRoute::Api,
            }
        }

        pub(crate) fn decision_input(i: &t::DecisionInput) -> w::DecisionInput {
            w::DecisionInput {
                now: timestamp(i.now),
                execution: execution(&i.execution),
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

        fn outcome(o: w::Outcome) -> t::Outcome {
            match o {
                w::Outcome::Completed => t::Outcome::Completed,
                w::Outcome::Failed => t::Outcome::Failed,
                w::Outcome::Cancelled => t::Outcome::Cancelled,
            }
        }

        pub(crate) fn policy_info(p: w::PolicyInfo) -> t::PolicyInfo {
            t::PolicyInfo {
                name: p.name,
                version: p.version,
                contract: p.contract,
            }
        }
    };
}

/// `nomos:continuation@0.2.0`.
pub(crate) mod v2 {
    use super::super::bindings::v2::wit as w;
    shared!(task = task);

    fn task(e: &t::Execution) -> Option<w::TaskRef> {
        e.task.as_ref().map(|task| w::TaskRef {
            protocol: match task.protocol {
                t::TaskProtocol::Mcp => w::TaskProtocol::Mcp,
                t::TaskProtocol::A2a => w::TaskProtocol::A2a,
            },
            id: task.id.clone(),
        })
    }

    pub(crate) fn status_class(c: w::StatusClass) -> t::StatusClass {
        match c {
            w::StatusClass::NonTerminal => t::StatusClass::NonTerminal,
            w::StatusClass::Terminal(o) => t::StatusClass::Terminal(outcome(o)),
            w::StatusClass::AwaitingPerson(need) => t::StatusClass::AwaitingPerson(match need {
                w::PersonNeed::Input => t::PersonNeed::Input,
                w::PersonNeed::Authorization => t::PersonNeed::Authorization,
            }),
        }
    }

    pub(crate) fn link(l: w::LinkRef) -> t::LinkRef {
        match l {
            w::LinkRef::Execution(id) => t::LinkRef::Execution(id),
            w::LinkRef::Task(task) => t::LinkRef::Task(t::TaskRef {
                protocol: match task.protocol {
                    w::TaskProtocol::Mcp => t::TaskProtocol::Mcp,
                    w::TaskProtocol::A2a => t::TaskProtocol::A2a,
                },
                id: task.id,
            }),
        }
    }
}

/// `nomos:continuation@0.1.0`: an execution without its task (the field is
/// not in that contract), classes without the person's.
pub(crate) mod v1 {
    use super::super::bindings::v1::wit as w;
    shared!();

    pub(crate) fn status_class(c: w::StatusClass) -> t::StatusClass {
        match c {
            w::StatusClass::NonTerminal => t::StatusClass::NonTerminal,
            w::StatusClass::Terminal(o) => t::StatusClass::Terminal(outcome(o)),
        }
    }
}
