//! The console at `/ui`, in a real browser (Debian's chromium through
//! chromedriver) against the real `serve` binary with both tokens.
//!
//! One story, as an operator and a policy author would live it: be
//! refused with a wrong token; log in with the runtime token; find the
//! session that went approve → link → fail → continued (and was then
//! reported late) and read each step in order; try to promote the shadow
//! and be refused; extract ids and compare the active decision with the
//! shadow's in the playground, and be refused a candidate upload. Then, as
//! the admin: upload a candidate, compare, and promote. A screenshot of
//! each view is left in `target/console-screenshots/`.
//!
//! On the way, every view (and the sign-in form) is checked by axe-core
//! for accessibility, says its title and takes the keyboard's focus to its
//! heading; and at a phone's width (390 × 844) no view scrolls sideways
//! and "Forget token" is on the screen. The page-wide behaviour
//! (refreshing, errors, times) has tests of its own in `console_page`.

use std::path::PathBuf;

use anyhow::{anyhow, ensure, Context, Result};
use fantoccini::elements::Element;
use fantoccini::{Client, Locator};
use nomos_continue::policy::Revision;
use nomos_continue_tests::browser::{assert_accessible, axe, Browser};
use nomos_continue_tests::http::{RecordingServer, Script};
use nomos_continue_tests::policies::variant;
use nomos_continue_tests::replica::{binary, Replica, ReplicaOptions};
use nomos_continue_tests::wait::{until, PATIENCE};
use serde_json::{json, Value};
use uuid::Uuid;

pub(super) const RUNTIME: &str = "runtime-token-for-the-console";
const ADMIN: &str = "admin-token-for-the-console";

pub(super) struct Api {
    pub(super) base: String,
    pub(super) client: reqwest::Client,
}

impl Api {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Vec<u8>,
    ) -> Result<Value> {
        let response = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token)
            .body(body)
            .send()
            .await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        ensure!(status.is_success(), "{path}: {status} {body}");
        Ok(body)
    }

    /// Waits until the session's only link is settled as continued: the
    /// webhook's request arrives before the delivery is recorded.
    pub(super) async fn until_continued(&self, session: Uuid) -> Result<()> {
        let path = format!("/v1/sessions/{session}/links");
        until("the link settled as continued", async || {
            match self
                .call(reqwest::Method::GET, &path, RUNTIME, Vec::new())
                .await
            {
                Ok(body) if body["items"][0]["outcome"] != "continued" => None,
                answer => Some(answer.map(drop)),
            }
        })
        .await
    }
}

fn screenshots() -> PathBuf {
    // target/debug/nomos-continue → target/console-screenshots
    let target = binary()
        .parent()
        .and_then(|p| p.parent())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("console-screenshots")
}

async fn shoot(client: &Client, name: &str) -> Result<()> {
    let dir = screenshots();
    std::fs::create_dir_all(&dir)?;
    let png = client.screenshot().await?;
    std::fs::write(dir.join(format!("{name}.png")), png)?;
    Ok(())
}

pub(super) async fn wait(client: &Client, css: &str) -> Result<Element> {
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(css))
        .await
        .with_context(|| format!("waiting for {css}"))
}

pub(super) async fn text(client: &Client, css: &str) -> Result<String> {
    Ok(wait(client, css).await?.text().await?)
}

pub(super) async fn log_in(client: &Client, base: &str, token: &str) -> Result<()> {
    client.goto(&format!("{base}/ui#/sessions")).await?;
    wait(client, "#login:not([hidden])").await?;
    wait(client, "#token").await?.send_keys(token).await?;
    wait(client, "#login button[type=submit]")
        .await?
        .click()
        .await?;
    wait(client, "#sessions-view").await?;
    Ok(())
}

pub(super) async fn go(client: &Client, hash: &str, view: &str) -> Result<()> {
    client
        .execute("location.hash = arguments[0]", vec![json!(hash)])
        .await?;
    wait(client, view).await?;
    Ok(())
}

