//! The plan step's reads: for a pass's ready links, how each status is
//! classified, and for the finished ones each session's snapshot, the
//! results, the protocol tasks and the trace contexts, made at once; then
//! the policy's inputs built from them.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{PlanReport, Planner, SessionDecisions};
use crate::classes::{still_running, Class};
use crate::policy::types as t;
use crate::store::{Execution, LinkData, LinkTrace, ReadyLink, SessionSnapshot};
use crate::telemetry::DecideSpan;
use crate::worker::WorkerError;

/// What a pass decides on, and what it read to get there.
pub(super) struct Gathered {
    /// One input per finished link, in the order of `owners`.
    pub(super) inputs: Vec<t::DecisionInput>,
    /// Each input's session, execution and how it ended.
    pub(super) owners: Vec<(Uuid, Uuid, t::Outcome)>,
    /// Each session with a finished link, with the window as seen.
    pub(super) sessions: BTreeMap<Uuid, SessionDecisions>,
    /// Each input's `decide` span, started.
    pub(super) spans: Vec<DecideSpan>,
    /// The finished executions as read (whole results), for the calls the
    /// pass claims (see [`Claimed`](crate::worker::handover::Claimed)).
    pub(super) executions: HashMap<Uuid, Execution>,
    /// The trace context kept per finished execution.
    pub(super) traces: HashMap<Uuid, LinkTrace>,
}

impl Planner {
    /// Classifies `ready`, parks what is still running, and reads what the
    /// policy is asked with for the rest. Every session's snapshot, the
    /// chosen results, and their tasks and traces (one read) are
    /// independent reads, made at once (each is one or two queries whatever
    /// the number of sessions), so the pass waits for the slowest rather
    /// than for their sum.
    pub(super) async fn gather(
        &self,
        ready: &[ReadyLink],
        report: &mut PlanReport,
        now: DateTime<Utc>,
    ) -> Result<Gathered, WorkerError> {
        let statuses: Vec<String> = ready.iter().map(|l| l.status.clone()).collect();
        let mut classes = self.classes.classes(statuses).await?;
        let by_session = self.sort_ready(ready, &classes, report, now).await?;

        let session_ids: Vec<Uuid> = by_session.keys().copied().collect();
        let pairs: Vec<(Uuid, Uuid)> = (by_session.iter())
            .flat_map(|(s, links)| links.iter().map(|(l, _)| (*s, l.execution_id)))
            .collect();
        let chosen: Vec<Uuid> = pairs.iter().map(|(_, e)| *e).collect();
        let (snapshots, executions, link_data) = tokio::join!(
            self.store.session_snapshots(&session_ids, now),
            self.store.executions(&chosen),
            self.store.link_data(&chosen),
        );
        let LinkData { traces, tasks } = link_data?;
        let spans = self.decide_spans(pairs, &traces);
        let mut snapshots: HashMap<Uuid, SessionSnapshot> = (snapshots?.into_iter())
            .map(|s| (s.session_id, s))
            .collect();
        let executions: HashMap<Uuid, Execution> =
            executions?.into_iter().map(|e| (e.id, e)).collect();
        // A session's other unsettled links (planned ones, or ones beyond
        // this pass's pages) may have statuses not seen above.
        let unseen: Vec<String> = snapshots
            .values()
            .flat_map(|s| s.unsettled.iter())
            .filter_map(|l| l.execution_status.clone())
            .filter(|status| !classes.contains_key(status))
            .collect();
        if !unseen.is_empty() {
            classes.extend(self.classes.classes(unseen).await?);
        }
        let is_terminal = |status: &str| classes.get(status).is_some_and(Class::is_terminal);

        let mut inputs = Vec::new();
        let mut owners = Vec::new();
        let mut sessions: BTreeMap<Uuid, SessionDecisions> = BTreeMap::new();
        for (session_id, links) in &by_session {
            let snapshot = snapshots
                .remove(session_id)
                .unwrap_or_else(|| SessionSnapshot::empty(*session_id));
            sessions.entry(*session_id).or_default().window_seen =
                snapshot.window.as_ref().map(|w| w.updated_at);
            let running = still_running(&snapshot, is_terminal);
            for (link, outcome) in links {
                // An execution whose row vanished since the poll (a
                // runtime's own relation) is decided on an empty result.
                // The whole result stays with the read, for the call.
                let result = (executions.get(&link.execution_id))
                    .map(|e| e.result.clone())
                    .unwrap_or_default();
                let task = tasks.get(&link.execution_id);
                inputs.push(self.decision_input(link, result, &snapshot, &running, task, now));
                owners.push((*session_id, link.execution_id, *outcome));
            }
        }
        Ok(Gathered {
            inputs,
            owners,
            sessions,
            spans,
            executions,
            traces,
        })
    }
}
