//! `nomos-continue serve`: its flags, turned into a [`ServeConfig`] for
//! [`server::serve`], on its own runtime until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::duration::{legacy, legacy_days, Unit};
use crate::agent::{OperatorConfig, WebhookSecret};
use crate::api::PushLimits;
use crate::server::{self, Insecure, ServeConfig, TlsFiles, MIN_LINK_RETENTION};
use flags::{
    AgentFlags, ApiFlags, NotifyFlags, PolicyFlags, RetentionFlags, StoreFlags, TelemetryFlags,
    WorkerFlags,
};

mod flags;

/// The default API address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7300";

/// The flags of `serve`, under their help headings (see `flags`).
#[derive(Args)]
#[command(
    after_help = "Example:\n  nomos-continue serve --database-url postgres://nomos@db/nomos \\\n    \
    --token-file /run/secrets/token --agent-webhook https://runtime.internal/continue \\\n    \
    --webhook-secret-file /run/secrets/whsec --notify-webhook https://alerts.internal/hook"
)]
pub struct ServeArgs {
    #[command(flatten)]
    store: StoreFlags,
    #[command(flatten)]
    api: ApiFlags,
    #[command(flatten)]
    agent: AgentFlags,
    #[command(flatten)]
    notify: NotifyFlags,
    #[command(flatten)]
    policy: PolicyFlags,
    #[command(flatten)]
    worker: WorkerFlags,
    #[command(flatten)]
    retention: RetentionFlags,
    #[command(flatten)]
    telemetry: TelemetryFlags,
}

