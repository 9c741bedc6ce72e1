//! `nomos-continue status [SESSION]`: a readable summary from the database.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::{Context, Result};
use uuid::Uuid;

use crate::store::{each_page, Delivery, Link, SessionCounts, Store, MAX_PAGE_LIMIT};

/// Prints the summary of one session, or of the whole deployment.
pub fn run(database_urls: &[&str], session: Option<&str>) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("start the async runtime")?;
    runtime.block_on(async {
        let store = Store::open_to_read(database_urls)
            .await
            .context("open the database to read it")?;
        match session {
            Some(id) => {
                let session = crate::store::parse_uuid(id)?;
                write_session(&store, session, &mut std::io::stdout().lock()).await?;
            }
            None => print!("{}", overview_text(&store).await?),
        }
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

/// Prints one session: its window, then every link, ledger row and notice,
/// a page at a time as they are read, so a session with thousands of links
/// is shown whole without being held in memory. Each list's heading gives
/// its count.
async fn write_session(store: &Store, session: Uuid, out: &mut impl Write) -> Result<()> {
    writeln!(out, "session {session}")?;
    let window = store.window(session).await?;
    let counts = store.session_counts(session).await?;
    if window.is_none() && counts == SessionCounts::default() {
        writeln!(out, "  nothing recorded")?;
        return Ok(());
    }
    match &window {
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
    writeln!(out, "links ({}):", counts.links)?;
    each_page(
        move |c| store.session_links(session, c, MAX_PAGE_LIMIT),
        |links| lines(out, links.iter().map(link_line)),
    )
    .await?;
    writeln!(out, "ledger (newest first, {}):", counts.deliveries)?;
    each_page(
        move |c| store.session_deliveries(session, c, MAX_PAGE_LIMIT),
        |ledger| lines(out, ledger.iter().map(delivery_line)),
    )
    .await?;
    if counts.notices > 0 {
        writeln!(out, "notices ({}):", counts.notices)?;
        each_page(
            move |c| store.session_notices(session, c, MAX_PAGE_LIMIT),
            |notices| {
                let text = notices
                    .iter()
                    .map(|n| format!("{} {}", n.created_at, n.message));
                lines(out, text)
            },
        )
        .await?;
    }
    Ok(())
}

/// Writes each line indented, for the lists under a heading.
fn lines(out: &mut impl Write, each: impl Iterator<Item = String>) -> Result<()> {
    for line in each {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

fn link_line(l: &Link) -> String {
    let state = match (l.outcome, l.delivery_id) {
        (Some(settled), _) => settled.as_str(),
        (None, Some(_)) => "planned",
        (None, None) => "pending",
    };
    format!(
        "execution {} [{}] status {}{}",
        l.execution_id,
        state,
        l.execution_status.as_deref().unwrap_or("(not reported)"),
        l.reason
            .as_deref()
            .map(|r| format!(" — {r}"))
            .unwrap_or_default()
    )
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
