//! A real browser for the console's tests: Debian's `chromium`, driven
//! through its `chromedriver` over WebDriver (fantoccini), headless.
//!
//! `.ci/run` installs both packages. Without them a test fails under
//! `CI=true` and is skipped, with the reason, elsewhere.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long chromedriver may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The driver and browser binaries (`CHROMEDRIVER`, `CHROMIUM` override).
fn binaries() -> (PathBuf, PathBuf) {
    let driver = std::env::var_os("CHROMEDRIVER").unwrap_or_else(|| "/usr/bin/chromedriver".into());
    let browser = std::env::var_os("CHROMIUM").unwrap_or_else(|| "/usr/bin/chromium".into());
    (driver.into(), browser.into())
}

/// A running chromedriver and one headless browser session. Dropping it
/// kills the driver, and the browser with it.
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    _driver: Child,
}

impl Browser {
    /// Starts chromedriver on a free port, waits for its "started" line,
    /// and opens a headless session with a fixed window size (so
    /// screenshots are comparable). `None` (skip) when the binaries are
    /// missing outside CI; an error under `CI=true`.
    pub async fn start() -> Result<Option<Browser>> {
        let (driver, browser) = binaries();
        if !driver.exists() || !browser.exists() {
            let why = format!(
                "{} or {} is missing: install Debian's chromium and chromium-driver \
                 (apt-get install chromium chromium-driver)",
                driver.display(),
                browser.display()
            );
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                bail!("{why}");
            }
            eprintln!("skipped: {why}");
            return Ok(None);
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
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
                         "--disable-dev-shm-usage", "--window-size=1400,1000"],
            }),
        );
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .context("open a chromedriver session")?;
        Ok(Some(Browser {
            client,
            _driver: child,
        }))
    }
}
