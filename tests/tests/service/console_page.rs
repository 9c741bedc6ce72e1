//! The console's page-wide behaviour in a real browser, against the real
//! `serve` binary with tokens: the sign-in form shows neither the
//! navigation nor an error from before; the live views fetch themselves
//! again (keeping the open details and the scroll position) until the
//! operator turns it off; an error is shown at the top over the dimmed
//! view and goes at the next success, also when the server was down; and
//! times read as ages, with the exact UTC time on hover.

use anyhow::{ensure, Context, Result};
use fantoccini::{Client, Locator};
use nomos_continue_tests::browser::Browser;
use nomos_continue_tests::http::{RecordingServer, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::until;
use serde_json::{json, Value};
use uuid::Uuid;

use super::console::{go, log_in, text, wait, Api, RUNTIME};

/// A `serve` with the runtime token (and an admin token), on SQLite.
struct Served {
    replica: Replica,
    options: ReplicaOptions,
    base: String,
    _hook: RecordingServer,
    _dir: tempfile::TempDir,
}

async fn serve() -> Result<Served> {
    let dir = tempfile::tempdir()?;
    let database_url = format!("sqlite:{}", dir.path().join("console.db").display());
    let (_, hook) = RecordingServer::start(Script::statuses([])).await?;
    let mut options = ReplicaOptions::new(&database_url, &hook.url("/hook"), "console-page");
    options.extra_args = [
        "--token",
        RUNTIME,
        "--admin-token",
        "admin-token-for-the-page",
    ]
    .map(String::from)
    .to_vec();
    options.token = Some(RUNTIME.into());
    let replica = Replica::start(&options).await;
    let base = format!("http://{}", replica.addr);
    Ok(Served {
        replica,
        options,
        base,
        _hook: hook,
        _dir: dir,
    })
}

async fn shown(client: &Client, css: &str) -> Result<bool> {
    Ok(client.find(Locator::Css(css)).await?.is_displayed().await?)
}

async fn script(client: &Client, source: &str) -> Result<Value> {
    Ok(client.execute(source, Vec::new()).await?)
}

/// The text of the first element `css` selects, read in one step (a
/// refresh may replace the element between two), once there is one.
async fn page_text(client: &Client, css: &str) -> String {
    let source = format!(
        "const e = document.querySelector({}); return e ? e.textContent.trim() : null",
        json!(css)
    );
    until(&format!("an element {css}"), async || {
        let found = script(client, &source).await.ok()?;
        found.as_str().map(str::to_owned)
    })
    .await
}

/// Waits until `check` (a script returning a boolean) holds on the page.
async fn until_page(client: &Client, what: &str, check: &str) {
    until(what, async || {
        let held = script(client, check).await.ok()?;
        (held == Value::Bool(true)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_form_shows_no_navigation() -> Result<()> {
    let Some(browser) = Browser::start().await? else {
        return Ok(());
    };
    let client = &browser.client;
    let served = serve().await?;
    client
        .goto(&format!("{}/ui#/sessions", served.base))
        .await?;
    wait(client, "#login:not([hidden])").await?;
    ensure!(
        !shown(client, "#nav").await?,
        "the navigation bar shows on the sign-in form"
    );
    log_in(client, &served.base, RUNTIME).await?;
    ensure!(
        shown(client, "#nav").await?,
        "no navigation bar once signed in"
    );
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_leaves_no_old_error_on_the_sign_in_form() -> Result<()> {
    let Some(browser) = Browser::start().await? else {
        return Ok(());
    };
    let client = &browser.client;
    let served = serve().await?;
    log_in(client, &served.base, RUNTIME).await?;
    // An error, shown at the top over the view it could not replace.
    let unknown = Uuid::new_v4();
    go(
        client,
        &format!("#/session/{unknown}"),
        "#error:not([hidden])",
    )
    .await?;
    let error = text(client, "#error").await?;
    ensure!(
        error.starts_with(&format!(
            "Could not load this view: 404 nothing is known of session {unknown}"
        )),
        "{error:?}"
    );
    wait(client, "#view.stale #sessions-view").await?;
    // The token stops working (a restart with new tokens, say).
    client
        .execute(
            "sessionStorage.setItem('nomos-console-token', 'not-the-token')",
            Vec::new(),
        )
        .await?;
    go(client, "#/policy", "#login:not([hidden])").await?;
    let refused = text(client, "#login-error").await?;
    ensure!(refused == "The server refused this token.", "{refused:?}");
    ensure!(
        !shown(client, "#error").await?,
        "the old error stays on the sign-in form: {:?}",
        text(client, "#error").await?
    );
    let title = script(client, "return document.title").await?;
    ensure!(title == "Sign in — nomos-continue", "{title}");
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_keeps_itself_current_and_says_when_it_cannot() -> Result<()> {
    let Some(browser) = Browser::start().await? else {
        return Ok(());
    };
    let client = &browser.client;
    let mut served = serve().await?;
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    served
        .replica
        .fail_in_open_window(session, execution, "ssh: connection refused")
        .await;
    let api = Api {
        base: served.base.clone(),
        client: reqwest::Client::new(),
    };
    api.until_continued(session).await?;

    // Without the script, a time reads as an age, exact on hover.
    let raw = api
        .client
        .get(format!("{}/ui/fragments/sessions", served.base))
        .bearer_auth(RUNTIME)
        .send()
        .await?;
    ensure!(
        raw.headers().contains_key("x-console-now"),
        "a fragment without the server's time"
    );
    let html = raw.text().await?;
    let first_seen = html
        .split("<time ")
        .nth(1)
        .and_then(|t| t.split("</time>").next())
        .context("no <time> in the sessions fragment")?;
    ensure!(
        first_seen.starts_with(r#"datetime=""#)
            && first_seen.contains(r#" UTC">"#)
            && (first_seen.ends_with(" s ago") || first_seen.ends_with(">now")),
        "the first-seen time is written {first_seen:?}"
    );

    // A live view is fetched again and keeps what the operator opened.
    client.set_window_size(900, 500).await?;
    log_in(client, &served.base, RUNTIME).await?;
    go(client, &format!("#/session/{session}"), "#session-view").await?;
    let y = script(
        client,
        "document.querySelector('.step-finished details summary').click();
         window.scrollTo(0, 120);
         return window.scrollY",
    )
    .await?
    .as_f64()
    .context("a scroll position")?;
    ensure!(y > 0.0, "the timeline does not scroll at 900 × 500");
    served
        .replica
        .put_status(execution, "completed", "ok")
        .await;
    wait(client, ".timeline li.event[data-step=late]").await?;
    let (open, after): (bool, f64) = serde_json::from_value(
        client
            .execute(
                "return [document.querySelector('.step-finished details').open, window.scrollY]",
                Vec::new(),
            )
            .await?,
    )?;
    ensure!(open, "a refresh closed the details the operator opened");
    ensure!(after == y, "a refresh moved the page from {y} to {after}");
    let updated = page_text(client, "#updated").await;
    ensure!(updated.starts_with("updated "), "{updated:?}");

    // Turned off, nothing fetches the view again, but the script still
    // ages its times as time passes; and it stays off for the tab.
    go(client, "#/sessions", "#sessions-view").await?;
    wait(client, "#auto-refresh").await?.click().await?;
    let age = page_text(client, ".session-row time").await;
    until_page(
        client,
        "the first-seen age to be written again",
        &format!(
            "return timer === null && \
             document.querySelector('.session-row time').textContent !== {}",
            json!(age)
        ),
    )
    .await;
    client.refresh().await?;
    wait(client, "#sessions-view").await?;
    let (checked, scheduled): (bool, bool) = serde_json::from_value(
        client
            .execute(
                "return [document.getElementById('auto-refresh').checked, timer !== null]",
                Vec::new(),
            )
            .await?,
    )?;
    ensure!(!checked && !scheduled, "auto-refresh is on after a reload");
    let updated = page_text(client, "#updated").await;
    ensure!(updated.ends_with("(auto-refresh off)"), "{updated:?}");

    // The server goes away: the error is at the top, the view dimmed;
    // when it is back, the next refresh clears both.
    wait(client, "#auto-refresh").await?.click().await?;
    served.replica.kill().await;
    wait(client, "#error:not([hidden])").await?;
    let error = page_text(client, "#error").await;
    ensure!(
        error.starts_with("Could not refresh this view: The server did not answer")
            && error.contains("The view below is out of date: it was loaded"),
        "{error:?}"
    );
    let (top, view): (f64, f64) = serde_json::from_value(
        client
            .execute(
                "return [document.getElementById('error').getBoundingClientRect().top,
                         document.getElementById('view').getBoundingClientRect().top]",
                Vec::new(),
            )
            .await?,
    )?;
    ensure!(top < view, "the error is below the view ({top} ≥ {view})");
    wait(client, "#view.stale #sessions-view").await?;
    // On the same address; under another worker id, as the killed
    // process's registration is not yet stale.
    served.options.listen = served.replica.addr.to_string();
    served.options.worker_id = "console-page-again".into();
    served.replica = Replica::start(&served.options).await;
    wait(client, "#view:not(.stale) #sessions-view").await?;
    ensure!(
        !shown(client, "#error").await?,
        "the error stays after a refresh that worked"
    );
    browser.close().await
}
