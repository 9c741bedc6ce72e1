//! The parts a [`ServeConfig`] names, built the way `serve` builds them when
//! the caller injects none: the policy, the agent adapter and the clock.

use std::sync::Arc;

use anyhow::{Context, Result};

use super::ServeConfig;
use crate::agent::{
    Agent, ChatAgent, ChatConfig, LogAgent, Operator, OperatorWebhook, StoreHistory, WebhookAgent,
    WebhookConfig,
};
use crate::clock::{Clock, OffsetClock, SystemClock};
use crate::deploy::verify_revision;
use crate::policy::read_policy_file;
use crate::policy::PolicyRuntime;
use crate::redact;
use crate::signing::{self, Keyring};
use crate::store::Store;

/// The verify key files named by `config`, read once at start-up: a key
/// that cannot be read stops the start rather than running unchecked.
pub(super) fn load_verify_keys(config: &ServeConfig) -> Result<Option<Keyring>> {
    let keys = Keyring::read(&config.policy_verify_keys).context("read the policy verify key")?;
    if let Some(keys) = &keys {
        tracing::info!(keys = %keys.ids(), "policy revisions must be signed");
    }
    Ok(keys)
}

/// The policy file named by `config`, or the built-in policy. With a verify
/// key the file must carry a valid signature (`FILE.sig`), checked by the
/// deployment's own check before the file is compiled, as every revision is.
pub(super) async fn load_policy(
    config: &ServeConfig,
    verify_keys: Option<&Keyring>,
) -> Result<PolicyRuntime> {
    match &config.policy {
        None => PolicyRuntime::new(config.limits.clone()).context("load the built-in policy"),
        Some(path) => {
            let bytes = read_policy_file(path)?;
            let signature = signing::read_signature_file(path).await?;
            verify_revision(verify_keys, &bytes, signature.as_deref())
                .with_context(|| format!("load the policy {}", path.display()))?;
            PolicyRuntime::with_policy(config.limits.clone(), &bytes)
                .with_context(|| format!("load the policy {}", path.display()))
        }
    }
}

/// The webhook (its requests stamped by `clock`), `chatWith` over the
/// store's history (stamped by `clock`), or (neither set) the agent that
/// prints. Both set is refused rather than one silently winning.
pub(super) fn build_agent(
    config: &ServeConfig,
    store: &Store,
    clock: Arc<dyn Clock>,
) -> Result<Arc<dyn Agent>> {
    match (&config.agent_webhook, &config.agent_openai) {
        (Some(_), Some(_)) => {
            anyhow::bail!("--agent-webhook and --agent-openai exclude each other")
        }
        (Some(url), None) => {
            let mut webhook = WebhookConfig::new(url.clone());
            webhook.token = config.agent_token.clone();
            webhook.secrets = config.webhook_secrets.clone();
            match webhook.secrets.len() {
                0 => tracing::warn!(
                    "webhook requests are unsigned: set --webhook-secret so the runtime can \
                     verify them (docs/webhooks.md)"
                ),
                secrets => tracing::info!(secrets, "webhook requests are signed"),
            }
            let agent = WebhookAgent::new(webhook).context("configure the agent webhook")?;
            Ok(Arc::new(agent.with_clock(clock)))
        }
        (None, Some(url)) => {
            warn_unused_secrets(config);
            let mut chat = ChatConfig::new(url.clone(), config.openai_model.clone());
            chat.api_key = config.openai_key.clone();
            chat.budget_chars = config.openai_budget_chars;
            let history = Arc::new(StoreHistory::new(store.clone(), clock));
            let agent = ChatAgent::new(chat, history).context("configure chatWith")?;
            tracing::info!(
                endpoint = %redact::endpoint(agent.endpoint()),
                "chatWith: history from the store"
            );
            Ok(Arc::new(agent))
        }
        (None, None) => {
            warn_unused_secrets(config);
            tracing::warn!("no agent configured: continuations are printed on stdout");
            Ok(Arc::new(LogAgent))
        }
    }
}

/// The operator's webhook, if `config` names one (its requests stamped by
/// `clock`); `None` says at start-up where notices will not go.
pub(super) fn build_operator(
    config: &ServeConfig,
    clock: Arc<dyn Clock>,
) -> Result<Option<Arc<dyn Operator>>> {
    let Some(notify) = &config.notify else {
        tracing::warn!(
            "no --notify-webhook: notices go to the agent and the console only, and one the \
             agent cannot take reaches no one (counted as nomos_continue_notices_undelivered)"
        );
        return Ok(None);
    };
    if notify.secrets.is_empty() {
        tracing::warn!("operator notices are unsigned: set --notify-secret");
    }
    let operator = OperatorWebhook::new(notify.clone()).context("configure the notify webhook")?;
    tracing::info!(format = ?notify.format, "operator notices go to the notify webhook");
    Ok(Some(Arc::new(operator.with_clock(clock))))
}

/// Secrets sign webhook requests only; set without a webhook they are
/// probably meant for a configuration that was not given.
fn warn_unused_secrets(config: &ServeConfig) {
    if !config.webhook_secrets.is_empty() {
        tracing::warn!("--webhook-secret is set but no --agent-webhook: nothing is signed");
    }
}

/// The system clock corrected to the database's: windows are timed by one
/// clock on every replica (see [`OffsetClock`]).
pub(super) async fn database_clock(store: &Store) -> Result<Arc<OffsetClock>> {
    let clock = Arc::new(OffsetClock::new(Arc::new(SystemClock)));
    let offset = clock
        .sync(store.database_now())
        .await
        .context("read the database's clock")?;
    tracing::info!(%offset, "timing windows by the database's clock");
    Ok(clock)
}
