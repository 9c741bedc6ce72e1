//! `nomos-continue migrate`: applies the migrations and exits.

use anyhow::{Context, Result};

use crate::store::Store;

/// Applies every pending migration and prints the versions applied. Safe on
/// a live database (see `Store::migrate`: lock timeouts are retried, a
/// database from a newer release is refused with both versions).
pub fn run(database_urls: &[&str]) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("start the async runtime")?;
    runtime.block_on(async {
        let store = Store::connect_any(database_urls)
            .await
            .context("connect to the database")?;
        store.migrate().await.context("migrate the database")?;
        let applied = store.applied_migrations().await?;
        println!("migrations applied: {applied:?}");
        store.close().await;
        Ok(())
    })
}
