//! What a plan pass reads and sorts: the ready links (only unparked ones on
//! a frequent pass), sorted by the class of their status; the running ones
//! parked; result texts chosen within the pass's byte budget.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Planner;
use super::{idempotency_key, PlanReport};
use crate::classes::Class;
use crate::policy::types::{self as t, PersonNeed};
use crate::store::{NoticeAbout, Poll, ReadyLink};
use crate::worker::input::cut_middle;
use crate::worker::notices;
use crate::worker::WorkerError;

/// Pages of ready links read per pass; the rest wait for the next pass.
/// Links known to be running are not read (see
/// [`Store::poll_links`](crate::store::Store::poll_links)),
/// so this bounds finished work per pass, and running executions cannot
/// starve what finished behind them.
const MAX_PAGES: usize = 20;

/// How much of what a task waiting for a person asks is quoted in the
/// notice: enough for a question, not a whole transcript.
const MAX_ASKS_BYTES: usize = 1000;

/// A pass's finished links, by session, with how each ended.
pub(super) type BySession<'a> = BTreeMap<Uuid, Vec<(&'a ReadyLink, t::Outcome)>>;

impl Planner {
    /// Sorts a pass's links by the class of their status: finished ones by
    /// session (within the byte budget), running and unclassifiable ones
    /// parked (told about once), the rest counted.
    pub(super) async fn sort_ready<'a>(
        &self,
        ready: &'a [ReadyLink],
        classes: &HashMap<String, Class>,
        report: &mut PlanReport,
        now: DateTime<Utc>,
    ) -> Result<BySession<'a>, WorkerError> {
        let mut by_session: BySession<'a> = BTreeMap::new();
        // Result texts are read only for what is decided, oldest first,
        // until the budget is spent (always at least one): memory is
        // bounded by the budget, not by how many finished at once.
        let mut budget = self.config.pass_result_bytes;
        let mut decided = 0usize;
        let (mut park, mut parked_on) = (Vec::new(), Vec::new());
        let mut awaiting = Vec::new();
        for link in ready {
            match classes.get(&link.status).unwrap_or(&Class::Deferred) {
                Class::Terminal(outcome) => {
                    let bytes = usize::try_from(link.result_bytes).unwrap_or(usize::MAX);
                    if decided > 0 && bytes > budget {
                        budget = 0;
                        report.over_budget += 1;
                        continue;
                    }
                    budget -= bytes.min(budget);
                    decided += 1;
                    by_session
                        .entry(link.session_id)
                        .or_default()
                        .push((link, *outcome));
                }
                Class::Running => {
                    report.waiting += 1;
                    park.push(link.execution_id);
                    parked_on.push(link.status.clone());
                }
                // A person's state is never continued: it is told to the
                // operator once and waits, parked, for the next state.
                Class::AwaitingPerson(need) => {
                    report.waiting += 1;
                    awaiting.push((link, *need));
                    park.push(link.execution_id);
                    parked_on.push(link.status.clone());
                }
                Class::Deferred => report.deferred += 1,
                Class::Unclassifiable(error) => {
                    report.waiting += 1;
                    self.tell_unclassifiable(link, error, now).await?;
                    park.push(link.execution_id);
                    parked_on.push(link.status.clone());
                }
            }
        }
        self.tell_awaiting_person(&awaiting, now).await?;
        // What waits for a new status is not read again until one comes
        // (or the next sweep).
        self.store.park_links(&park, &parked_on).await?;
        Ok(by_session)
    }

    /// Links whose execution has reported a status the active revision has
    /// not classified as running, oldest first, a bounded number of pages.
    pub(super) async fn read_ready(
        &self,
        poll: Poll,
        revision: &str,
    ) -> Result<Vec<ReadyLink>, WorkerError> {
        let mut ready: Vec<ReadyLink> = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = self
                .store
                .poll_links(poll, cursor, self.config.batch, revision)
                .await?;
            let full = page.len() as i64 >= self.config.batch;
            cursor = page.last().map(ReadyLink::cursor);
            ready.extend(page);
            if !full {
                break;
            }
        }
        Ok(ready)
    }

    /// Tells the operator about each execution waiting for a person, once per
    /// execution, status and question: the key covers the status and the
    /// message, so a duplicated report (a push sent twice, a sweep reading
    /// the parked link again) writes nothing, and a new question is told.
    async fn tell_awaiting_person(
        &self,
        awaiting: &[(&ReadyLink, PersonNeed)],
        now: DateTime<Utc>,
    ) -> Result<(), WorkerError> {
        if awaiting.is_empty() {
            return Ok(());
        }
        let ids: Vec<Uuid> = awaiting.iter().map(|(l, _)| l.execution_id).collect();
        let mut asks: HashMap<Uuid, String> = self
            .store
            .executions(&ids)
            .await?
            .into_iter()
            .map(|e| (e.id, e.result))
            .collect();
        let tasks = self.store.link_tasks(&ids).await?;
        let revision = self.policy.runtime().active_revision().0;
        for (link, need) in awaiting {
            let id = link.execution_id;
            let asked = cut_middle(asks.remove(&id).unwrap_or_default(), MAX_ASKS_BYTES);
            let key = idempotency_key(
                "p",
                link.session_id,
                &[id],
                &format!("{}\n{asked}", link.status),
            );
            let message = notices::awaiting_person(id, tasks.get(&id), &link.status, *need, &asked);
            let about = NoticeAbout {
                session_id: link.session_id,
                execution_ids: &[id],
                policy_revision: &revision,
            };
            self.store.record_notice(about, &key, &message, now).await?;
        }
        Ok(())
    }

    /// Tells the operator, once per execution and status, that the policy
    /// could not classify a status: the execution waits for a status it can
    /// classify rather than silently.
    async fn tell_unclassifiable(
        &self,
        link: &ReadyLink,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<(), WorkerError> {
        let ids = [link.execution_id];
        let key = idempotency_key("u", link.session_id, &ids, &link.status);
        let message = format!(
            "nomos-continue cannot tell whether execution {} has finished: the policy failed on its status {:?} ({error}); it is not continued until a status the policy can classify is reported",
            link.execution_id, link.status
        );
        let revision = self.policy.runtime().active_revision().0;
        let about = NoticeAbout {
            session_id: link.session_id,
            execution_ids: &ids,
            policy_revision: &revision,
        };
        self.store.record_notice(about, &key, &message, now).await?;
        Ok(())
    }
}
