//! Counters and the pickup-latency histogram, rendered as Prometheus text
//! by the API's `/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::policy::{PolicyStats, ShadowStats};

/// Upper bounds of the pickup-latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0,
];

/// The worker's counters. Shared behind an `Arc`; every method is lock-free
/// except the by-label maps, which are touched once per decision batch.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Decisions by outcome (`wait`, `continue`, `drop`, `policy_error`).
    decisions: Mutex<BTreeMap<&'static str, u64>>,
    /// Deliveries by result (`delivered`, `retry`, `gave_up`, `lease_lost`).
    deliveries: Mutex<BTreeMap<&'static str, u64>>,
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
    /// Links not yet settled, as of the last plan step.
    pending_links: AtomicU64,
    /// Leases the rescuer released.
    leases_rescued: AtomicU64,
    /// Passes whose decisions the decision log could not record.
    decision_log_failures: AtomicU64,
    /// Decisions purged from the log past their retention.
    decisions_purged: AtomicU64,
    /// Notices by channel (`agent`, `operator`) and result.
    notices: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
}

impl Metrics {
    /// Counts `count` policy decisions with this outcome (`wait`, `continue`,
    /// `drop`, `deferred`, `policy_error`).
    pub fn decision(&self, outcome: &'static str, count: u64) {
        if let Ok(mut map) = self.decisions.lock() {
            *map.entry(outcome).or_default() += count;
        }
    }

    /// Counts one delivery outcome (`delivered`, `lease_lost`,
    /// `dropped_window_closed`, ...).
    pub fn delivery(&self, result: &'static str) {
        if let Ok(mut map) = self.deliveries.lock() {
            *map.entry(result).or_default() += 1;
        }
    }

    /// Counts `count` notice outcomes on `channel` (`agent`, `operator`):
    /// `delivered`, `retried`, `failed`, `expired`, `none`.
    pub fn notice(&self, channel: &'static str, result: &'static str, count: u64) {
        if let Ok(mut map) = self.notices.lock() {
            *map.entry((channel, result)).or_default() += count;
        }
    }

