//! `nomos-continue status [SESSION]`: a readable summary from the database.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use uuid::Uuid;

use crate::store::{Delivery, Store};

/// Prints the summary of one session, or of the whole deployment.
pub fn run(database_url: &str, session: Option<&str>) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("start the async runtime")?;
    runtime.block_on(async {
        let store = Store::connect(database_url)
            .await
            .context("connect to the database")?;
        store.migrate().await.context("migrate the database")?;
        let text = match session {
            Some(id) => session_text(&store, crate::store::parse_uuid(id)?).await?,
            None => overview_text(&store).await?,
        };
        print!("{text}");
        store.close().await;
        Ok(())
    })
}

async fn overview_text(store: &Store) -> Result<String> {
    let o = store.overview().await?;
    let mut out = String::new();
    match store.active_policy().await? {
        Some(p) => writeln!(out, "policy: {} {} ({})", p.name, p.version, &p.hash[..12])?,
        None => writeln!(out, "policy: built-in (no revision uploaded)")?,
    }
    writeln!(
        out,
        "links: {} pending, {} continued, {} dropped, {} failed",
        o.pending_links, o.continued_links, o.dropped_links, o.failed_links
    )?;
    writeln!(
        out,
        "deliveries: {} continuations delivered, {} notices delivered, {} pending, {} failed",
        o.continuations_delivered, o.notices_delivered, o.deliveries_pending, o.deliveries_failed
    )?;
    let recent = store.recent_deliveries(10).await?;
    if !recent.is_empty() {
        writeln!(out, "recent:")?;
        for d in &recent {
            writeln!(out, "  {}", delivery_line(d))?;
        }
    }
    Ok(out)
}

async fn session_text(store: &Store, session: Uuid) -> Result<String> {
    let summary = store.session_summary(session).await?;
    let mut out = String::new();
    writeln!(out, "session {session}")?;
    if summary.is_empty() {
        writeln!(out, "  nothing recorded")?;
        return Ok(out);
    }
    match &summary.window {
        Some(w) => writeln!(
            out,
            "window: {} by {}, opened {}, until {}, {} continuations{}",
            if w.closed_at.is_some() {
                "closed"
            } else {
                "approved"
            },
            w.route,
            w.opened_at,
            w.expires_at,
            w.continuations,
            w.closed_at
                .map(|c| format!(", denied at {c}"))
                .unwrap_or_default()
        )?,
        None => writeln!(out, "window: never approved")?,
    }
    writeln!(out, "links:")?;
    for l in &summary.links {
        let state = l.outcome.map_or_else(
            || {
                if l.delivery_id.is_some() {
                    "planned".to_string()
                } else {
                    "pending".to_string()
                }
            },
            |o| o.to_string(),
        );
        writeln!(
            out,
            "  execution {} [{}] status {}{}",
            l.execution_id,
            state,
            l.execution_status.as_deref().unwrap_or("(not reported)"),
            l.reason
                .as_deref()
                .map(|r| format!(" — {r}"))
                .unwrap_or_default()
        )?;
    }
    writeln!(out, "ledger (newest first):")?;
    for d in &summary.deliveries {
        writeln!(out, "  {}", delivery_line(d))?;
    }
    Ok(out)
}

fn delivery_line(d: &Delivery) -> String {
    let first = d.note.lines().next().unwrap_or_default();
    format!(
        "{} {} {} attempts={} key={} — {}{}",
        d.created_at,
        d.kind,
        d.state,
        d.attempts,
        d.idempotency_key,
        first,
        d.last_error
            .as_deref()
            .map(|e| format!(" (last error: {e})"))
            .unwrap_or_default()
    )
}
