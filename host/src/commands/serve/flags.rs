//! The flags of `serve`, one struct per heading of its help: what an
//! operator looks for together is listed together.
//!
//! Every duration is written one way (see [`duration`]); the flags that
//! took a unit in their name are kept hidden for a release.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::super::duration;
use super::super::{DbArgs, PolicyLimitArgs};
use super::DEFAULT_LISTEN;
use crate::agent::chat::DEFAULT_BUDGET_CHARS;
use crate::agent::NotifyFormat;
use crate::api::{Rate, DEFAULT_PUSH_RATE, DEFAULT_PUSH_RATE_TOTAL};
use crate::server::{DEFAULT_MAX_CONNECTIONS, DEFAULT_OPENAI_MODEL};

/// The database, and how `serve` treats it at start-up.
#[derive(Args)]
#[command(next_help_heading = "Database")]
pub struct StoreFlags {
    #[command(flatten)]
    pub db: DbArgs,
    /// Do not migrate at start-up: refuse to start (exit non-zero) on a
    /// database that `nomos-continue migrate` has not brought up to this
    /// version. For replicas started while an operator migrates by hand.
    #[arg(long, env = "NOMOS_CONTINUE_NO_MIGRATE")]
    pub no_migrate: bool,
    /// Before any agent call, wait this long at most for every standby
    /// streaming from the PostgreSQL primary to hold the plan being sent
    /// (`2s`, `500ms`); calls not confirmed in time are postponed and
    /// retried. `0` turns the fence off. See docs/operations.md, "Running
    /// with standbys".
    #[arg(long, env = "NOMOS_CONTINUE_STANDBY_FENCE_TIMEOUT", default_value = "5s",
        value_parser = fence_timeout)]
    pub standby_fence_timeout: Duration,
}

/// `--standby-fence-timeout`: a duration, `0`, or `off` as it always took.
fn fence_timeout(text: &str) -> Result<Duration, String> {
    match text.trim() {
        "off" => Ok(Duration::ZERO),
        other => duration::parse(other),
    }
}

/// Where the API listens and who may call it.
#[derive(Args)]
#[command(next_help_heading = "API")]
pub struct ApiFlags {
    /// The API's address; loopback by default.
    #[arg(long, env = "NOMOS_CONTINUE_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// The runtime's bearer token: tool results, statuses, approvals, turns
    /// and reads (every route but /healthz and the policy changes).
    #[arg(long, env = "NOMOS_CONTINUE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Read the runtime's token from this file (keeps it out of the
    /// process list); surrounding whitespace is ignored.
    #[arg(long, env = "NOMOS_CONTINUE_TOKEN_FILE", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// The read-only bearer token: /metrics, every GET route and the
    /// console, never a write (for a Prometheus server or a person
    /// watching the console).
    #[arg(long, env = "NOMOS_CONTINUE_READ_TOKEN", hide_env_values = true)]
    pub read_token: Option<String>,
    /// Read the read-only token from this file.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_READ_TOKEN_FILE",
        conflicts_with = "read_token"
    )]
    pub read_token_file: Option<PathBuf>,
    /// The admin bearer token, the only one that can change the policy over
    /// HTTP (upload, roll back); without it, those routes are refused when
    /// a runtime token is set.
    #[arg(long, env = "NOMOS_CONTINUE_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Read the admin token from this file.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_ADMIN_TOKEN_FILE",
        conflicts_with = "admin_token"
    )]
    pub admin_token_file: Option<PathBuf>,
    /// Terminate TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, env = "NOMOS_CONTINUE_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM); needs --tls-cert.
    #[arg(long, env = "NOMOS_CONTINUE_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve a non-loopback address with no token at all. Anyone who can
    /// reach it controls when the agent is re-invoked; logged at every start.
    #[arg(long, env = "NOMOS_CONTINUE_INSECURE_NO_TOKEN")]
    pub insecure_no_token: bool,
    /// Accept bearer tokens over plain HTTP on a non-loopback address (a
    /// trusted network); logged at every start.
    #[arg(long, env = "NOMOS_CONTINUE_INSECURE_PLAINTEXT")]
    pub insecure_plaintext: bool,
    /// HTTP connections held open at once; past it a new connection is
    /// answered 503 with `Retry-After` and closed, so a runtime that opens
    /// connections without bound cannot exhaust the server's memory.
    #[arg(long, env = "NOMOS_CONTINUE_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_connections: usize,
    /// The base URL remote agents reach this server at, for the A2A push
    /// URLs minted by `POST /v1/sessions/{id}/tasks` (behind a proxy or a
    /// load balancer, its public address); default `http://<listen address>`.
    #[arg(long, env = "NOMOS_CONTINUE_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Pushes one A2A push token may send (`20/s`, `600/m`; as many at
    /// once, then at that rate); past it the push route answers 429 with
    /// `Retry-After`. `0` turns the limit off.
    #[arg(long, env = "NOMOS_CONTINUE_PUSH_RATE", default_value = DEFAULT_PUSH_RATE,
        value_parser = rate)]
    pub push_rate: RateFlag,
    /// Pushes the whole server takes on the A2A push route, whatever their
    /// token (`1000/s`); past it 429. `0` turns it off.
    #[arg(long, env = "NOMOS_CONTINUE_PUSH_RATE_TOTAL", default_value = DEFAULT_PUSH_RATE_TOTAL,
        value_parser = rate)]
    pub push_rate_total: RateFlag,
}