    /// Records the time from an execution turning terminal to the start of
    /// the agent call.
    pub fn pickup_latency(&self, latency: Duration) {
        let seconds = latency.as_secs_f64();
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            if seconds <= bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_micros.fetch_add(
            u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// The number of links the last plan pass examined (a gauge).
    pub fn set_pending_links(&self, count: u64) {
        self.pending_links.store(count, Ordering::Relaxed);
    }

    /// Counts leases the rescuer released after their holders stopped renewing them.
    pub fn leases_rescued(&self, count: u64) {
        self.leases_rescued.fetch_add(count, Ordering::Relaxed);
    }

    /// Counts a pass whose decisions could not be logged.
    pub fn decision_log_failed(&self) {
        self.decision_log_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts decisions purged from the log.
    pub fn decisions_purged(&self, count: u64) {
        self.decisions_purged.fetch_add(count, Ordering::Relaxed);
    }

    #[cfg(feature = "test-support")]
    /// Decisions recorded so far with this outcome.
    pub fn decisions_with(&self, outcome: &str) -> u64 {
        self.decisions
            .lock()
            .ok()
            .and_then(|m| m.get(outcome).copied())
            .unwrap_or(0)
    }

    #[cfg(feature = "test-support")]
    /// Deliveries recorded so far with this result.
    pub fn deliveries_with(&self, result: &str) -> u64 {
        self.deliveries
            .lock()
            .ok()
            .and_then(|m| m.get(result).copied())
            .unwrap_or(0)
    }

    /// Prometheus text exposition of these counters and the policy's.
    pub fn render(&self, policy: &PolicyStats, active_revision: &str) -> String {
        let mut out = String::new();
        let map = |m: &Mutex<BTreeMap<&'static str, u64>>| {
            m.lock().map(|m| m.clone()).unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "# HELP nomos_continue_decisions_total Policy decisions by outcome."
        );
        let _ = writeln!(out, "# TYPE nomos_continue_decisions_total counter");
        for (outcome, n) in map(&self.decisions) {
            let _ = writeln!(
                out,
                "nomos_continue_decisions_total{{outcome=\"{outcome}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP nomos_continue_deliveries_total Agent deliveries by result."
        );
        let _ = writeln!(out, "# TYPE nomos_continue_deliveries_total counter");
        for (result, n) in map(&self.deliveries) {
            let _ = writeln!(
                out,
                "nomos_continue_deliveries_total{{result=\"{result}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP nomos_continue_notices_total Notices by channel and result."
        );
        let _ = writeln!(out, "# TYPE nomos_continue_notices_total counter");
        if let Ok(map) = self.notices.lock() {
            for ((channel, result), n) in map.iter() {
                let _ = writeln!(
                    out,
                    "nomos_continue_notices_total{{channel=\"{channel}\",result=\"{result}\"}} {n}"
                );
            }
        }
        let _ = writeln!(out, "# HELP nomos_continue_policy_failures_total Policy calls that trapped, timed out or answered malformed.");
        let _ = writeln!(out, "# TYPE nomos_continue_policy_failures_total counter");
        for (kind, n) in &policy.failures {
            let _ = writeln!(
                out,
                "nomos_continue_policy_failures_total{{kind=\"{kind}\"}} {n}"
            );
        }
        let counters = [
            (
                "nomos_continue_policy_evaluations_total",
                "Policy calls.",
                policy.evaluations,
            ),
            (
                "nomos_continue_policy_swaps_total",
                "Policy revisions activated.",
                policy.swaps,
            ),
            (
                "nomos_continue_policy_rejected_total",
                "Policy candidates refused.",
                policy.rejected_candidates,
            ),
            (
                "nomos_continue_policy_fallbacks_total",
                "Returns to the last good policy.",
                policy.fallbacks,
            ),
            (
                "nomos_continue_leases_rescued_total",
                "Expired leases released by the rescuer.",
                self.leases_rescued.load(Ordering::Relaxed),
            ),
            (
                "nomos_continue_decision_log_failures_total",
                "Plan passes whose decisions the decision log could not record.",
                self.decision_log_failures.load(Ordering::Relaxed),
            ),
            (
                "nomos_continue_decisions_purged_total",
                "Logged decisions purged past their retention.",
                self.decisions_purged.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP nomos_continue_pending_links Links not yet settled at the last plan step."
        );
        let _ = writeln!(out, "# TYPE nomos_continue_pending_links gauge");
        let _ = writeln!(
            out,
            "nomos_continue_pending_links {}",
            self.pending_links.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP nomos_continue_policy_active_revision The active policy revision (sha256)."
        );
        let _ = writeln!(out, "# TYPE nomos_continue_policy_active_revision gauge");
        let _ = writeln!(
            out,
            "nomos_continue_policy_active_revision{{revision=\"{active_revision}\"}} 1"
        );
        let name = "nomos_continue_pickup_latency_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} From an execution turning terminal to the agent call."
        );
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Ordering::Relaxed)
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.latency_sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
        out
    }
}

/// The backlog gauges, read from the store at scrape time so every replica
/// reports the same database-wide figure: how many finished executions wait
/// to be settled, and for how long the oldest has waited.
pub fn render_backlog(finished: i64, oldest_age: Option<chrono::Duration>) -> String {
    let age = oldest_age.map_or(0.0, |a| a.num_milliseconds().max(0) as f64 / 1e3);
    format!(
        "# HELP nomos_continue_backlog_finished Finished executions whose links are not settled yet.\n\
         # TYPE nomos_continue_backlog_finished gauge\n\
         nomos_continue_backlog_finished {finished}\n\
         # HELP nomos_continue_backlog_oldest_age_seconds How long the oldest finished, unsettled execution has waited (0 when none does).\n\
         # TYPE nomos_continue_backlog_oldest_age_seconds gauge\n\
         nomos_continue_backlog_oldest_age_seconds {age}\n"
    )
}

/// The shadow revision's counters (see `policy::shadow`), apart from the
/// active policy's so a shadow's failures never read as the active one's.
pub fn render_shadow(shadow: &ShadowStats) -> String {
    let counters = [
        (
            "nomos_continue_policy_shadow_decisions_total",
            "Decisions the shadow policy took and compared with the active one.",
            shadow.decisions,
        ),
        (
            "nomos_continue_policy_shadow_disagreements_total",
            "Decisions the shadow policy took differently from the active one.",
            shadow.disagreements,
        ),
        (
            "nomos_continue_policy_shadow_skipped_batches_total",
            "Batches the shadow policy skipped because its slot was busy.",
            shadow.skipped_batches,
        ),
        (
            "nomos_continue_policy_shadow_failures_total",
            "Shadow policy calls that failed, or whose disagreements were not recorded.",
            shadow.failures,
        ),
    ];
    let mut out = String::new();
    for (name, help, value) in counters {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
        );
    }
    out
}
