//! A real browser for the console's tests: Debian's `chromium`, driven
//! through its `chromedriver` over WebDriver (fantoccini), headless; and
//! axe-core, the accessibility checker injected into its pages.
//!
//! `.ci/run` installs both packages, and axe-core beside the test build
//! (`tests/js/axe.sh`). Without them a test fails under `CI=true` and is
//! skipped, with the reason, elsewhere.
//!
//! Why the teardown is more than killing chromedriver: chromium is
//! chromedriver's child, and a child outlives its parent's death, so a
//! killed driver left a headless browser running after every test run.
//! The browser now gets a profile directory of its own and the driver a
//! process group of its own; [`Browser::close`] ends the WebDriver session
//! (chromedriver then quits the browser), kills the group, and checks that
//! no process of that profile is left. Dropping a `Browser` without
//! `close` (a failed test) still kills both, without the check.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::db::in_ci;
use crate::wait::{try_within, PATIENCE};

/// How long chromedriver may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The driver and browser binaries (`CHROMEDRIVER`, `CHROMIUM` override).
fn binaries() -> (PathBuf, PathBuf) {
    let driver = std::env::var_os("CHROMEDRIVER").unwrap_or_else(|| "/usr/bin/chromedriver".into());
    let browser = std::env::var_os("CHROMIUM").unwrap_or_else(|| "/usr/bin/chromium".into());
    (driver.into(), browser.into())
}

/// A running chromedriver and one headless browser session, with its own
/// profile directory. End it with [`Browser::close`].
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    driver: Child,
    /// The browser's `--user-data-dir`: what names its processes.
    profile: TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port in a process group of its own,
    /// waits for its "started" line, and opens a headless session with a
    /// fixed window size (so screenshots are comparable). `None` (skip)
    /// when the binaries are missing outside CI; an error under `CI=true`.
    pub async fn start() -> Result<Option<Browser>> {
        let (driver, browser) = binaries();
        if !driver.exists() || !browser.exists() {
            let why = format!(
                "{} or {} is missing: install Debian's chromium and chromium-driver \
                 (apt-get install chromium chromium-driver)",
                driver.display(),
                browser.display()
            );
            if in_ci() {
                bail!("{why}");
            }
            eprintln!("skipped: {why}");
            return Ok(None);
        }
        let profile = tempfile::Builder::new()
            .prefix("nomos-chromium-")
            .tempdir()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("start {}", driver.display()))?;
        let stdout = child.stdout.take().context("chromedriver's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let started = tokio::time::timeout(START_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("started successfully") {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false);
        if !started {
            bail!("chromedriver did not start on port {port}");
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let mut capabilities = Capabilities::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": browser,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,1000",
                         format!("--user-data-dir={}", profile.path().display())],
            }),
        );
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .context("open a chromedriver session")?;
        Ok(Some(Browser {
            client,
            driver: child,
            profile,
        }))
    }

    /// Ends the WebDriver session (`DELETE /session`: chromedriver quits
    /// the browser), kills the driver's process group, and fails if any
    /// process of this browser's profile is still running after that.
    pub async fn close(mut self) -> Result<()> {
        let ended = self.client.clone().close().await;
        self.kill();
        let profile = self.profile.path().to_owned();
        let gone = try_within(PATIENCE, async || {
            processes_of(&profile).is_empty().then_some(())
        })
        .await;
        ended.context("end the WebDriver session")?;
        ensure!(
            gone.is_some(),
            "chromium outlived its test: {:?}",
            processes_of(&profile)
        );
        Ok(())
    }

    /// Kills the driver's process group and whatever still runs with this
    /// profile (a browser that left the group).
    fn kill(&mut self) {
        if let Some(group) = self.driver.id() {
            signal_kill(&format!("-{group}"));
        }
        for (pid, _) in processes_of(self.profile.path()) {
            signal_kill(&pid.to_string());
        }
        let _ = self.driver.start_kill();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `kill -KILL -- target`: a pid, or a process group as `-pgid`. Failure
/// (nothing left to kill) is the wanted state.
fn signal_kill(target: &str) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", target])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The processes whose command line names `profile`, as (pid, command
/// line), read from `/proc`.
pub fn processes_of(profile: &Path) -> Vec<(u32, String)> {
    let needle = profile.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let raw = std::fs::read(entry.path().join("cmdline")).ok()?;
            let line = String::from_utf8_lossy(&raw).replace('\0', " ");
            // A process that has exited but is not yet reaped has an empty
            // command line: it is not running.
            line.contains(&needle).then_some((pid, line))
        })
        .collect()
}

/// axe-core's `axe.min.js`, installed (or found) once per test process by
/// `tests/js/axe.sh`. `None` (the check is skipped, with the reason) when
/// it cannot be installed outside CI; an error under `CI=true`.
pub fn axe() -> Result<Option<String>> {
    static AXE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("js/axe.sh");
    match AXE.get_or_init(|| crate::setup::run(&script)) {
        Ok(path) => Ok(Some(
            std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?,
        )),
        Err(why) if in_ci() => bail!("CI=true but axe-core is missing: {why}"),
        Err(why) => {
            eprintln!("skipped the accessibility checks: no axe-core: {why}");
            Ok(None)
        }
    }
}

/// Runs axe-core (its source, from [`axe`]) on the page the client shows
/// and fails listing every violation: rule, impact, help and the elements.
pub async fn assert_accessible(client: &Client, axe: &str, what: &str) -> Result<()> {
    client.execute(axe, Vec::new()).await?;
    let found = client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, { resultTypes: ['violations'] })
               .then((r) => done(r.violations.map((v) =>
                 v.id + ' (' + v.impact + '): ' + v.help + ' at ' +
                 v.nodes.map((n) => n.target.join(' ') + ' ' + n.failureSummary).join(' | '))))
               .catch((e) => done(['axe failed: ' + e]));",
            Vec::new(),
        )
        .await?;
    let violations: Vec<String> = serde_json::from_value(found)?;
    ensure!(
        violations.is_empty(),
        "axe-core found {} violation(s) on {what}:\n{}",
        violations.len(),
        violations.join("\n")
    );
    Ok(())
}