/// A rate flag's value: `None` for `0`, no limit.
#[derive(Debug, Clone, Copy)]
pub struct RateFlag(pub Option<Rate>);

fn rate(text: &str) -> Result<RateFlag, String> {
    Rate::parse(text).map(RateFlag)
}

/// Who continuations and notices go to.
#[derive(Args)]
#[command(next_help_heading = "The agent")]
pub struct AgentFlags {
    /// POST continuations and notices to this runtime webhook.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_AGENT_WEBHOOK",
        hide_env_values = true,
        conflicts_with = "agent_openai"
    )]
    pub agent_webhook: Option<String>,
    /// Bearer token sent to the webhook.
    #[arg(long, env = "NOMOS_CONTINUE_AGENT_TOKEN", hide_env_values = true)]
    pub agent_token: Option<String>,
    /// Sign every webhook request with this Standard Webhooks secret
    /// (`whsec_` and a base64 key of at least 24 bytes). Repeat it (or
    /// separate secrets with commas) to sign with two while one is rotated.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_WEBHOOK_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub webhook_secret: Vec<String>,
    /// Read webhook secrets from this file, one a line (keeps them out of
    /// the process list); they sign beside any --webhook-secret.
    #[arg(long, env = "NOMOS_CONTINUE_WEBHOOK_SECRET_FILE")]
    pub webhook_secret_file: Option<PathBuf>,
    /// Built-in chatWith: call this OpenAI-compatible chat endpoint with the
    /// session's stored history (record turns with POST /v1/sessions/{id}/turns).
    #[arg(long, env = "NOMOS_CONTINUE_AGENT_OPENAI", hide_env_values = true)]
    pub agent_openai: Option<String>,
    /// The model chatWith asks for.
    #[arg(long, env = "NOMOS_CONTINUE_OPENAI_MODEL", default_value = DEFAULT_OPENAI_MODEL)]
    pub openai_model: String,
    /// API key sent to the chatWith endpoint as a bearer token.
    #[arg(long, env = "NOMOS_CONTINUE_OPENAI_KEY", hide_env_values = true)]
    pub openai_key: Option<String>,
    /// Characters of message text one chatWith request carries; the oldest
    /// turns are left out beyond it. Below the model's context window.
    #[arg(long, env = "NOMOS_CONTINUE_OPENAI_BUDGET_CHARS", default_value_t = DEFAULT_BUDGET_CHARS)]
    pub openai_budget_chars: usize,
}