impl ServeArgs {
    /// Where the API listens, and everything else.
    fn into_config(self) -> Result<(SocketAddr, ServeConfig)> {
        let Self {
            store,
            api,
            agent,
            notify,
            policy,
            worker,
            retention,
            telemetry,
        } = self;
        let token = secret(api.token, api.token_file.as_deref())?;
        let read_token = secret(api.read_token, api.read_token_file.as_deref())?;
        let admin_token = secret(api.admin_token, api.admin_token_file.as_deref())?;
        let signing = webhook_secrets(&agent.webhook_secret, agent.webhook_secret_file.as_deref())?;
        let operator = match notify.notify_webhook {
            Some(url) => Some(OperatorConfig {
                format: notify.notify_format,
                token: notify.notify_token,
                secrets: webhook_secrets(
                    &notify.notify_secret,
                    notify.notify_secret_file.as_deref(),
                )
                .context("--notify-secret")?,
                ..OperatorConfig::new(url)
            }),
            None => None,
        };
        let tls = match (api.tls_cert, api.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            _ => None,
        };
        let mut config = ServeConfig {
            database_urls: store.db.database_url,
            migrate: !store.no_migrate,
            token,
            read_token,
            admin_token,
            tls,
            insecure: Insecure {
                no_token: api.insecure_no_token,
                plaintext: api.insecure_plaintext,
            },
            agent_webhook: agent.agent_webhook,
            agent_token: agent.agent_token,
            webhook_secrets: signing,
            notify: operator,
            stuck_after: notify.stuck_after,
            task_poll_after: worker.task_poll_after,
            max_connections: api.max_connections,
            push_limits: PushLimits {
                per_token: api.push_rate.0,
                total: api.push_rate_total.0,
            },
            agent_openai: agent.agent_openai,
            openai_model: agent.openai_model,
            openai_key: agent.openai_key,
            openai_budget_chars: agent.openai_budget_chars,
            policy: policy.policy,
            policy_verify_keys: policy.policy_verify_key,
            policy_poll: legacy(
                policy.policy_poll_ms,
                Unit::Millis,
                ("--policy-poll-ms", "--policy-poll-interval"),
                policy.policy_poll_interval,
            ),
            wake_listener: !worker.no_wake_listener,
            otlp_endpoint: telemetry.otlp_endpoint,
            access_log: telemetry.access_log,
            public_url: api.public_url,
            ..ServeConfig::default()
        };
        if let Some(id) = worker.worker_id {
            config.worker.worker_id = id;
        }
        config.worker.poll_interval = legacy(
            worker.poll_ms,
            Unit::Millis,
            ("--poll-ms", "--poll-interval"),
            worker.poll_interval,
        );
        // A zero lease would expire every claim at once: one second at least,
        // as `--lease-secs 0` always meant.
        let lease = legacy(
            worker.lease_secs,
            Unit::Secs,
            ("--lease-secs", "--lease"),
            worker.lease,
        );
        config.worker.lease = lease.max(Duration::from_secs(1));
        config.worker.retry_budget = legacy(
            worker.retry_budget_secs,
            Unit::Secs,
            ("--retry-budget-secs", "--retry-budget"),
            worker.retry_budget,
        );
        config.worker.hard_cap = worker.hard_cap;
        config.worker.standby_fence =
            (!store.standby_fence_timeout.is_zero()).then_some(store.standby_fence_timeout);
        let decisions = legacy_days(
            retention.decision_log_days.as_deref(),
            ("--decision-log-days", "--decision-retention"),
            retention.decision_retention,
        );
        config.worker.log_decisions = !decisions.is_zero();
        config.decision_retention = decisions;
        config.delivery_retention = kept_for(legacy_days(
            retention.delivery_retention_days.as_deref(),
            ("--delivery-retention-days", "--delivery-retention"),
            retention.delivery_retention,
        ));
        config.chat_retention = kept_for(legacy_days(
            retention.chat_retention_days.as_deref(),
            ("--chat-retention-days", "--chat-retention"),
            retention.chat_retention,
        ));
        config.history_retention = kept_for(retention.history_retention);
        config.link_retention = match retention.link_retention {
            keep if keep.is_zero() => None,
            short if short < MIN_LINK_RETENTION => bail!(
                "--link-retention {} is shorter than {}: a link must outlive the longest \
                 assent window and a runtime's replay after a failover",
                humantime::format_duration(short),
                humantime::format_duration(MIN_LINK_RETENTION)
            ),
            kept => Some(kept),
        };
        policy.limits.apply(&mut config.limits);
        Ok((api.listen, config))
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
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn config(args: &[&str]) -> Result<ServeConfig> {
        let cli = Cli::try_parse_from(std::iter::once("serve").chain(args.iter().copied()))?;
        Ok(cli.serve.into_config()?.1)
    }

    #[test]
    fn every_duration_takes_a_unit_and_the_old_flags_keep_theirs() -> Result<()> {
        let given = config(&[
            "--poll-interval",
            "250ms",
            "--lease",
            "10s",
            "--retry-budget",
            "1h",
            "--decision-retention",
            "12h",
            "--policy-deadline",
            "80ms",
        ])?;
        assert_eq!(given.worker.poll_interval, Duration::from_millis(250));
        assert_eq!(given.worker.lease, Duration::from_secs(10));
        assert_eq!(given.worker.retry_budget, Duration::from_secs(3600));
        assert_eq!(given.decision_retention, Duration::from_secs(12 * 3600));
        assert_eq!(given.limits.deadline, Duration::from_millis(80));

        let old = config(&[
            "--poll-ms",
            "250",
            "--lease-secs",
            "0",
            "--retry-budget-secs",
            "60",
            "--decision-log-days",
            "2",
            "--delivery-retention-days",
            "0",
            "--policy-deadline-ms",
            "80",
        ])?;
        assert_eq!(old.worker.poll_interval, Duration::from_millis(250));
        assert_eq!(old.worker.lease, Duration::from_secs(1), "0 meant 1 s");
        assert_eq!(old.worker.retry_budget, Duration::from_secs(60));
        assert_eq!(old.decision_retention, Duration::from_secs(2 * 24 * 3600));
        assert_eq!(old.delivery_retention, None, "0 keeps them");
        assert_eq!(old.limits.deadline, Duration::from_millis(80));

        let defaults = config(&[])?;
        let fresh = ServeConfig::default();
        assert_eq!(defaults.worker.poll_interval, fresh.worker.poll_interval);
        assert_eq!(defaults.worker.lease, fresh.worker.lease);
        assert_eq!(defaults.worker.retry_budget, fresh.worker.retry_budget);
        assert_eq!(defaults.decision_retention, fresh.decision_retention);
        assert_eq!(defaults.delivery_retention, fresh.delivery_retention);
        assert_eq!(defaults.limits.deadline, fresh.limits.deadline);
        assert_eq!(defaults.policy_poll, fresh.policy_poll);
        assert_eq!(defaults.push_limits, fresh.push_limits);
        assert!(defaults.migrate);
        Ok(())
    }

    #[test]
    fn a_bare_number_and_an_old_flag_beside_its_new_one_are_refused() {
        for args in [
            &["--lease", "6"][..],
            &["--history-retention", "30"],
            &["--poll-interval", "2s", "--poll-ms", "100"],
            &["--push-rate", "20"],
        ] {
            assert!(config(args).is_err(), "{args:?} accepted");
        }
        let refused = config(&["--lease", "6"]).expect_err("refused").to_string();
        assert!(refused.contains("needs a unit"), "{refused}");
    }

    #[test]
    fn the_read_token_and_no_migrate_reach_the_config() -> Result<()> {
        let given = config(&["--read-token", "rd", "--token", "rt", "--no-migrate"])?;
        assert!(!given.migrate);
        let auth = given.auth();
        assert!(auth.check(crate::api::Scope::Read, Some("rd")).is_ok());
        assert!(auth.check(crate::api::Scope::Runtime, Some("rd")).is_err());
        let off = config(&["--push-rate", "0", "--push-rate-total", "600/m"])?;
        assert_eq!(off.push_limits.per_token, None);
        assert_eq!(
            off.push_limits.total.map(|r| (r.count.get(), r.per)),
            Some((600, Duration::from_secs(60)))
        );
        Ok(())
    }
}
