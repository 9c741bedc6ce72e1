//! The one answer to "what class is this status under the active policy
//! revision?", for the API (a report), the worker's plan pass and delivery.
//!
//! A revision is a pure function of its bytes, so its class for a status
//! never changes. [`StatusClasses`] reads the classes the store keeps per
//! (revision, status) (`nomos_status_classes`), asks the policy only about the
//! statuses that have none under the active revision, and keeps the
//! answers. A status is thus classified once per revision, not on every
//! report, pass and delivery; and because every read is keyed by the
//! revision active at the time, a class of an older revision is never used
//! after a swap. Deployment calls [`StatusClasses::classify_pending`] when a
//! revision becomes active, so the first pass after a swap does not pay.
//!
//! Only answers are kept: a shortage (no sandbox free) and a policy failure
//! are asked again next time, as before.
//!
//! Why a module of its own: the store may not know the policy and the
//! policy may not know the store; this is where the two meet, as in
//! [`crate::deploy`]. An in-process copy of the kept answers, keyed by the
//! revision like the table, spares that read on every pass, claimed batch
//! and report: an answer of a revision never changes, so the copy needs no
//! invalidation, only a bound on its size; a swap or a fall-back changes the
//! revision asked about, so an older revision's answers are never used.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use uuid::Uuid;

use crate::clock::Clock;
use crate::policy::types::{Outcome, PersonNeed, StatusClass};
use crate::policy::{PolicyHandle, PolicyTaskFailed};
use crate::store::{SessionSnapshot, Store, StoreError, StoredClass};

/// The most statuses classified up front when a revision becomes active;
/// any others are classified when a pass or a report first needs them.
pub const CLASSIFY_PENDING_LIMIT: i64 = 1000;

/// The most answers kept in process; past it the copy starts again empty
/// (status strings are few in practice; a runtime that puts ids or
/// progress into them must not grow it without bound).
const KEPT_IN_PROCESS: usize = 4096;

/// Answers of one revision, copied from the store.
#[derive(Default)]
struct Kept {
    revision: String,
    classes: HashMap<String, Class>,
}

/// How the active revision classifies one status string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Finished, with this outcome: the policy is asked to decide.
    Terminal(Outcome),
    /// Not finished: waited for.
    Running,
    /// Not finished, paused until a person acts (input, authorization):
    /// never continued; a later report still applies.
    AwaitingPerson(PersonNeed),
    /// The policy failed on this string (a trap, a malformed answer): the
    /// execution waits, and its operator is told once. Not kept: asked again.
    Unclassifiable(String),
    /// No sandbox could be had: asked again later. Not kept.
    Deferred,
}

impl Class {
    /// Whether the status is terminal (a person's state is not).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Class::Terminal(_))
    }

    /// What the work waits for from a person, if it does (the tests' view;
    /// the worker matches the class itself).
    #[cfg(feature = "test-support")]
    pub fn awaiting_person(&self) -> Option<PersonNeed> {
        match self {
            Class::AwaitingPerson(need) => Some(*need),
            _ => None,
        }
    }

    /// Whether this is an answer of the policy (kept), not a failure or a
    /// shortage (asked again).
    fn is_answer(&self) -> bool {
        matches!(
            self,
            Class::Terminal(_) | Class::Running | Class::AwaitingPerson(_)
        )
    }

    /// The class of a policy's answer.
    fn of(class: StatusClass) -> Self {
        match class {
            StatusClass::Terminal(outcome) => Class::Terminal(outcome),
            StatusClass::NonTerminal => Class::Running,
            StatusClass::AwaitingPerson(need) => Class::AwaitingPerson(need),
        }
    }

    /// The row to keep for `status`, if this is an answer (not a failure).
    fn stored(&self, status: &str) -> Option<StoredClass> {
        let (outcome, person) = match self {
            Class::Terminal(outcome) => (Some(outcome.as_str().to_owned()), None),
            Class::Running => (None, None),
            Class::AwaitingPerson(need) => (None, Some(need.as_str().to_owned())),
            Class::Unclassifiable(_) | Class::Deferred => return None,
        };
        Some(StoredClass {
            status: status.to_owned(),
            outcome,
            person,
        })
    }

    /// A kept row read back; `None` for a word the table's checks rule
    /// out (then the policy is asked again).
    fn read(kept: &StoredClass) -> Option<Self> {
        match (kept.outcome.as_deref(), kept.person.as_deref()) {
            (None, None) => Some(Class::Running),
            (Some(word), None) => Outcome::from_word(word).map(Class::Terminal),
            (None, Some(word)) => PersonNeed::from_word(word).map(Class::AwaitingPerson),
            (Some(_), Some(_)) => None,
        }
    }
}

/// Why no classes could be had: nothing about the statuses themselves.
#[derive(Debug, thiserror::Error)]
pub enum ClassError {
    /// The database failed reading or keeping classes.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The blocking task that ran the policy panicked or was cancelled.
    #[error("policy task failed: {0}")]
    PolicyTask(#[from] PolicyTaskFailed),
}

/// Classes of statuses under the active revision, kept in the store. Cheap
/// to clone.
#[derive(Clone)]
pub struct StatusClasses {
    store: Store,
    policy: PolicyHandle,
    clock: Arc<dyn Clock>,
    kept: Arc<Mutex<Kept>>,
}

impl StatusClasses {
    /// Classes over this store and policy; `clock` stamps what is kept.
    pub fn new(store: Store, policy: PolicyHandle, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            policy,
            clock,
            kept: Arc::default(),
        }
    }

