//! The process's metrics, kept in a `prometheus-client` registry and
//! rendered for `/metrics` in the Prometheus text format (0.0.4, so a
//! scraper that asks for no format and a `grep` both read it).
//!
//! Two kinds of figures: what this process counts as it works (here, in
//! [`Metrics`]), and what is read once per scrape (`scrape`: the policy
//! runtime's counters, the shadow's, the database-wide gauges and the
//! connection pools), which the `/metrics` handler gathers into a
//! [`Scrape`]. Every family is listed in `docs/metrics.md`; a test scrapes a
//! real `serve` and checks the two agree.
//!
//! Every label value the code knows in advance is created at 0 when the
//! registry is built: an alert on `increase(...)` needs the series before
//! its first increment, or the first failure goes unseen.

mod process;
mod scrape;

use std::time::Duration;

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

pub use process::ProcessGauges;
pub use scrape::{BacklogGauges, DatabaseGauges, PoolGauges, Scrape, TableGauges};

/// The `Content-Type` of what [`Metrics::render`] returns.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Every family's name starts with this (and `_`).
const PREFIX: &str = "nomos_continue";

/// Upper bounds of the pickup-latency buckets, in seconds (unchanged since
/// the hand-written exposition, so recorded dashboards keep their buckets).
const PICKUP_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0,
];

/// Upper bounds of the HTTP duration buckets, in seconds: the API answers
/// from the database, so most requests sit in the first few.
const HTTP_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// Upper bounds of the agent-call buckets, in seconds: a webhook answers in
/// milliseconds, a `chatWith` completion may take a minute or more.
const AGENT_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 120.0,
];

/// Upper bounds of the standby fence's wait buckets, in seconds: one
/// statement when the standbys have the rows, milliseconds for an
/// asynchronous standby, the time-out (5 s by default) when one is lost.
const FENCE_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0,
];

/// Decision outcomes the planner counts.
const DECISION_OUTCOMES: [&str; 5] = ["wait", "continue", "drop", "deferred", "policy_error"];

/// Delivery results the deliverer counts.
const DELIVERY_RESULTS: [&str; 8] = [
    "delivered",
    "retry",
    "gave_up",
    "lease_lost",
    "unrecorded",
    "not_recorded",
    "dropped_by_policy",
    "dropped_window_closed",
];

/// The channels whose notice attempts are counted here (the agent's copy
/// of a notice is a delivery, counted by `deliveries_total`), and how each
/// attempt ends.
const NOTICE_CHANNELS: [&str; 1] = ["operator"];
const NOTICE_RESULTS: [&str; 5] = ["delivered", "failed", "retried", "none", "expired"];

/// What the retention purges ([`Metrics::text_purged`]): tool output, then
/// settled history.
const PURGED_TEXT: [&str; 9] = [
    "deliveries",
    "chat_turns",
    "chat_notices",
    "ledger",
    "windows",
    "late_reports",
    "sessions",
    "links",
    "session_push",
];

/// The agent calls ([`Metrics::agent_call`]) and how each ends.
const AGENT_KINDS: [&str; 2] = ["continuation", "notice"];
const AGENT_RESULTS: [&str; 4] = ["ok", "unavailable", "retryable", "permanent"];

/// The methods an HTTP label keeps; anything else is `other`, so a client
/// inventing methods cannot grow the series.
const HTTP_METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

