//! Failed passes: counted by cause (an injected refusal, a deadlock, any
//! other error) and printed as they happen, with the run's seed and store.
//!
//! Passes run as spawned tasks with nowhere to return an error to, so the
//! error is counted here and judged after the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use nomos_continue::store::testing::DISK_FULL_MESSAGE;

use super::lock;

/// The counts of one run's failed passes.
#[derive(Debug, Default)]
pub(super) struct PassLog {
    /// `seed S on STORE`, printed before each error.
    label: String,
    /// Print each error as it happens (else only with `SIM_LOG` set).
    print: bool,
    counts: Mutex<Counts>,
    /// The run was judged: what fails after it (the pass of a killed
    /// worker, which never ends, once the store is closed) is not the run's.
    ended: AtomicBool,
}

#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Counts {
    /// Errors the simulation did not inject, deadlocks included.
    pub errors: usize,
    pub deadlocks: usize,
    /// Errors of an injected refusal of writes.
    pub refused: usize,
    /// Inputs the policy failed on, as the passes reported them.
    pub policy_failures: usize,
}

impl PassLog {
    pub(super) fn new(label: String, print: bool) -> Self {
        Self {
            label,
            print: print || std::env::var_os("SIM_LOG").is_some(),
            counts: Mutex::default(),
            ended: AtomicBool::new(false),
        }
    }

    /// Counts a failed pass of `what` (a worker, the notifier).
    pub(super) fn failed(&self, what: &str, e: &dyn std::fmt::Display) {
        if self.ended.load(Ordering::SeqCst) {
            return;
        }
        let message = e.to_string();
        let mut counts = lock(&self.counts);
        if message.contains(DISK_FULL_MESSAGE) {
            counts.refused += 1;
            return;
        }
        counts.errors += 1;
        if message.contains("deadlock detected") {
            counts.deadlocks += 1;
        }
        drop(counts);
        if self.print {
            println!("{}: {what} pass failed: {message}", self.label);
        }
    }

    pub(super) fn policy_failures(&self, n: usize) {
        lock(&self.counts).policy_failures += n;
    }

    /// The run's counts, after which nothing more is counted or printed.
    pub(super) fn end(&self) -> Counts {
        self.ended.store(true, Ordering::SeqCst);
        *lock(&self.counts)
    }

    pub(super) fn counts(&self) -> Counts {
        *lock(&self.counts)
    }
}
