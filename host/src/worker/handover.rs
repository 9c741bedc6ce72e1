//! What a pass's plan step hands to its deliver step: the continuations it
//! planned and claimed in one transaction, the primary era they were
//! claimed in, and what their calls are built from.
//!
//! The plan read each finished execution (its whole result) and each link's
//! trace context to decide. A finished execution's row never changes again
//! (terminal is final: a later report is kept aside, not applied), so the
//! deliver step builds its first calls from those reads rather than making
//! them again on the path from a report to its call. An execution not read
//! as finished is read again, as it always was.

use std::collections::HashMap;

use uuid::Uuid;

use crate::store::{Delivery, Execution, LinkTrace};

/// The deliver step's start: what the plan claimed for it, or nothing.
#[derive(Debug, Default)]
pub(crate) struct Claimed {
    /// The store's primary era when the plan began
    /// ([`Store::primary_era`](crate::store::Store::primary_era)), read
    /// before its claims were taken: the standby fence's.
    pub(crate) era: u64,
    /// The continuations claimed, to be called first.
    pub(crate) deliveries: Vec<Delivery>,
    /// The plan's reads for them, if it made any.
    pub(crate) read: Option<Read>,
}

/// The plan's reads for its claimed continuations.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// The executions they name, as read to decide.
    pub(crate) executions: HashMap<Uuid, Execution>,
    /// The trace context kept per execution (absent: none kept).
    pub(crate) traces: HashMap<Uuid, LinkTrace>,
}

impl Claimed {
    /// Nothing claimed yet, in `era`.
    pub(crate) fn new(era: u64) -> Self {
        Self {
            era,
            ..Self::default()
        }
    }

    /// Keeps of the plan's reads what the claimed continuations name.
    pub(crate) fn keep(
        &mut self,
        mut executions: HashMap<Uuid, Execution>,
        mut traces: HashMap<Uuid, LinkTrace>,
    ) {
        if self.deliveries.is_empty() {
            return;
        }
        let mut read = Read::default();
        for id in self.deliveries.iter().flat_map(|d| &d.execution_ids) {
            if let Some(e) = executions.remove(id) {
                read.executions.insert(*id, e);
            }
            if let Some(t) = traces.remove(id) {
                read.traces.insert(*id, t);
            }
        }
        self.read = Some(read);
    }
}