/// The page's title, and the text of the element that has the focus.
async fn title_and_focus(client: &Client) -> Result<(String, String)> {
    let found = client
        .execute(
            "return [document.title, document.activeElement.tagName + ' ' + \
             document.activeElement.textContent.trim().replace(/\\s+/g, ' ')]",
            Vec::new(),
        )
        .await?;
    let [title, focus]: [String; 2] = serde_json::from_value(found)?;
    Ok((title, focus))
}

/// A view as a keyboard and a screen reader find it: the title names it,
/// the focus is on its heading, and axe-core finds nothing wrong.
async fn check_view(client: &Client, axe: Option<&str>, heading: &str) -> Result<()> {
    let (title, focus) = title_and_focus(client).await?;
    ensure!(
        title == format!("{heading} — nomos-continue"),
        "the {heading} view's title is {title:?}"
    );
    ensure!(
        focus == format!("H2 {heading}"),
        "on the {heading} view the focus is on {focus:?}, not its heading"
    );
    if let Some(axe) = axe {
        assert_accessible(client, axe, &format!("the {heading} view")).await?;
    }
    Ok(())
}

/// At a phone's width: nothing scrolls sideways, and "Forget token" is
/// wholly on the screen (with the page scrolled to its top).
async fn fits_a_phone(client: &Client, what: &str) -> Result<()> {
    let found = client
        .execute(
            "window.scrollTo(0, 0);
             const r = document.getElementById('logout').getBoundingClientRect();
             return [document.documentElement.scrollWidth, innerWidth, innerHeight,
                     r.left, r.top, r.right, r.bottom];",
            Vec::new(),
        )
        .await?;
    let [scroll, width, height, left, top, right, bottom]: [f64; 7] =
        serde_json::from_value(found)?;
    ensure!(width == 390.0, "the phone's window is {width} px wide");
    ensure!(
        scroll <= width,
        "{what} scrolls sideways at {width} px: {scroll} px wide"
    );
    ensure!(
        left >= 0.0 && top >= 0.0 && right <= width && bottom <= height,
        "on {what} the sign-out button is at ({left}, {top})–({right}, {bottom}), \
         outside the {width} × {height} screen"
    );
    Ok(())
}

/// Clicks a button that asks for confirmation, and accepts.
async fn confirm_click(client: &Client, css: &str) -> Result<()> {
    wait(client, css).await?.click().await?;
    client.accept_alert().await?;
    Ok(())
}

async fn upload(client: &Client, file: &std::path::Path) -> Result<()> {
    wait(client, "#candidate-form input[type=file]")
        .await?
        .send_keys(&file.display().to_string())
        .await?;
    wait(client, "#candidate-form button[type=submit]")
        .await?
        .click()
        .await?;
    Ok(())
}

