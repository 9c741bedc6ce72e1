//! `nomos-continue serve`: its flags, turned into a [`ServeConfig`] for
//! [`server::serve`], on its own runtime until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{DbArgs, PolicyLimitArgs};
use crate::agent::chat::DEFAULT_BUDGET_CHARS;
use crate::agent::{NotifyFormat, OperatorConfig, WebhookSecret};
use crate::server::{
    self, Insecure, ServeConfig, TlsFiles, DEFAULT_MAX_CONNECTIONS, DEFAULT_OPENAI_MODEL,
    MIN_LINK_RETENTION,
};

/// The default API address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7300";

/// The flags of `serve`.
#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The API's address; loopback by default.
    #[arg(long, env = "NOMOS_CONTINUE_LISTEN", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// The runtime's bearer token: tool results, statuses, approvals, turns
    /// and reads (every route but /healthz and the policy changes).
    #[arg(long, env = "NOMOS_CONTINUE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Read the runtime's token from this file (keeps it out of the
    /// process list); surrounding whitespace is ignored.
    #[arg(long, env = "NOMOS_CONTINUE_TOKEN_FILE", conflicts_with = "token")]
    token_file: Option<PathBuf>,
    /// The admin bearer token, the only one that can change the policy over
    /// HTTP (upload, roll back); without it, those routes are refused when
    /// a runtime token is set.
    #[arg(long, env = "NOMOS_CONTINUE_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// Read the admin token from this file.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_ADMIN_TOKEN_FILE",
        conflicts_with = "admin_token"
    )]
    admin_token_file: Option<PathBuf>,
    /// Terminate TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, env = "NOMOS_CONTINUE_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM); needs --tls-cert.
    #[arg(long, env = "NOMOS_CONTINUE_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve a non-loopback address with no token at all. Anyone who can
    /// reach it controls when the agent is re-invoked; logged at every start.
    #[arg(long, env = "NOMOS_CONTINUE_INSECURE_NO_TOKEN")]
    insecure_no_token: bool,
    /// Accept bearer tokens over plain HTTP on a non-loopback address (a
    /// trusted network); logged at every start.
    #[arg(long, env = "NOMOS_CONTINUE_INSECURE_PLAINTEXT")]
    insecure_plaintext: bool,
    /// POST continuations and notices to this runtime webhook.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_AGENT_WEBHOOK",
        hide_env_values = true,
        conflicts_with = "agent_openai"
    )]
    agent_webhook: Option<String>,
    /// Built-in chatWith: call this OpenAI-compatible chat endpoint with the
    /// session's stored history (record turns with POST /v1/sessions/{id}/turns).
    #[arg(long, env = "NOMOS_CONTINUE_AGENT_OPENAI", hide_env_values = true)]
    agent_openai: Option<String>,
    /// The model chatWith asks for.
    #[arg(long, env = "NOMOS_CONTINUE_OPENAI_MODEL", default_value = DEFAULT_OPENAI_MODEL)]
    openai_model: String,
    /// API key sent to the chatWith endpoint as a bearer token.
    #[arg(long, env = "NOMOS_CONTINUE_OPENAI_KEY", hide_env_values = true)]
    openai_key: Option<String>,
    /// Characters of message text one chatWith request carries; the oldest
    /// turns are left out beyond it. Below the model's context window.
    #[arg(long, env = "NOMOS_CONTINUE_OPENAI_BUDGET_CHARS", default_value_t = DEFAULT_BUDGET_CHARS)]
    openai_budget_chars: usize,
    /// Bearer token sent to the webhook.
    #[arg(long, env = "NOMOS_CONTINUE_AGENT_TOKEN", hide_env_values = true)]
    agent_token: Option<String>,
    /// Sign every webhook request with this Standard Webhooks secret
    /// (`whsec_` and a base64 key of at least 24 bytes). Repeat it (or
    /// separate secrets with commas) to sign with two while one is rotated.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_WEBHOOK_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    webhook_secret: Vec<String>,
    /// Read webhook secrets from this file, one a line (keeps them out of
    /// the process list); they sign beside any --webhook-secret.
    #[arg(long, env = "NOMOS_CONTINUE_WEBHOOK_SECRET_FILE")]
    webhook_secret_file: Option<PathBuf>,
    /// Also send every notice to a person here, apart from the agent (so a
    /// notice about a dead agent endpoint still reaches someone): an alert
    /// router, a chat channel's incoming webhook. Signed like the agent's
    /// webhook with --notify-secret.
    #[arg(long, env = "NOMOS_CONTINUE_NOTIFY_WEBHOOK", hide_env_values = true)]
    notify_webhook: Option<String>,
    /// The notify webhook's body: `json` (the versioned operator_notice.v1)
    /// or `slack` (a Slack-compatible incoming-webhook message).
    #[arg(long, env = "NOMOS_CONTINUE_NOTIFY_FORMAT", default_value = "json")]
    notify_format: NotifyFormat,
    /// Bearer token sent to the notify webhook.
    #[arg(long, env = "NOMOS_CONTINUE_NOTIFY_TOKEN", hide_env_values = true)]
    notify_token: Option<String>,
    /// Sign every notify webhook request with this Standard Webhooks secret
    /// (as --webhook-secret; repeat it or separate with commas to rotate).
    #[arg(
        long,
        env = "NOMOS_CONTINUE_NOTIFY_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    notify_secret: Vec<String>,
    /// Read notify webhook secrets from this file, one a line.
    #[arg(long, env = "NOMOS_CONTINUE_NOTIFY_SECRET_FILE")]
    notify_secret_file: Option<PathBuf>,
    /// Tell the operator about an execution linked in an open window that
    /// has not finished after this long (`10m`, `1h`), and again when its
    /// window is about to close with it still running.
    #[arg(long, env = "NOMOS_CONTINUE_STUCK_AFTER", default_value = "10m",
        value_parser = humantime::parse_duration)]
    stuck_after: Duration,
    /// Ask a remote A2A agent for a registered task (GetTask; 0.3
    /// tasks/get) when no push was heard of it for this long (`60s`); every
    /// such task is asked about once at start-up too.
    #[arg(long, env = "NOMOS_CONTINUE_TASK_POLL_AFTER", default_value = "60s",
        value_parser = humantime::parse_duration)]
    task_poll_after: Duration,
    /// HTTP connections held open at once; past it a new connection is
    /// answered 503 with `Retry-After` and closed, so a runtime that opens
    /// connections without bound cannot exhaust the server's memory.
    #[arg(long, env = "NOMOS_CONTINUE_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_connections: usize,
    /// A policy component to run instead of the built-in one; the file is
    /// watched and a valid new version is swapped in without a restart.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY")]
    policy: Option<PathBuf>,
    /// Run only policy revisions signed by this key (a `policy keygen`
    /// `.pub` file): uploads, the policy file (signature in FILE.sig) and
    /// revisions read from the database alike. The built-in policy needs
    /// no signature. Repeat it (or separate files with commas) to accept
    /// two keys while one is rotated.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_VERIFY_KEY", value_delimiter = ',')]
    policy_verify_key: Vec<PathBuf>,
    /// This process's worker id (unique per replica); generated if unset.
    #[arg(long, env = "NOMOS_CONTINUE_WORKER_ID")]
    worker_id: Option<String>,
    /// Fallback poll interval in milliseconds (wake-ups make it rarely matter).
    #[arg(long, env = "NOMOS_CONTINUE_POLL_MS", default_value_t = 2000)]
    poll_ms: u64,
    /// Delivery lease in seconds, renewed every third of it while a call
    /// runs: how long a dead replica's claims wait for another replica.
    #[arg(long, env = "NOMOS_CONTINUE_LEASE_SECS", default_value_t = 6)]
    lease_secs: u64,
    /// How long a delivery is retried after its first failed call before it
    /// ends as failed (with a notice), in seconds.
    #[arg(long, env = "NOMOS_CONTINUE_RETRY_BUDGET_SECS", default_value_t = 900)]
    retry_budget_secs: u64,
    /// Policy file and database revision check interval in milliseconds.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_POLL_MS", default_value_t = 2000)]
    policy_poll_ms: u64,
    /// Before any agent call, wait this long at most for every standby
    /// streaming from the PostgreSQL primary to hold the plan being sent
    /// (`2s`, `500ms`); calls not confirmed in time are postponed and
    /// retried. `0` turns the fence off. See docs/operations.md, "Running
    /// with standbys".
    #[arg(long, env = "NOMOS_CONTINUE_STANDBY_FENCE_TIMEOUT", default_value = "5s",
        value_parser = fence_timeout)]
    standby_fence_timeout: Duration,
    /// Do not LISTEN for PostgreSQL wake-ups: the worker finds work by its
    /// poll alone (for deployments whose pooler drops LISTEN, and to test
    /// that correctness never depends on a wake-up).
    #[arg(long, env = "NOMOS_CONTINUE_NO_WAKE_LISTENER")]
    no_wake_listener: bool,
    #[command(flatten)]
    policy_limits: PolicyLimitArgs,
    /// The host's cap on continuations per assent window, whatever the
    /// policy answers (the default policy stops at 20 on its own).
    #[arg(long, env = "NOMOS_CONTINUE_HARD_CAP", default_value_t = 50)]
    hard_cap: i32,
    /// How long the decision log keeps each decision the policy took (its
    /// input, answer and what followed), for `policy replay` and `policy
    /// capture`: days (`7`) or a duration (`12h`); 0 logs nothing.
    #[arg(long, env = "NOMOS_CONTINUE_DECISION_LOG_DAYS", default_value = "7",
        value_parser = days_or_duration)]
    decision_log_days: Duration,
    /// How long a settled delivery keeps its note and last error (tool
    /// output that may hold a secret): days (`30`) or a duration (`12h`);
    /// then both are emptied and the row stays in the ledger. 0 keeps them.
    #[arg(long, env = "NOMOS_CONTINUE_DELIVERY_RETENTION_DAYS", default_value = "30",
        value_parser = days_or_duration)]
    delivery_retention_days: Duration,
    /// How long the chat history and chatWith notices of a session with
    /// nothing in flight are kept: days (`30`) or a duration (`12h`); then
    /// they are deleted. 0 keeps them.
    #[arg(long, env = "NOMOS_CONTINUE_CHAT_RETENTION_DAYS", default_value = "30",
        value_parser = days_or_duration)]
    chat_retention_days: Duration,
    /// How long settled history is kept (`30d`, `12h`): ledger rows
    /// delivered, failed or dropped, ended assent windows of sessions with
    /// nothing in flight, late reports, and sessions left with nothing;
    /// then the retention task deletes them. `0` keeps them.
    #[arg(long, env = "NOMOS_CONTINUE_HISTORY_RETENTION", default_value = "30d",
        value_parser = days_or_duration)]
    history_retention: Duration,
    /// How long a settled link is kept in the runtime's link table
    /// (`nomos_plan_executions`) after its execution finished, with its
    /// per-link data and, in the standalone `executions` table, its result
    /// (`7d`; at least `30m`): also the horizon before which a finished
    /// execution is never linked again. `0` (the default) keeps them: set
    /// it only when the runtime does not read settled links itself.
    #[arg(long, env = "NOMOS_CONTINUE_LINK_RETENTION", default_value = "0",
        value_parser = days_or_duration)]
    link_retention: Duration,
    /// Export the link, decide and deliver spans over OTLP/HTTP (protobuf)
    /// to this collector base URL (`/v1/traces` is added); off when unset.
    /// The trace context reaches the runtime either way.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", hide_env_values = true)]
    otlp_endpoint: Option<String>,
    /// The base URL remote agents reach this server at, for the A2A push
    /// URLs minted by `POST /v1/sessions/{id}/tasks` (behind a proxy or a
    /// load balancer, its public address); default `http://<listen address>`.
    #[arg(long, env = "NOMOS_CONTINUE_PUBLIC_URL")]
    public_url: Option<String>,
}