    /// The same classes, sharing the in-process copy, read and kept through
    /// `store`: the API's request store, whose wait for a connection is
    /// short, so that a report answers its 503 within the API's bound
    /// during an outage rather than waiting on the worker's pool.
    pub fn through(&self, store: Store) -> Self {
        Self {
            store,
            ..self.clone()
        }
    }

    /// The answers of `revision` already copied, and the statuses not.
    fn copied(
        &self,
        revision: &str,
        statuses: Vec<String>,
    ) -> (HashMap<String, Class>, Vec<String>) {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.revision != revision {
            return (HashMap::new(), statuses);
        }
        let mut found = HashMap::new();
        let mut missing = Vec::new();
        for status in statuses {
            match kept.classes.get(&status) {
                Some(class) => {
                    found.insert(status, class.clone());
                }
                None => missing.push(status),
            }
        }
        (found, missing)
    }

    /// Copies answers of `revision` (only answers: terminal, running or a
    /// person's).
    fn copy<'a>(&self, revision: &str, answers: impl Iterator<Item = (&'a String, &'a Class)>) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.revision != revision || kept.classes.len() >= KEPT_IN_PROCESS {
            *kept = Kept {
                revision: revision.to_owned(),
                classes: HashMap::new(),
            };
        }
        for (status, class) in answers {
            if class.is_answer() {
                kept.classes.insert(status.clone(), class.clone());
            }
        }
    }

    /// The class of one status (a report).
    pub async fn class(&self, status: &str) -> Result<Class, ClassError> {
        let mut classes = self.classes(vec![status.to_owned()]).await?;
        Ok(classes.remove(status).unwrap_or(Class::Deferred))
    }

    /// The class of each distinct status of `statuses`: the kept ones read
    /// under the active revision, the others asked of the policy in one
    /// blocking task and kept under the revision that answered (a swap may
    /// land in between; the answer is still that revision's).
    pub async fn classes(
        &self,
        mut statuses: Vec<String>,
    ) -> Result<HashMap<String, Class>, ClassError> {
        statuses.sort();
        statuses.dedup();
        if statuses.is_empty() {
            return Ok(HashMap::new());
        }
        let revision = self.policy.runtime().active_revision().0;
        let (mut out, statuses) = self.copied(&revision, statuses);
        if statuses.is_empty() {
            return Ok(out);
        }
        for kept in self.store.status_classes(&revision, &statuses).await? {
            // The table's check constraints rule a bad row out; else asked again.
            if let Some(class) = Class::read(&kept) {
                out.insert(kept.status, class);
            }
        }
        self.copy(&revision, out.iter());
        let missing: Vec<String> = statuses
            .into_iter()
            .filter(|s| !out.contains_key(s))
            .collect();
        if missing.is_empty() {
            return Ok(out);
        }
        let mut answers: BTreeMap<String, Vec<StoredClass>> = BTreeMap::new();
        for (status, evaluated) in self.policy.classify_each(missing).await? {
            let class = match evaluated.value {
                Ok(class) => Class::of(class),
                Err(f) if f.is_shortage() => Class::Deferred,
                Err(f) => Class::Unclassifiable(f.to_string()),
            };
            if let Some(kept) = class.stored(&status) {
                answers.entry(evaluated.revision.0).or_default().push(kept);
            }
            out.insert(status, class);
        }
        let now = self.clock.now();
        for (answered, kept) in answers {
            self.store
                .save_status_classes(&answered, &kept, now)
                .await?;
            // Copied once kept, so the copy never holds what the store
            // does not.
            let saved = kept.iter().filter_map(|k| out.get_key_value(&k.status));
            self.copy(&answered, saved);
        }
        Ok(out)
    }

    /// Classifies, under the active revision, the statuses of unsettled
    /// links it has no class for yet (at most [`CLASSIFY_PENDING_LIMIT`]):
    /// what a swap calls, so work pending at the swap is classified by the
    /// new revision at once. Returns how many statuses were asked about.
    pub async fn classify_pending(&self) -> Result<usize, ClassError> {
        let revision = self.policy.runtime().active_revision().0;
        let statuses = self
            .store
            .statuses_to_classify(&revision, CLASSIFY_PENDING_LIMIT)
            .await?;
        let asked = statuses.len();
        self.classes(statuses).await?;
        Ok(asked)
    }
}

/// The session's unsettled links still running, in link order: not reported
/// yet, or reported a status `is_terminal` rejects. "Do not start them
/// again", in the policy's decision input.
pub fn still_running(snapshot: &SessionSnapshot, is_terminal: impl Fn(&str) -> bool) -> Vec<Uuid> {
    snapshot
        .unsettled
        .iter()
        .filter(|l| {
            l.execution_status
                .as_deref()
                .is_none_or(|s| !is_terminal(s))
        })
        .map(|l| l.execution_id)
        .collect()
}