/// The timeline's steps, in the order the page shows them, with their text.
async fn steps(client: &Client) -> Result<Vec<(String, String)>> {
    let mut steps = Vec::new();
    for event in client.find_all(Locator::Css(".timeline li.event")).await? {
        let step = event.attr("data-step").await?.unwrap_or_default();
        steps.push((step, event.text().await?));
    }
    Ok(steps)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_the_story_and_keeps_policy_changes_to_the_admin() -> Result<()> {
    let Some(browser) = Browser::start().await? else {
        return Ok(());
    };
    let axe = axe()?;
    let axe = axe.as_deref();
    let client = &browser.client;
    let dir = tempfile::tempdir()?;
    let database_url = format!("sqlite:{}", dir.path().join("console.db").display());
    let (_, hook) = RecordingServer::start(Script::statuses([])).await?;
    let mut options = ReplicaOptions::new(&database_url, &hook.url("/hook"), "console");
    options.extra_args = ["--token", RUNTIME, "--admin-token", ADMIN]
        .map(String::from)
        .to_vec();
    options.token = Some(RUNTIME.into());
    let replica = Replica::start(&options).await;
    let base = format!("http://{}", replica.addr);
    let api = Api {
        base: base.clone(),
        client: reqwest::Client::new(),
    };

    // The seed's story: approve, link, fail; the system continues.
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    replica
        .fail_in_open_window(session, execution, "ssh: connection refused")
        .await;
    tokio::time::timeout(PATIENCE, hook.wait_for_requests(1))
        .await
        .map_err(|_| anyhow!("no continuation; serve said:\n{}", replica.stderr()))?;
    api.until_continued(session).await?;
    // Terminal is final: a later report is kept, not applied.
    replica.put_status(execution, "completed", "ok").await;
    // A shadow that decides otherwise, put there by the admin.
    let contrary = std::fs::read(env!("CONTRARY_WASM"))?;
    let shadow = api
        .call(
            reqwest::Method::PUT,
            "/v1/policy?mode=shadow",
            ADMIN,
            contrary,
        )
        .await?;
    let shadow = shadow["revision"]
        .as_str()
        .context("a revision")?
        .to_owned();

    // A wrong token is refused at the door; then the runtime's. The
    // story reads elements one by one, which a refresh would replace
    // under it: auto-refresh is off for this tab (`console_page` tests it).
    client.goto(&format!("{base}/ui#/sessions")).await?;
    client
        .execute(
            "sessionStorage.setItem('nomos-console-refresh', 'off')",
            Vec::new(),
        )
        .await?;
    wait(client, "#token")
        .await?
        .send_keys("not-a-token")
        .await?;
    wait(client, "#login button[type=submit]")
        .await?
        .click()
        .await?;
    let refused = client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::XPath(
            "//p[@id='login-error' and normalize-space() != '']",
        ))
        .await?
        .text()
        .await?;
    ensure!(refused == "The server refused this token.", "{refused:?}");
    if let Some(axe) = axe {
        assert_accessible(client, axe, "the sign-in form").await?;
    }
    log_in(client, &base, RUNTIME).await?;
    check_view(client, axe, "Sessions").await?;
    let listed = text(client, ".session-link").await?;
    ensure!(
        listed == session.to_string(),
        "listed {listed}, not {session}"
    );
    shoot(client, "sessions").await?;
    wait(client, "form.search input[name=q]")
        .await?
        .send_keys(&execution.to_string())
        .await?;
    wait(client, "form.search button").await?.click().await?;
    let found = text(client, ".found").await?;
    ensure!(
        found == format!("execution {execution} is linked to session {session}"),
        "search said {found:?}"
    );

    // The timeline: each step, in order.
    wait(client, ".session-link").await?.click().await?;
    wait(client, "#session-view").await?;
    check_view(client, axe, &format!("Session {session}")).await?;
    let steps = steps(client).await?;
    let order: Vec<&str> = steps.iter().map(|(s, _)| s.as_str()).collect();
    let expected = [
        "approved",
        "linked",
        "finished",
        "decided",
        "queued",
        "delivered",
        "settled",
        "late",
    ];
    ensure!(
        order == expected,
        "the timeline shows {order:?}, expected {expected:?}"
    );
    let says = [
        ("finished", "status failed"),
        ("decided", "continued by revision"),
        ("delivered", "delivered at the first attempt"),
        ("settled", "continued"),
        ("late", "late report completed, kept, not applied"),
    ];
    for (step, phrase) in says {
        let (_, text) = steps
            .iter()
            .find(|(s, _)| s == step)
            .context("every step is shown")?;
        ensure!(
            text.contains(phrase),
            "the {step} step says {text:?}, not {phrase:?}"
        );
    }
    shoot(client, "session").await?;
    // The decision's input, taken to the playground as it was recorded.
    wait(client, ".step-decided a.try").await?.click().await?;
    wait(client, "#playground-view").await?;
    let source = text(client, ".source").await?;
    ensure!(
        source.starts_with("input from recorded decision"),
        "the playground took its input from {source:?}"
    );
    let input = wait(client, "#decide-form textarea")
        .await?
        .prop("value")
        .await?;
    ensure!(
        input.is_some_and(|i| i.contains(&execution.to_string())),
        "the recorded input is not the execution's"
    );

    // The runtime token cannot promote.
    go(client, "#/policy", "#policy-view").await?;
    check_view(client, axe, "Policy").await?;
    let shown = text(client, "#shadow-policy .revision").await?;
    ensure!(shown == shadow, "the shadow shown is {shown}, not {shadow}");
    confirm_click(client, "#promote").await?;
    let refused = text(client, "#action-result.bad").await?;
    // The problem's detail, not just its status.
    ensure!(
        refused.starts_with("403 ") && !refused.contains("undefined"),
        "promote with the runtime token: {refused:?}"
    );
    let policy = api
        .call(reqwest::Method::GET, "/v1/policy", RUNTIME, Vec::new())
        .await?;
    ensure!(
        policy["shadow"]["revision"] == shadow.as_str() && policy["revision"] != shadow.as_str(),
        "a refused promotion changed the policy: {policy}"
    );
    shoot(client, "policy").await?;

    // The playground: extract, then compare the active decision with the
    // shadow's (a stored revision) on a golden case.
    let hash = format!("#/playground?golden=failed-continues&candidate={shadow}");
    go(client, &hash, "#playground-view").await?;
    check_view(client, axe, "Playground").await?;
    let named = Uuid::new_v4();
    wait(client, "#extract-form textarea")
        .await?
        .send_keys(&format!("started, execution {named}; see the log"))
        .await?;
    wait(client, "#extract-form button").await?.click().await?;
    let extracted = text(client, ".extracted-id").await?;
    ensure!(extracted == named.to_string(), "extracted {extracted:?}");
    wait(client, "#decide-form button").await?.click().await?;
    let golden = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden/decide/failed-continues.out"),
    )?;
    let active = text(client, ".active-answer .answer-line").await?;
    ensure!(
        active == golden.trim(),
        "the active policy answered {active}"
    );
    let candidate = text(client, ".candidate-answer .answer-line").await?;
    ensure!(
        candidate.contains(r#""decision":"drop""#),
        "the shadow answered {candidate}"
    );
    wait(client, ".verdict .differ").await?;
    client
        .execute(
            "document.getElementById('decide-form').scrollIntoView()",
            vec![],
        )
        .await?;
    shoot(client, "playground").await?;
    let file = dir.path().join("candidate.wasm");
    let candidate_bytes = variant("console");
    std::fs::write(&file, &candidate_bytes)?;
    upload(client, &file).await?;
    let refused = text(client, "#candidate-result.bad").await?;
    ensure!(
        refused.starts_with("403"),
        "a candidate upload with the runtime token: {refused:?}"
    );

    // Each view on a phone, with the shadow's disagreement listed.
    client.set_window_size(390, 844).await?;
    let session_hash = format!("#/session/{session}");
    let views = [
        ("#/sessions", "#sessions-view", "Sessions".to_owned()),
        (
            session_hash.as_str(),
            "#session-view",
            format!("Session {session}"),
        ),
        ("#/policy", "#policy-view", "Policy".to_owned()),
        (hash.as_str(), "#playground-view", "Playground".to_owned()),
    ];
    for (hash, view, heading) in views {
        go(client, hash, view).await?;
        check_view(client, axe, &heading).await?;
        fits_a_phone(client, &format!("the {heading} view")).await?;
    }
    shoot(client, "phone-session").await?;
    client.set_window_size(1400, 1000).await?;

    // As the admin: a candidate is held and compared, then the shadow
    // is promoted from the page.
    wait(client, "#logout").await?.click().await?;
    wait(client, "#login:not([hidden])").await?;
    let (title, _) = title_and_focus(client).await?;
    ensure!(
        title == "Sign in — nomos-continue",
        "the sign-in title is {title:?}"
    );
    client.set_window_size(390, 844).await?;
    if let Some(axe) = axe {
        assert_accessible(client, axe, "the sign-in form on a phone").await?;
    }
    let found = client
        .execute(
            "return [document.documentElement.scrollWidth, innerWidth]",
            Vec::new(),
        )
        .await?;
    let [scroll, width]: [f64; 2] = serde_json::from_value(found)?;
    ensure!(
        scroll <= width,
        "the sign-in form is {scroll} px wide at {width} px"
    );
    client.set_window_size(1400, 1000).await?;
    log_in(client, &base, ADMIN).await?;
    go(
        client,
        "#/playground?golden=failed-continues",
        "#playground-view",
    )
    .await?;
    upload(client, &file).await?;
    let held = wait(client, "#candidate-result [data-candidate]").await?;
    let revision = Revision::of(&candidate_bytes).0;
    ensure!(
        held.attr("data-candidate").await?.as_deref() == Some(revision.as_str()),
        "held {:?}",
        held.text().await?
    );
    wait(client, "#decide-form button").await?.click().await?;
    wait(client, ".verdict .same").await?;
    let policy = api
        .call(reqwest::Method::GET, "/v1/policy", RUNTIME, Vec::new())
        .await?;
    ensure!(
        policy["revision"] != revision.as_str(),
        "a candidate was activated: {policy}"
    );
    go(client, "#/policy", "#policy-view").await?;
    confirm_click(client, "#promote").await?;
    wait(client, "#shadow-policy .empty").await?;
    let policy = api
        .call(reqwest::Method::GET, "/v1/policy", RUNTIME, Vec::new())
        .await?;
    ensure!(
        policy["revision"] == shadow.as_str() && policy["shadow"].is_null(),
        "the admin's promotion did not take: {policy}"
    );
    browser.close().await
}