/// Where a person hears of what the agent could not be told.
#[derive(Args)]
#[command(next_help_heading = "Operator notices")]
pub struct NotifyFlags {
    /// Also send every notice to a person here, apart from the agent (so a
    /// notice about a dead agent endpoint still reaches someone): an alert
    /// router, a chat channel's incoming webhook. Signed like the agent's
    /// webhook with --notify-secret.
    #[arg(long, env = "NOMOS_CONTINUE_NOTIFY_WEBHOOK", hide_env_values = true)]
    pub notify_webhook: Option<String>,
    /// The notify webhook's body: `json` (the versioned operator_notice.v1)
    /// or `slack` (a Slack-compatible incoming-webhook message).
    #[arg(long, env = "NOMOS_CONTINUE_NOTIFY_FORMAT", default_value = "json")]
    pub notify_format: NotifyFormat,
    /// Bearer token sent to the notify webhook.
    #[arg(long, env = "NOMOS_CONTINUE_NOTIFY_TOKEN", hide_env_values = true)]
    pub notify_token: Option<String>,
    /// Sign every notify webhook request with this Standard Webhooks secret
    /// (as --webhook-secret; repeat it or separate with commas to rotate).
    #[arg(
        long,
        env = "NOMOS_CONTINUE_NOTIFY_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub notify_secret: Vec<String>,
    /// Read notify webhook secrets from this file, one a line.
    #[arg(long, env = "NOMOS_CONTINUE_NOTIFY_SECRET_FILE")]
    pub notify_secret_file: Option<PathBuf>,
    /// Tell the operator about an execution linked in an open window that
    /// has not finished after this long (`10m`, `1h`), and again when its
    /// window is about to close with it still running.
    #[arg(long, env = "NOMOS_CONTINUE_STUCK_AFTER", default_value = "10m",
        value_parser = duration::parse)]
    pub stuck_after: Duration,
}

/// Which code decides, and how it is found.
#[derive(Args)]
#[command(next_help_heading = "The policy")]
pub struct PolicyFlags {
    /// A policy component to run instead of the built-in one; the file is
    /// watched and a valid new version is swapped in without a restart.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY")]
    pub policy: Option<PathBuf>,
    /// Run only policy revisions signed by this key (a `policy keygen`
    /// `.pub` file): uploads, the policy file (signature in FILE.sig) and
    /// revisions read from the database alike. The built-in policy needs
    /// no signature. Repeat it (or separate files with commas) to accept
    /// two keys while one is rotated.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_VERIFY_KEY", value_delimiter = ',')]
    pub policy_verify_key: Vec<PathBuf>,
    /// How often the policy file and the database's active revision are
    /// checked (`2s`).
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_POLL_INTERVAL", default_value = "2s",
        value_parser = duration::parse)]
    pub policy_poll_interval: Duration,
    /// Deprecated: `--policy-poll-interval` in milliseconds.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_POLICY_POLL_MS",
        hide = true,
        conflicts_with = "policy_poll_interval"
    )]
    pub policy_poll_ms: Option<u64>,
    #[command(flatten)]
    pub limits: PolicyLimitArgs,
}

/// How the worker finds, claims and retries work.
#[derive(Args)]
#[command(next_help_heading = "The worker")]
pub struct WorkerFlags {
    /// This process's worker id (unique per replica); generated if unset.
    #[arg(long, env = "NOMOS_CONTINUE_WORKER_ID")]
    pub worker_id: Option<String>,
    /// Fallback poll interval (`2s`); wake-ups make it rarely matter.
    #[arg(long, env = "NOMOS_CONTINUE_POLL_INTERVAL", default_value = "2s",
        value_parser = duration::parse)]
    pub poll_interval: Duration,
    /// Deprecated: `--poll-interval` in milliseconds.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_POLL_MS",
        hide = true,
        conflicts_with = "poll_interval"
    )]
    pub poll_ms: Option<u64>,
    /// Delivery lease (`6s`), renewed every third of it while a call runs:
    /// how long a dead replica's claims wait for another replica.
    #[arg(long, env = "NOMOS_CONTINUE_LEASE", default_value = "6s",
        value_parser = duration::parse)]
    pub lease: Duration,
    /// Deprecated: `--lease` in seconds.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_LEASE_SECS",
        hide = true,
        conflicts_with = "lease"
    )]
    pub lease_secs: Option<u64>,
    /// How long a delivery is retried after its first failed call before it
    /// ends as failed, with a notice (`15m`).
    #[arg(long, env = "NOMOS_CONTINUE_RETRY_BUDGET", default_value = "15m",
        value_parser = duration::parse)]
    pub retry_budget: Duration,
    /// Deprecated: `--retry-budget` in seconds.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_RETRY_BUDGET_SECS",
        hide = true,
        conflicts_with = "retry_budget"
    )]
    pub retry_budget_secs: Option<u64>,
    /// The host's cap on continuations per assent window, whatever the
    /// policy answers (the default policy stops at 20 on its own).
    #[arg(long, env = "NOMOS_CONTINUE_HARD_CAP", default_value_t = 50)]
    pub hard_cap: i32,
    /// Ask a remote A2A agent for a registered task (GetTask; 0.3
    /// tasks/get) when no push was heard of it for this long (`60s`); every
    /// such task is asked about once at start-up too.
    #[arg(long, env = "NOMOS_CONTINUE_TASK_POLL_AFTER", default_value = "60s",
        value_parser = duration::parse)]
    pub task_poll_after: Duration,
    /// Do not LISTEN for PostgreSQL wake-ups: the worker finds work by its
    /// poll alone (for deployments whose pooler drops LISTEN, and to test
    /// that correctness never depends on a wake-up).
    #[arg(long, env = "NOMOS_CONTINUE_NO_WAKE_LISTENER")]
    pub no_wake_listener: bool,
}

