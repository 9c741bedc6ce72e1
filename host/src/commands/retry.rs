//! `nomos-continue retry DELIVERY`: sends a delivery that ended `failed`
//! (or a continuation dropped when its window closed) again, with the same
//! idempotency key, once the cause is fixed.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::store::{parse_uuid, RetryOutcome, Store};

/// Makes the delivery pending again and wakes the workers (PostgreSQL; an
/// SQLite `serve` finds it on its next poll). Exits 0 when it was retried,
/// 2 with the reason when it cannot be.
pub fn run(database_urls: &[&str], delivery: &str) -> Result<ExitCode> {
    let id = parse_uuid(delivery).with_context(|| format!("delivery id {delivery:?}"))?;
    let runtime = tokio::runtime::Runtime::new().context("start the async runtime")?;
    runtime.block_on(async {
        let store = Store::connect_any(database_urls)
            .await
            .context("connect to the database")?;
        // The database's clock, as `serve` times windows by it.
        let now = store.database_now().await?;
        let outcome = store.retry_delivery(id, now).await?;
        let answer = match outcome {
            RetryOutcome::Retried(d) => {
                store.notify_wake().await?;
                println!(
                    "delivery {} is pending again (key {}); a worker sends it now",
                    d.id, d.idempotency_key
                );
                Ok(ExitCode::SUCCESS)
            }
            other => Err(anyhow::anyhow!("{}", other.explain(id))),
        };
        store.close().await;
        answer
    })
}
