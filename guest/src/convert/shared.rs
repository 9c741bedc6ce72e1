// Conversions between a contract's generated bindings (`w`) and this
// policy's plain types (`t`) that contracts 0.1.0 and 0.2.0 share.
//
// Not a module: `include!`d where bindings are generated (component.rs, and
// the test policies of tests/hostile-guest, each of which has bindings of
// its own, so its own `w`), so each mapping is written once. Whoever
// includes it defines `execution` (whose fields differ between versions);
// `current.rs` is the 0.2.0 one.

fn timestamp(ts: w::Timestamp) -> t::Timestamp {
    t::Timestamp {
        seconds: ts.seconds,
        nanoseconds: ts.nanoseconds,
    }
}

fn decision_input(i: w::DecisionInput) -> t::DecisionInput {
    t::DecisionInput {
        now: timestamp(i.now),
        execution: execution(i.execution),
        session: t::Session {
            id: i.session.id,
            window: i.session.window.map(|win| t::Window {
                opened_at: timestamp(win.opened_at),
                expires_at: timestamp(win.expires_at),
                route: match win.route {
                    w::ApprovalRoute::Button => t::ApprovalRoute::Button,
                    w::ApprovalRoute::Chat => t::ApprovalRoute::Chat,
                    w::ApprovalRoute::Api => t::ApprovalRoute::Api,
                },
            }),
            continuations_in_window: i.session.continuations_in_window,
            still_running: i.session.still_running,
        },
        attempts: i.attempts,
    }
}

fn decision(d: t::Decision) -> w::Decision {
    match d {
        t::Decision::Wait => w::Decision::Wait,
        t::Decision::Continue { note } => w::Decision::Continue(note),
        t::Decision::Drop { reason } => w::Decision::Drop(reason),
    }
}

fn outcome(o: t::Outcome) -> w::Outcome {
    match o {
        t::Outcome::Completed => w::Outcome::Completed,
        t::Outcome::Failed => w::Outcome::Failed,
        t::Outcome::Cancelled => w::Outcome::Cancelled,
    }
}
