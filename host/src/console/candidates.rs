//! Candidate revisions held for the playground: uploaded with the admin
//! token, evaluated beside the active revision, never saved or activated.
//!
//! Held in this process only, the newest [`KEPT`]: a candidate is a
//! question an author asks now ("what would this decide?"), not a
//! deployment, so it is neither in the database nor seen by other
//! replicas. Deploying one is the API's upload, with its checks and its
//! signature.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};

use crate::policy::Revision;

/// How many candidates are held; the oldest goes first. Each is kept as its
/// bytes (up to the upload cap), so this bounds the memory they take.
pub const KEPT: usize = 4;

/// One held candidate.
#[derive(Clone, Debug)]
pub struct Held {
    /// Its hash.
    pub revision: Revision,
    /// The component.
    pub bytes: Arc<Vec<u8>>,
    /// What it says it is.
    pub name: String,
    /// Its version.
    pub version: String,
    /// When it was uploaded.
    pub at: DateTime<Utc>,
}

/// The candidates held, newest first.
#[derive(Debug, Default)]
pub struct Candidates {
    held: Mutex<VecDeque<Held>>,
}

impl Candidates {
    /// Holds `candidate` as the newest, replacing an earlier upload of the
    /// same revision and letting the oldest go past [`KEPT`].
    pub fn hold(&self, candidate: Held) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|h| h.revision != candidate.revision);
        held.push_front(candidate);
        held.truncate(KEPT);
    }

    /// The held candidate with this hash.
    pub fn get(&self, hash: &str) -> Option<Held> {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.iter().find(|h| h.revision.0 == hash).cloned()
    }

    /// Every held candidate, newest first.
    pub fn list(&self) -> Vec<Held> {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(tag: u8) -> Held {
        let bytes = vec![tag];
        Held {
            revision: Revision::of(&bytes),
            bytes: Arc::new(bytes),
            name: format!("c{tag}"),
            version: "1".into(),
            at: DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn keeps_the_newest_and_one_of_each_revision() {
        let candidates = Candidates::default();
        for tag in 0..=KEPT as u8 {
            candidates.hold(held(tag));
        }
        candidates.hold(held(2));
        let names: Vec<String> = candidates.list().into_iter().map(|h| h.name).collect();
        assert_eq!(names, ["c2", "c4", "c3", "c1"]);
        assert!(candidates.get(&held(0).revision.0).is_none());
        assert_eq!(
            candidates.get(&held(3).revision.0).map(|h| h.name),
            Some("c3".into())
        );
    }
}