/// One label.
type Label = [(&'static str, &'static str); 1];
/// Two labels.
type Labels2 = [(&'static str, &'static str); 2];
/// An HTTP request's labels: method, route template, status code.
type HttpLabels = [(&'static str, String); 3];
/// An HTTP duration's labels: method and route template.
type HttpRouteLabels = [(&'static str, String); 2];
type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// The process's counters, gauges and histograms. Shared behind an `Arc`;
/// every method is lock-free but the by-label families' first use of a
/// label set.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    decisions: Family<Label, Counter>,
    deliveries: Family<Label, Counter>,
    notices: Family<Labels2, Counter>,
    pickup_latency: Histogram,
    pending_links: Gauge,
    leases_rescued: Counter,
    decision_log_failures: Counter,
    decisions_purged: Counter,
    text_purged: Family<Label, Counter>,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: HistogramFamily<HttpRouteLabels>,
    agent_calls: HistogramFamily<Labels2>,
    fence_wait: Histogram,
    fence_held: Counter,
    connections_open: Gauge,
    connections_refused: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry with every family, the known label values at 0.
    pub fn new() -> Self {
        let metrics = Metrics {
            registry: Registry::with_prefix(PREFIX),
            decisions: Family::default(),
            deliveries: Family::default(),
            notices: Family::default(),
            pickup_latency: Histogram::new(PICKUP_BUCKETS),
            pending_links: Gauge::default(),
            leases_rescued: Counter::default(),
            decision_log_failures: Counter::default(),
            decisions_purged: Counter::default(),
            text_purged: Family::default(),
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(|| Histogram::new(HTTP_BUCKETS)),
            agent_calls: Family::new_with_constructor(|| Histogram::new(AGENT_BUCKETS)),
            fence_wait: Histogram::new(FENCE_BUCKETS),
            fence_held: Counter::default(),
            connections_open: Gauge::default(),
            connections_refused: Counter::default(),
        };
        for outcome in DECISION_OUTCOMES {
            metrics
                .decisions
                .get_or_create_owned(&[("outcome", outcome)]);
        }
        for result in DELIVERY_RESULTS {
            metrics
                .deliveries
                .get_or_create_owned(&[("result", result)]);
        }
        for channel in NOTICE_CHANNELS {
            for result in NOTICE_RESULTS {
                metrics
                    .notices
                    .get_or_create_owned(&[("channel", channel), ("result", result)]);
            }
        }
        for what in PURGED_TEXT {
            metrics.text_purged.get_or_create_owned(&[("what", what)]);
        }
        for kind in AGENT_KINDS {
            for result in AGENT_RESULTS {
                metrics
                    .agent_calls
                    .get_or_create_owned(&[("kind", kind), ("result", result)]);
            }
        }
        metrics.registered()
    }

    /// Registers every family (the registry holds clones: the handles
    /// share their values).
    fn registered(mut self) -> Self {
        let r = &mut self.registry;
        r.register(
            "decisions",
            "Policy decisions by outcome",
            self.decisions.clone(),
        );
        r.register(
            "deliveries",
            "Agent deliveries by result",
            self.deliveries.clone(),
        );
        r.register(
            "notices",
            "Notice delivery attempts by channel (agent, operator) and result",
            self.notices.clone(),
        );
        r.register(
            "pickup_latency_seconds",
            "From an execution turning terminal to the agent call",
            self.pickup_latency.clone(),
        );
        r.register(
            "pending_links",
            "Links not yet settled at the last plan step",
            self.pending_links.clone(),
        );
        r.register(
            "leases_rescued",
            "Expired leases released by the rescuer",
            self.leases_rescued.clone(),
        );
        r.register(
            "decision_log_failures",
            "Plan passes whose decisions the decision log could not record",
            self.decision_log_failures.clone(),
        );
        r.register(
            "decisions_purged",
            "Logged decisions purged past their retention",
            self.decisions_purged.clone(),
        );
        r.register(
            "retention_purged",
            "Tool output purged past its retention: deliveries scrubbed, chat turns and notices deleted",
            self.text_purged.clone(),
        );
        r.register(
            "http_requests",
            "HTTP requests answered, by method, route template and status code",
            self.http_requests.clone(),
        );
        r.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template",
            self.http_duration.clone(),
        );
        r.register(
            "agent_call_duration_seconds",
            "Time each agent call took, by kind (continuation, notice) and result",
            self.agent_calls.clone(),
        );
        r.register(
            "standby_fence_wait_seconds",
            "Time a deliver step waited for the standbys to flush its rows before its calls",
            self.fence_wait.clone(),
        );
        r.register(
            "standby_fence_held",
            "Deliver steps whose calls were held back: the standbys did not confirm in time",
            self.fence_held.clone(),
        );
        r.register(
            "http_connections_open",
            "HTTP connections held open (at most --max-connections)",
            self.connections_open.clone(),
        );
        r.register(
            "http_connections_refused",
            "HTTP connections answered 503 and closed at accept: the open ones were at the cap",
            self.connections_refused.clone(),
        );
        self
    }

    /// Counts `count` policy decisions with this outcome (`wait`, `continue`,
    /// `drop`, `deferred`, `policy_error`).
    pub fn decision(&self, outcome: &'static str, count: u64) {
        self.decisions
            .get_or_create(&[("outcome", outcome)])
            .inc_by(count);
    }

    /// Counts one delivery outcome (`delivered`, `lease_lost`,
    /// `dropped_window_closed`, ...).
    pub fn delivery(&self, result: &'static str) {
        self.deliveries.get_or_create(&[("result", result)]).inc();
    }

    /// Counts `count` notice attempts on `channel` (`operator`) that ended
    /// `result` (`delivered`, `failed`, `retried`, `none`, `expired`).
    pub fn notice(&self, channel: &'static str, result: &'static str, count: u64) {
        if count > 0 {
            self.notices
                .get_or_create(&[("channel", channel), ("result", result)])
                .inc_by(count);
        }
    }

    /// Records the time from an execution turning terminal to the start of
    /// the agent call.
    pub fn pickup_latency(&self, latency: Duration) {
        self.pickup_latency.observe(latency.as_secs_f64());
    }

    /// The number of links the last plan pass examined (a gauge).
    pub fn set_pending_links(&self, count: u64) {
        self.pending_links
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Counts leases the rescuer released after their holders stopped renewing them.
    pub fn leases_rescued(&self, count: u64) {
        self.leases_rescued.inc_by(count);
    }

    /// Counts a pass whose decisions could not be logged.
    pub fn decision_log_failed(&self) {
        self.decision_log_failures.inc();
    }

    /// Counts decisions purged from the log.
    pub fn decisions_purged(&self, count: u64) {
        self.decisions_purged.inc_by(count);
    }

    /// Counts `count` rows purged past their retention: tool output
    /// (`deliveries` scrubbed, `chat_turns` or `chat_notices` deleted) or
    /// settled history (`ledger`, `windows`, `late_reports`, `sessions`,
    /// `links` deleted).
    pub fn text_purged(&self, what: &'static str, count: u64) {
        self.text_purged
            .get_or_create(&[("what", what)])
            .inc_by(count);
    }

    /// Counts one answered HTTP request and its duration. `route` is the
    /// matched route's template (`/v1/sessions/{session_id}`), never the
    /// path: ids in a label would make a series per session.
    pub fn http_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let method = HTTP_METHODS
            .into_iter()
            .find(|known| *known == method)
            .unwrap_or("other");
        self.http_requests
            .get_or_create(&[
                ("method", method.to_owned()),
                ("route", route.to_owned()),
                ("status", status.to_string()),
            ])
            .inc();
        self.http_duration
            .get_or_create(&[("method", method.to_owned()), ("route", route.to_owned())])
            .observe(elapsed.as_secs_f64());
    }

    /// Records one agent call of `kind` (`continuation`, `notice`) that
    /// ended `result` (`ok`, `unavailable`, `retryable`, `permanent`).
    pub fn agent_call(&self, kind: &'static str, result: &'static str, elapsed: Duration) {
        self.agent_calls
            .get_or_create(&[("kind", kind), ("result", result)])
            .observe(elapsed.as_secs_f64());
    }

    /// Records one wait of the standby fence, and counts it when the
    /// standbys did not confirm (the step's calls were held back).
    pub fn standby_fence(&self, confirmed: bool, waited: Duration) {
        self.fence_wait.observe(waited.as_secs_f64());
        if !confirmed {
            self.fence_held.inc();
        }
    }

    /// One more HTTP connection held open.
    pub fn connection_opened(&self) {
        self.connections_open.inc();
    }

    /// One HTTP connection closed.
    pub fn connection_closed(&self) {
        self.connections_open.dec();
    }

    /// One HTTP connection refused at the cap.
    pub fn connection_refused(&self) {
        self.connections_refused.inc();
    }

    #[cfg(feature = "test-support")]
    /// Decisions recorded so far with this outcome.
    pub fn decisions_with(&self, outcome: &'static str) -> u64 {
        self.decisions
            .get(&[("outcome", outcome)])
            .map_or(0, |c| c.get())
    }

    #[cfg(feature = "test-support")]
    /// Deliveries recorded so far with this result.
    pub fn deliveries_with(&self, result: &'static str) -> u64 {
        self.deliveries
            .get(&[("result", result)])
            .map_or(0, |c| c.get())
    }

    /// The Prometheus text exposition of this process's metrics and of what
    /// `scrape` read.
    pub fn render(&self, scrape: &Scrape) -> String {
        let mut out = String::new();
        let read = scrape.registry();
        let process = process::registry(scrape.process);
        let encoded = prometheus_text::encode(&mut out, &self.registry)
            .and_then(|()| prometheus_text::encode(&mut out, &read))
            .and_then(|()| prometheus_text::encode(&mut out, &process));
        if encoded.is_err() {
            // Writing to a String does not fail; an encoder bug would.
            tracing::warn!("metrics: the exposition could not be encoded in full");
        }
        out
    }
}
