//! The demo's timeline: each event with its time since the start and who
//! acted, printed as it happens.

use std::sync::Mutex;
use std::time::Instant;

/// Who did something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    /// The person who approved the plan.
    Operator,
    /// The scripted agent.
    Agent,
    /// The fake runtime running the executions.
    Executor,
    /// nomos-continue itself.
    System,
}

impl Actor {
    fn label(self) -> &'static str {
        match self {
            Actor::Operator => "operator",
            Actor::Agent => "agent",
            Actor::Executor => "executor",
            Actor::System => "nomos-continue",
        }
    }
}

/// One line of the timeline.
#[derive(Debug, Clone)]
pub struct Event {
    /// Milliseconds since the timeline started.
    pub millis: u128,
    /// Who did it.
    pub actor: Actor,
    /// What happened.
    pub text: String,
}

/// Collects and prints events.
pub struct Timeline {
    start: Instant,
    events: Mutex<Vec<Event>>,
    quiet: bool,
}

impl Timeline {
    /// An empty timeline; `quiet` records without printing (for tests).
    pub fn new(quiet: bool) -> Self {
        Self {
            start: Instant::now(),
            events: Mutex::new(Vec::new()),
            quiet,
        }
    }

    /// Records (and unless quiet, prints) one event.
    pub fn record(&self, actor: Actor, text: impl Into<String>) {
        let event = Event {
            millis: self.start.elapsed().as_millis(),
            actor,
            text: text.into(),
        };
        if !self.quiet {
            println!(
                "{:>7.3}s  {:<14} {}",
                event.millis as f64 / 1000.0,
                event.actor.label(),
                event.text
            );
        }
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}