impl ServeArgs {
    /// Where the API listens, and everything else.
    fn into_config(self) -> Result<(SocketAddr, ServeConfig)> {
        let token = secret(self.token, self.token_file.as_deref())?;
        let admin_token = secret(self.admin_token, self.admin_token_file.as_deref())?;
        let signing = webhook_secrets(&self.webhook_secret, self.webhook_secret_file.as_deref())?;
        let notify = match self.notify_webhook {
            Some(url) => Some(OperatorConfig {
                format: self.notify_format,
                token: self.notify_token,
                secrets: webhook_secrets(&self.notify_secret, self.notify_secret_file.as_deref())
                    .context("--notify-secret")?,
                ..OperatorConfig::new(url)
            }),
            None => None,
        };
        let tls = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            _ => None,
        };
        let mut config = ServeConfig {
            database_urls: self.db.database_url,
            token,
            admin_token,
            tls,
            insecure: Insecure {
                no_token: self.insecure_no_token,
                plaintext: self.insecure_plaintext,
            },
            agent_webhook: self.agent_webhook,
            agent_token: self.agent_token,
            webhook_secrets: signing,
            notify,
            stuck_after: self.stuck_after,
            task_poll_after: self.task_poll_after,
            max_connections: self.max_connections,
            agent_openai: self.agent_openai,
            openai_model: self.openai_model,
            openai_key: self.openai_key,
            openai_budget_chars: self.openai_budget_chars,
            policy: self.policy,
            policy_verify_keys: self.policy_verify_key,
            policy_poll: Duration::from_millis(self.policy_poll_ms),
            wake_listener: !self.no_wake_listener,
            otlp_endpoint: self.otlp_endpoint,
            public_url: self.public_url,
            ..ServeConfig::default()
        };
        if let Some(id) = self.worker_id {
            config.worker.worker_id = id;
        }
        config.worker.poll_interval = Duration::from_millis(self.poll_ms);
        config.worker.lease = Duration::from_secs(self.lease_secs.max(1));
        config.worker.retry_budget = Duration::from_secs(self.retry_budget_secs);
        config.worker.hard_cap = self.hard_cap;
        config.worker.standby_fence =
            (!self.standby_fence_timeout.is_zero()).then_some(self.standby_fence_timeout);
        config.worker.log_decisions = !self.decision_log_days.is_zero();
        config.decision_retention = self.decision_log_days;
        config.delivery_retention = kept_for(self.delivery_retention_days);
        config.chat_retention = kept_for(self.chat_retention_days);
        config.history_retention = kept_for(self.history_retention);
        config.link_retention = match self.link_retention {
            keep if keep.is_zero() => None,
            short if short < MIN_LINK_RETENTION => bail!(
                "--link-retention {} is shorter than {}: a link must outlive the longest \
                 assent window and a runtime's replay after a failover",
                humantime::format_duration(short),
                humantime::format_duration(MIN_LINK_RETENTION)
            ),
            kept => Some(kept),
        };
        self.policy_limits.apply(&mut config.limits);
        Ok((self.listen, config))
    }
}