/// A tile's number on the overview strip.
async fn tile(client: &Client, name: &str) -> Result<String> {
    text(client, &format!("#overview [data-tile={name}] .tile-value")).await
}

/// What an operator at 3 a.m. sees: the overview strip agrees with
/// `GET /v1/overview`; the status filter narrows the list to the session
/// whose delivery failed; a 60-execution session is 60 collapsible rows;
/// a failed output is shown without terminal escapes, its last line kept;
/// the runtime token is shown no retry button, and the admin's Retry sends
/// the failed continuation again (checked through the API).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_what_is_failing_and_retries_it() -> Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use nomos_continue_tests::http::Reply;

    let Some(browser) = Browser::start().await? else {
        return Ok(());
    };
    let client = &browser.client;
    let dir = tempfile::tempdir()?;
    let database_url = format!("sqlite:{}", dir.path().join("failing.db").display());
    let failing = Uuid::new_v4();
    // The runtime refuses the failing session's calls (a permanent 400)
    // until it is mended.
    let mended = Arc::new(AtomicBool::new(false));
    let script = Script::from_fn({
        let mended = mended.clone();
        move |request, _| {
            if !mended.load(Ordering::SeqCst) && request.text().contains(&failing.to_string()) {
                Reply::status(400)
            } else {
                Reply::status(200)
            }
        }
    });
    let (_, hook) = RecordingServer::start(script).await?;
    let mut options = ReplicaOptions::new(&database_url, &hook.url("/hook"), "console-data");
    options.extra_args = ["--token", RUNTIME, "--admin-token", ADMIN]
        .map(String::from)
        .to_vec();
    options.token = Some(RUNTIME.into());
    let replica = Replica::start(&options).await;
    let base = format!("http://{}", replica.addr);
    let api = Api {
        base: base.clone(),
        client: reqwest::Client::new(),
    };
    let get = async |path: &str| {
        api.call(reqwest::Method::GET, path, RUNTIME, Vec::new())
            .await
    };

    // Sixty executions of one session, all completed and continued. They
    // report before they are linked, so one link makes all sixty ready at
    // once: reported one by one after the link, how many continuations
    // they took (and whether the window's loop guard of 20 dropped the
    // rest) depended on how fast the worker picked each one up.
    let busy = Uuid::new_v4();
    let many: Vec<Uuid> = (0..60).map(|_| Uuid::new_v4()).collect();
    replica.approve(busy).await;
    for execution in &many {
        replica.put_status(*execution, "completed", "ok").await;
    }
    replica.link(busy, &many).await;
    // The failing session: its output written for a terminal, 100 lines,
    // the error last.
    let mut output: String = (1..=99)
        .map(|n| format!("\u{1b}[32mstep {n} ok\u{1b}[0m\n"))
        .collect();
    output.push_str("\u{1b}[1;31mError: disk full\u{1b}[0m");
    let failed_execution = Uuid::new_v4();
    replica
        .fail_in_open_window(failing, failed_execution, &output)
        .await;
    let ledger = format!("/v1/sessions/{failing}/deliveries");
    let delivery = until("the failing continuation to fail", async || {
        let page = get(&ledger).await.ok()?;
        page["items"]
            .as_array()?
            .iter()
            .find(|d| d["kind"] == "continuation" && d["state"] == "failed")
            .and_then(|d| d["id"].as_str().map(str::to_owned))
    })
    .await;
    let links = format!("/v1/sessions/{busy}/links?limit=100");
    until("the sixty to be continued", async || {
        let page = get(&links).await.ok()?;
        let items = page["items"].as_array()?;
        (items.len() == 60 && items.iter().all(|l| l["outcome"] == "continued")).then_some(())
    })
    .await;

    // Nothing moves any more: the failure's notice was refused too, and
    // its operator copy, queued apart from the ledger, found no channel
    // (until then the notice is not yet counted as reaching no one).
    let overview = until("the ledger to settle", async || {
        let o = get("/v1/overview").await.ok()?;
        (o["pending_deliveries"] == 0 && o["in_flight"] == 0 && o["undelivered_notices"] == 1)
            .then_some(o)
    })
    .await;
    // The strip shows the store's numbers, the API's too.
    log_in(client, &base, RUNTIME).await?;
    for (name, field) in [
        ("in-flight", "in_flight"),
        ("pending", "pending_deliveries"),
        ("failed", "failed_deliveries"),
        ("dropped", "dropped"),
        ("undelivered", "undelivered_notices"),
        ("rate", "continuations_last_hour"),
    ] {
        let shown = tile(client, name).await?;
        let expected = overview[field].to_string();
        ensure!(
            shown == expected,
            "the {name} tile shows {shown}, the API says {}",
            overview[field]
        );
    }
    ensure!(
        overview["failed_deliveries"].as_i64() >= Some(1)
            && overview["continuations_last_hour"].as_i64() >= Some(1),
        "{overview}"
    );
    let chart = text(client, "#overview figcaption").await?;
    ensure!(
        chart.contains("Continuations delivered per hour"),
        "the chart's text says {chart:?}"
    );
    // A notice that reached no one is a banner, and only then.
    let banners = client
        .find_all(Locator::Css("[data-banner=undelivered]"))
        .await?
        .len();
    let undelivered = overview["undelivered_notices"].as_i64().unwrap_or(0);
    ensure!(
        banners == usize::from(undelivered > 0),
        "{banners} banners for {undelivered} notices that reached no one"
    );
    shoot(client, "overview").await?;

    // The status filter narrows the list to the failing session.
    let all = client.find_all(Locator::Css("tr.session-row")).await?.len();
    ensure!(all == 2, "{all} sessions listed");
    wait(client, "a[data-status=delivery-failed]")
        .await?
        .click()
        .await?;
    wait(client, "a[data-status=delivery-failed].current").await?;
    let rows = client.find_all(Locator::Css("tr.session-row")).await?;
    ensure!(rows.len() == 1, "{} rows under delivery-failed", rows.len());
    let listed = text(client, "tr.session-row .session-link").await?;
    ensure!(listed == failing.to_string(), "listed {listed}");
    let status = text(client, "tr.session-row .status").await?;
    ensure!(status == "delivery failed", "its status reads {status:?}");

    // Sixty executions, sixty rows.
    go(client, &format!("#/session/{busy}"), "#session-view").await?;
    let groups = client
        .find_all(Locator::Css(".executions > details.execution"))
        .await?;
    ensure!(
        groups.len() == 60,
        "{} rows for 60 executions",
        groups.len()
    );
    let finals = client
        .find_all(Locator::Css(
            ".executions > details.execution[data-final=ok]",
        ))
        .await?;
    ensure!(finals.len() == 60, "{} of 60 read continued", finals.len());
    shoot(client, "timeline-grouped").await?;

    // The failing session: its error on the timeline, the output clean and
    // whole at both ends, and no button for the runtime token.
    go(client, &format!("#/session/{failing}"), "#session-view").await?;
    wait(client, ".executions .step-failed").await?;
    let mut failures = Vec::new();
    for step in client
        .find_all(Locator::Css(".executions .step-failed .what"))
        .await?
    {
        failures.push(step.text().await?);
    }
    ensure!(
        failures.iter().any(|f| f.contains("400")),
        "the failure reads {failures:?}"
    );
    let shown: String = client
        .execute(
            "return document.querySelector('#session-view').textContent",
            vec![],
        )
        .await?
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ensure!(!shown.contains('\u{1b}'), "a terminal escape is shown");
    let tail: String = client
        .execute(
            "return document.querySelector('.step-finished .output .tail').textContent",
            vec![],
        )
        .await?
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ensure!(
        tail.ends_with("Error: disk full"),
        "the output's end reads {tail:?}"
    );
    let buttons = client
        .find_all(Locator::Css("button[data-action=retry]"))
        .await?;
    ensure!(
        buttons.is_empty(),
        "the runtime token is shown a retry button"
    );

    // As the admin: Retry, and the runtime (mended) accepts the same key.
    wait(client, "#logout").await?.click().await?;
    log_in(client, &base, ADMIN).await?;
    go(client, &format!("#/session/{failing}"), "#session-view").await?;
    mended.store(true, Ordering::SeqCst);
    confirm_click(client, ".executions button[data-action=retry]").await?;
    let one = format!("/v1/deliveries/{delivery}");
    let after = until("the retried continuation to be delivered", async || {
        let d = get(&one).await.ok()?;
        (d["state"] != "failed").then_some(d)
    })
    .await;
    ensure!(
        after["state"] == "pending" || after["state"] == "delivered",
        "after the retry: {after}"
    );
    let key = after["idempotency_key"]
        .as_str()
        .context("a key")?
        .to_owned();
    let delivered = until("the retried continuation to be delivered", async || {
        let d = get(&one).await.ok()?;
        (d["state"] == "delivered").then_some(d)
    })
    .await;
    ensure!(delivered["failed_attempts"] == 0, "{delivered}");
    let sent = hook
        .requests()
        .iter()
        .filter(|r| r.header("idempotency-key") == Some(key.as_str()))
        .count();
    ensure!(sent >= 2, "the key was sent {sent} time(s), not again");
    // The view refreshed after the button: the row is no longer failed.
    let row = format!("tr[data-delivery='{delivery}'] .state");
    let state = until("the view to refresh", async || {
        let s = text(client, &row).await.ok()?;
        (s != "failed").then_some(s)
    })
    .await;
    ensure!(state == "pending" || state == "delivered", "{state}");
    Ok(())
}
