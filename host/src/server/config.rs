//! What a process is told: the settings [`super::serve`] builds everything
//! from, with the defaults `nomos-continue serve` starts with.

use derive_setters::Setters;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::connections::DEFAULT_MAX_CONNECTIONS;
use super::exposure::Insecure;
use super::tls::TlsFiles;
use crate::agent::chat::DEFAULT_BUDGET_CHARS;
use crate::agent::{OperatorConfig, WebhookSecret};
use crate::api::{Auth, PushLimits};
use crate::clock::Clock;
use crate::maintenance::{HistoryRetention, Retention, TextRetention, DEFAULT_STUCK_AFTER};
use crate::metrics::Metrics;
use crate::store::Store;

/// `--task-poll-after`'s default: a minute without a push from a task's
/// agent before it is asked.
pub const DEFAULT_TASK_POLL_AFTER: Duration = Duration::from_secs(60);
use crate::policy::Limits;
use crate::worker::{NotifyConfig, WorkerConfig};

/// The default database: an SQLite file in the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite:nomos-continue.db";
/// The model `chatWith` asks for when none is named: a common name that
/// OpenAI and most compatible servers (vLLM, llama.cpp aliases) accept;
/// local servers usually want `--openai-model` set to what they serve.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
/// How often a running process refreshes its worker registration.
pub const DEFAULT_WORKER_HEARTBEAT: Duration = Duration::from_secs(5);
/// Age of a registration's last heartbeat after which its process counts as
/// dead and a new process may take the worker id over: three heartbeats, so
/// one late or lost heartbeat (a slow database, a reconnect) does not free
/// the id of a live process.
pub const DEFAULT_WORKER_STALE_AFTER: Duration = Duration::from_secs(15);

/// Seven days of decisions: a week of traffic to replay a candidate on.
pub const DEFAULT_DECISION_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Thirty days of tool output in the ledger and the chat history: long
/// enough to look into last month's incident, short enough that a secret
/// a tool printed does not stay for ever.
pub const DEFAULT_TEXT_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

/// Thirty days of settled history (ledger rows, windows, late reports):
/// what the console and `status` show of last month.
pub const DEFAULT_HISTORY_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

/// The shortest link retention `serve` accepts: the longest an assent
/// window lasts (30 minutes), and far longer than a runtime's replay of
/// its tool results and reports after a failover (seconds to minutes),
/// which must find the links it replays.
pub const MIN_LINK_RETENTION: Duration = Duration::from_secs(30 * 60);