/// `--standby-fence-timeout`: a duration (`5s`, `500ms`), or `0` (off).
fn fence_timeout(text: &str) -> Result<Duration, humantime::DurationError> {
    match text.trim() {
        "0" | "off" => Ok(Duration::ZERO),
        other => humantime::parse_duration(other),
    }
}

/// A retention given as days (a bare number, as the `-days` flags have
/// always taken: `7`) or as a duration (`12h`, `10m`); `0` is zero (off).
fn days_or_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    match text.parse::<u64>() {
        Ok(days) => Ok(Duration::from_secs(days.saturating_mul(24 * 3600))),
        Err(_) => humantime::parse_duration(text)
            .map_err(|e| format!("{text:?} is neither a number of days nor a duration: {e}")),
    }
}

/// `None` (kept for ever) for a zero retention.
fn kept_for(retention: Duration) -> Option<Duration> {
    (!retention.is_zero()).then_some(retention)
}

/// A token given directly, or read from a file (trimmed: editors and
/// `echo` add a newline). An empty file is an error, not an open API.
fn secret(value: Option<String>, file: Option<&Path>) -> Result<Option<String>> {
    let Some(path) = file else {
        return Ok(value);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("read the token file {}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        bail!("the token file {} is empty", path.display());
    }
    Ok(Some(token.to_owned()))
}

/// The webhook secrets given directly and those in `file` (one a line;
/// blank lines and `#` comments skipped), each checked here so a bad one
/// stops the start with a message saying which it was, never what it is.
fn webhook_secrets(values: &[String], file: Option<&Path>) -> Result<Vec<WebhookSecret>> {
    let mut secrets = Vec::new();
    for (n, text) in values.iter().enumerate() {
        let secret = WebhookSecret::parse(text)
            .with_context(|| format!("--webhook-secret, value {}", n + 1))?;
        secrets.push(secret);
    }
    let Some(path) = file else {
        return Ok(secrets);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("read the webhook secret file {}", path.display()))?;
    let before = secrets.len();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let secret = WebhookSecret::parse(line).with_context(|| {
            format!("the webhook secret file {}, line {}", path.display(), n + 1)
        })?;
        secrets.push(secret);
    }
    if secrets.len() == before {
        bail!("the webhook secret file {} holds no secret", path.display());
    }
    Ok(secrets)
}

/// Runs [`server::serve`] on its own runtime until a signal arrives.
pub fn run(args: ServeArgs) -> Result<()> {
    let (listen, config) = args.into_config()?;
    let runtime = tokio::runtime::Runtime::new().context("start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("listen on {listen}"))?;
        let shutdown = CancellationToken::new();
        let signal = shutdown.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("shutting down: no new claims; finishing deliveries in flight");
            signal.cancel();
        });
        server::serve(listener, config, shutdown).await
    })
}

async fn wait_for_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retention_is_days_or_a_duration() {
        assert_eq!(
            days_or_duration("7"),
            Ok(Duration::from_secs(7 * 24 * 3600))
        );
        assert_eq!(days_or_duration(" 10m "), Ok(Duration::from_secs(600)));
        assert_eq!(days_or_duration("0"), Ok(Duration::ZERO));
        assert_eq!(kept_for(Duration::ZERO), None);
        let refused = days_or_duration("7 weeks ago").expect_err("refused");
        assert!(
            refused.contains("neither a number of days nor a duration"),
            "{refused}"
        );
    }
}