/// How long what is settled is kept.
#[derive(Args)]
#[command(next_help_heading = "Retention")]
pub struct RetentionFlags {
    /// How long the decision log keeps each decision the policy took (its
    /// input, answer and what followed), for `policy replay` and `policy
    /// capture` (`7d`, `12h`); `0` logs nothing.
    #[arg(long, env = "NOMOS_CONTINUE_DECISION_RETENTION", default_value = "7d",
        value_parser = duration::parse)]
    pub decision_retention: Duration,
    /// Deprecated: `--decision-retention`, in days or a duration.
    #[arg(long, env = "NOMOS_CONTINUE_DECISION_LOG_DAYS", hide = true,
        conflicts_with = "decision_retention", value_parser = duration::days_or_duration)]
    pub decision_log_days: Option<String>,
    /// How long a settled delivery keeps its note and last error (tool
    /// output that may hold a secret) (`30d`); then both are emptied and
    /// the row stays in the ledger. `0` keeps them.
    #[arg(long, env = "NOMOS_CONTINUE_DELIVERY_RETENTION", default_value = "30d",
        value_parser = duration::parse)]
    pub delivery_retention: Duration,
    /// Deprecated: `--delivery-retention`, in days or a duration.
    #[arg(long, env = "NOMOS_CONTINUE_DELIVERY_RETENTION_DAYS", hide = true,
        conflicts_with = "delivery_retention", value_parser = duration::days_or_duration)]
    pub delivery_retention_days: Option<String>,
    /// How long the chat history and chatWith notices of a session with
    /// nothing in flight are kept (`30d`); then they are deleted. `0` keeps
    /// them.
    #[arg(long, env = "NOMOS_CONTINUE_CHAT_RETENTION", default_value = "30d",
        value_parser = duration::parse)]
    pub chat_retention: Duration,
    /// Deprecated: `--chat-retention`, in days or a duration.
    #[arg(long, env = "NOMOS_CONTINUE_CHAT_RETENTION_DAYS", hide = true,
        conflicts_with = "chat_retention", value_parser = duration::days_or_duration)]
    pub chat_retention_days: Option<String>,
    /// How long settled history is kept (`30d`, `12h`): ledger rows
    /// delivered, failed or dropped, ended assent windows of sessions with
    /// nothing in flight, late reports, and sessions left with nothing;
    /// then the retention task deletes them. `0` keeps them.
    #[arg(long, env = "NOMOS_CONTINUE_HISTORY_RETENTION", default_value = "30d",
        value_parser = duration::parse)]
    pub history_retention: Duration,
    /// How long a settled link is kept in the runtime's link table
    /// (`nomos_plan_executions`) after its execution finished, with its
    /// per-link data and, in the standalone `executions` table, its result
    /// (`7d`; at least `30m`): also the horizon before which a finished
    /// execution is never linked again. `0` (the default) keeps them: set
    /// it only when the runtime does not read settled links itself.
    #[arg(long, env = "NOMOS_CONTINUE_LINK_RETENTION", default_value = "0",
        value_parser = duration::parse)]
    pub link_retention: Duration,
}

/// What the process tells about itself.
#[derive(Args)]
#[command(next_help_heading = "Logs and telemetry")]
pub struct TelemetryFlags {
    /// Log every HTTP request (method, route, status, time taken, request
    /// id) at `info`, under the target `nomos_continue::access`.
    #[arg(long, env = "NOMOS_CONTINUE_ACCESS_LOG")]
    pub access_log: bool,
    /// Export the link, decide and deliver spans over OTLP/HTTP (protobuf)
    /// to this collector base URL (`/v1/traces` is added); off when unset.
    /// The trace context reaches the runtime either way.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", hide_env_values = true)]
    pub otlp_endpoint: Option<String>,
}