/// Everything a process can be told. Where the API listens is not here:
/// the caller binds the listener and hands it over.
#[derive(Debug, Clone, Setters)]
#[setters(prefix = "with_")]
#[non_exhaustive]
pub struct ServeConfig {
    /// `postgres://…` or `sqlite:…`; several PostgreSQL URLs (or one
    /// naming several hosts) for a primary and its standbys, of which the
    /// writable one is used and followed (`Store::connect_any`).
    pub database_urls: Vec<String>,
    /// Migrate the database at start-up (`serve` does unless
    /// `--no-migrate`); off, a database not migrated to this version stops
    /// the start instead.
    pub migrate: bool,
    /// The runtime's bearer token (reporting and reading); with no token at
    /// all the API is open, which `serve` allows on loopback only.
    pub token: Option<String>,
    /// The read-only bearer token (`--read-token`): `/metrics`, the GET
    /// routes and the console, never a write.
    pub read_token: Option<String>,
    /// The admin bearer token, the only one that changes the policy over
    /// HTTP; with a runtime token and no admin token, policy changes over
    /// HTTP are refused.
    pub admin_token: Option<String>,
    /// Terminate TLS with these files; `None` serves plain HTTP.
    pub tls: Option<TlsFiles>,
    /// Explicit overrides of the exposure checks (see `exposure.rs`).
    pub insecure: Insecure,
    /// Where continuations are POSTed (the runtime's webhook).
    pub agent_webhook: Option<String>,
    /// The bearer token for the webhook.
    pub agent_token: Option<String>,
    /// Each signs every webhook request (Standard Webhooks); two while one
    /// is rotated. None sends them unsigned, with a warning at start-up.
    pub webhook_secrets: Vec<WebhookSecret>,
    /// The operator's channel (`--notify-webhook`): every notice goes
    /// there too, apart from the agent. `None` leaves notices to the agent
    /// and the console, and one that the agent could not take is counted as
    /// reaching no one.
    pub notify: Option<OperatorConfig>,
    /// The operator channel's budget, lease and poll.
    pub notify_settings: NotifyConfig,
    /// How long an execution linked in an open window may run before its
    /// operator is told (`--stuck-after`).
    pub stuck_after: Duration,
    /// How long a registered A2A task may go unheard before its agent is
    /// asked for it (`--task-poll-after`); every such task is also asked
    /// about once at start-up.
    pub task_poll_after: Duration,
    /// An OpenAI-compatible chat endpoint for the built-in `chatWith`
    /// (history from the store); exclusive with `agent_webhook`.
    pub agent_openai: Option<String>,
    /// The `model` of every chat request.
    pub openai_model: String,
    /// Sent as the chat endpoint's bearer token.
    pub openai_key: Option<String>,
    /// Characters of message text one `chatWith` request carries.
    pub openai_budget_chars: usize,
    /// A policy file, watched for changes; `None` is the built-in policy.
    pub policy: Option<PathBuf>,
    /// Public key files (`policy keygen`'s `.pub`): every revision but the
    /// built-in one must be signed by one of their keys, whatever its
    /// source (see `deploy`); two while a key is rotated; none
    /// checks no signatures.
    pub policy_verify_keys: Vec<PathBuf>,
    /// The worker's settings.
    pub worker: WorkerConfig,
    /// The policy sandbox's limits.
    pub limits: Limits,
    /// How often the policy file and the database's active revision are
    /// checked.
    pub policy_poll: Duration,
    /// How often the rescuer looks for expired leases, and the retention
    /// task purges the decision log.
    pub rescue_interval: Duration,
    /// How long logged decisions are kept (`serve --decision-retention`);
    /// the worker logs none when `worker.log_decisions` is off.
    pub decision_retention: Duration,
    /// How long settled deliveries keep their note and last error, which
    /// hold tool output (`serve --delivery-retention`); `None` keeps
    /// them.
    pub delivery_retention: Option<Duration>,
    /// How long the chat history and `chatWith` notices of a session with
    /// nothing in flight are kept (`serve --chat-retention`); `None`
    /// keeps them.
    pub chat_retention: Option<Duration>,
    /// How long settled history is kept: ledger rows, ended windows, late
    /// reports, the session list's empty sessions (`serve
    /// --history-retention`); `None` keeps it.
    pub history_retention: Option<Duration>,
    /// How long settled links are kept in the seed's table, with their
    /// data and the standalone table's executions (`serve
    /// --link-retention`), and the horizon before which a finished
    /// execution is never linked again; `None` keeps them (the runtime may
    /// read its own links).
    pub link_retention: Option<Duration>,
    /// How often the worker registration's heartbeat is written.
    pub worker_heartbeat: Duration,
    /// How old a registration's heartbeat must be before another process
    /// may take its worker id over; also how long a restart under the id of
    /// a process killed without shutting down is refused. Several heartbeats.
    pub worker_stale_after: Duration,
    /// LISTEN for PostgreSQL wake-ups; `false` leaves the worker to its
    /// poll (and the API's in-process signal).
    pub wake_listener: bool,
    /// An OTLP/HTTP collector's base URL: [`super::serve`] exports the
    /// `link`, `decide` and `deliver` spans there; `None` exports nothing
    /// (the trace context is carried to the runtime either way).
    pub otlp_endpoint: Option<String>,
    /// The base URL remote agents reach this server at (`--public-url`),
    /// for minted A2A push URLs; `None` is `http://<listen address>`.
    pub public_url: Option<String>,
    /// HTTP connections held open at once (`--max-connections`); past it a
    /// new connection is answered 503 and closed (see `connections`).
    pub max_connections: usize,
    /// The A2A push route's rate limits (`--push-rate`,
    /// `--push-rate-total`).
    pub push_limits: PushLimits,
    /// Log every HTTP request (`--access-log`).
    pub access_log: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            database_urls: vec![DEFAULT_DATABASE_URL.into()],
            migrate: true,
            token: None,
            read_token: None,
            admin_token: None,
            tls: None,
            insecure: Insecure::default(),
            agent_webhook: None,
            agent_token: None,
            webhook_secrets: Vec::new(),
            notify: None,
            notify_settings: NotifyConfig::default(),
            stuck_after: DEFAULT_STUCK_AFTER,
            task_poll_after: DEFAULT_TASK_POLL_AFTER,
            agent_openai: None,
            openai_model: DEFAULT_OPENAI_MODEL.into(),
            openai_key: None,
            openai_budget_chars: DEFAULT_BUDGET_CHARS,
            policy: None,
            policy_verify_keys: Vec::new(),
            worker: WorkerConfig::default(),
            limits: Limits::default(),
            policy_poll: Duration::from_secs(2),
            rescue_interval: Duration::from_secs(15),
            decision_retention: DEFAULT_DECISION_RETENTION,
            delivery_retention: Some(DEFAULT_TEXT_RETENTION),
            chat_retention: Some(DEFAULT_TEXT_RETENTION),
            history_retention: Some(DEFAULT_HISTORY_RETENTION),
            link_retention: None,
            worker_heartbeat: DEFAULT_WORKER_HEARTBEAT,
            worker_stale_after: DEFAULT_WORKER_STALE_AFTER,
            wake_listener: true,
            otlp_endpoint: None,
            public_url: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            push_limits: PushLimits::default(),
            access_log: false,
        }
    }
}

impl ServeConfig {
    /// The API's tokens and what each opens.
    pub(crate) fn auth(&self) -> Auth {
        Auth::new(self.token.as_deref(), self.admin_token.as_deref())
            .with_read(self.read_token.as_deref())
    }

    /// The retention task these settings describe.
    pub(super) fn retention(
        &self,
        store: Store,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
    ) -> Retention {
        // A compact decision's input is rebuilt with its execution's
        // result, which the link retention scrubs: past it, replay and
        // capture refuse those decisions.
        if let Some(links) = self.link_retention.filter(|l| *l < self.decision_retention) {
            tracing::warn!(
                link_retention = %humantime::format_duration(links),
                decision_log = %humantime::format_duration(self.decision_retention),
                "the decision log outlives the link retention: `policy replay` and `policy \
                 capture` refuse decisions older than the link retention (their execution's \
                 result is gone)"
            );
        }
        Retention::new(store, clock, metrics, Some(self.decision_retention))
            .with_text(TextRetention {
                deliveries: self.delivery_retention,
                chat: self.chat_retention,
            })
            .with_history(HistoryRetention {
                history: self.history_retention,
                links: self.link_retention,
            })
    }
}
