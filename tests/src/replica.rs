//! Real `nomos-continue serve` processes, for the fault tests
//! (`tests/tests/delivery/worker_faults.rs`): several replicas on one database, each
//! killed with SIGKILL when the test says so.
//!
//! Why real processes: "a crash at any point loses nothing" is a claim about
//! what is in the database when a process vanishes without unwinding, which
//! an in-process task that is merely dropped does not exercise (its
//! destructors run, its connections close politely).
//!
//! The binary is built once per test process with the same cargo and profile
//! as the test itself (a no-op when it is fresh), because a test crate cannot
//! name another package's binary through `CARGO_BIN_EXE_*`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use uuid::Uuid;

/// How long a replica may take to print its address (debug build, policy
/// compilation, migrations already applied by the test).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The `nomos-continue` binary next to this test executable, built (or
/// found fresh) once per process.
///
/// It is built by `cargo test --workspace --no-run`, not `cargo build`: the
/// binary must come from the same feature resolution as the test run, or
/// cargo compiles wasmtime and everything under it a second time. Inside
/// `cargo test --workspace` (what CI runs) this is a no-op.
///
/// Panics if the build fails: every fault test needs it.
pub fn binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(build_binary).clone()
}

fn build_binary() -> PathBuf {
    let (mut cargo, profile_dir) = nested_test_build(std::env::vars_os());
    let status = cargo
        .arg("--quiet")
        .status()
        .unwrap_or_else(|e| panic!("run cargo build for nomos-continue: {e}"));
    assert!(
        status.success(),
        "cargo test --workspace --no-run failed: {status}"
    );
    let binary = profile_dir.join(format!("nomos-continue{}", std::env::consts::EXE_SUFFIX));
    assert!(binary.exists(), "no binary at {}", binary.display());
    binary
}

/// The variables cargo sets for a test process it runs (the package's
/// manifest directory, name and version, `OUT_DIR`, ...), which a shell
/// that built the tests did not have. A build script that reads one asks
/// cargo to rebuild when it changes (ring's reads `CARGO_MANIFEST_DIR` and
/// the `CARGO_PKG_*` ones), so a nested cargo that inherits them finds the
/// test build stale and rebuilds ring, rustls, the crate and every test
/// binary while the tests wait for it, then the next `cargo test` rebuilds
/// them back.
fn set_by_cargo_for_a_test(name: &str) -> bool {
    const PREFIXES: [&str; 4] = [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
    ];
    const NAMES: [&str; 4] = [
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p)) || NAMES.contains(&name)
}

/// `cargo test --workspace --no-run` for the target directory and profile
/// this test executable was built in, in `env` less what cargo set for the
/// test ([`set_by_cargo_for_a_test`]): the shell's environment that built
/// it; and that profile's directory.
fn nested_test_build(
    env: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> (std::process::Command, PathBuf) {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    // target/<profile>/deps/<test> → target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("unexpected test executable path {}", exe.display()))
        .to_path_buf();
    let target_dir = profile_dir
        .parent()
        .unwrap_or_else(|| panic!("no target dir above {}", profile_dir.display()));
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let mut cargo = std::process::Command::new(env!("CARGO"));
    cargo
        .args(["test", "--workspace", "--no-run"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir);
    cargo
        .env_clear()
        .envs(env.filter(|(name, _)| !name.to_str().is_some_and(set_by_cargo_for_a_test)));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cargo.arg("--release");
    }
    (cargo, profile_dir)
}

/// How to start one replica.
#[derive(Debug, Clone)]
pub struct ReplicaOptions {
    /// The database (already migrated by the test).
    pub database_url: String,
    /// The agent webhook URL.
    pub webhook: String,
    /// `--worker-id`.
    pub worker_id: String,
    /// `--poll-interval`, in milliseconds.
    pub poll_ms: u64,
    /// `--lease`, in seconds.
    pub lease_secs: u64,
    /// `false` passes `--no-wake-listener`.
    pub wake_listener: bool,
    /// `--listen` (loopback on a free port unless a test says otherwise).
    pub listen: String,
    /// More arguments for `serve` (tokens, TLS, overrides).
    pub extra_args: Vec<String>,
    /// The bearer token the helpers below send (`serve --token`, given in
    /// `extra_args`); none for a replica without tokens.
    pub token: Option<String>,
    /// Environment variables set for the process.
    pub env: Vec<(String, String)>,
    /// The `nomos-continue` binary to run; `None`: the one the test build
    /// made ([`binary`]). A benchmark names a release build.
    pub binary: Option<PathBuf>,
}

impl ReplicaOptions {
    /// A replica with a 100 ms poll, a 1 s lease and the wake listener on.
    pub fn new(database_url: &str, webhook: &str, worker_id: &str) -> Self {
        ReplicaOptions {
            database_url: database_url.to_owned(),
            webhook: webhook.to_owned(),
            worker_id: worker_id.to_owned(),
            poll_ms: 100,
            lease_secs: 1,
            wake_listener: true,
            listen: "127.0.0.1:0".into(),
            extra_args: Vec::new(),
            token: None,
            env: Vec::new(),
            binary: None,
        }
    }
}

/// A running `nomos-continue serve`. Dropping it kills the process
/// (SIGKILL); if the test is panicking, its stderr is printed first.
pub struct Replica {
    child: Child,
    /// Where its API listens.
    pub addr: SocketAddr,
    /// Its `--worker-id`.
    pub worker_id: String,
    client: reqwest::Client,
    token: Option<String>,
    stderr: Arc<Mutex<Vec<String>>>,
    stdout: Arc<Mutex<Vec<String>>>,
}

impl Replica {
    /// Spawns the binary and waits for its "listening on" line.
    pub async fn start(options: &ReplicaOptions) -> Replica {
        let mut child = serve_command(options)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", binary().display()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(pipe) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            tokio::spawn(async move {
                let mut lines = BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    sink.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(line);
                }
            });
        }
        let stdout = child
            .stdout
            .take()
            .unwrap_or_else(|| panic!("replica {} has no stdout", options.worker_id));
        let mut lines = BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(START_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(addr) = parse_listening(&line) {
                    return Some(addr);
                }
            }
            None
        })
        .await
        .ok()
        .flatten();
        let Some(addr) = addr else {
            let _ = child.start_kill();
            let log = stderr
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .join("\n");
            panic!(
                "replica {} did not report its address:\n{log}",
                options.worker_id
            );
        };
        // Keep draining stdout so the process never blocks on a full pipe.
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stdout);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
            }
        });
        Replica {
            child,
            addr,
            worker_id: options.worker_id.clone(),
            client: reqwest::Client::new(),
            token: options.token.clone(),
            stderr,
            stdout,
        }
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Everything it has written on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("\n")
    }

    /// Everything it has written on stdout so far, after its address line.
    pub fn stdout(&self) -> String {
        self.stdout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("\n")
    }

    /// `GET path` with its token; the body, asserting a 2xx.
    pub async fn get_text(&self, path: &str) -> String {
        let response = self.answer(self.client.get(self.url(path)), path).await;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "GET {path}: {status} {body}");
        body
    }

    /// `request` sent with the replica's token, if any.
    async fn answer(&self, request: reqwest::RequestBuilder, what: &str) -> reqwest::Response {
        let request = match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what} on {}: {e}", self.worker_id))
    }

    /// SIGTERM (a graceful shutdown: deliveries in flight finish, spans are
    /// flushed), then its exit status, bounded by the start time-out.
    pub async fn terminate(&mut self) -> std::process::ExitStatus {
        self.signal("TERM");
        tokio::time::timeout(START_TIMEOUT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("no exit after SIGTERM: {}", self.stderr()))
            .unwrap_or_else(|e| panic!("wait for {}: {e}", self.worker_id))
    }

    /// Sends `signal` (`STOP`, `CONT`: a replica frozen and thawed, so a
    /// test can change the database under it without a race).
    pub fn signal(&self, signal: &str) {
        let pid = (self.child.id()).unwrap_or_else(|| panic!("{} has exited", self.worker_id));
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .unwrap_or_else(|e| panic!("run kill: {e}"));
        assert!(sent.success(), "kill -{signal} {pid}");
    }

    /// SIGKILL (what `kill -9` sends) and wait until the process is gone:
    /// no destructor, no graceful shutdown, leases left as they were.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    async fn send(&self, request: reqwest::RequestBuilder, what: &str) -> Value {
        let response = self.answer(request, what).await;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(
            status.is_success(),
            "{what} on {}: {status} {body}",
            self.worker_id
        );
        body
    }

    /// `POST /v1/sessions/{id}/approvals` (approve, by button).
    pub async fn approve(&self, session: Uuid) {
        let url = self.url(&format!("/v1/sessions/{session}/approvals"));
        let body = json!({"decision": "approve", "route": "button"});
        self.send(self.client.post(url).json(&body), "approve")
            .await;
    }

    /// `POST /v1/sessions/{id}/tool-results` with a text naming `executions`;
    /// asserts they were all linked.
    pub async fn link(&self, session: Uuid, executions: &[Uuid]) {
        let text = executions
            .iter()
            .map(|id| format!("running, execution {id}"))
            .collect::<Vec<_>>()
            .join("\n");
        let url = self.url(&format!("/v1/sessions/{session}/tool-results"));
        let body = self
            .send(self.client.post(url).json(&json!({"text": text})), "link")
            .await;
        let linked = body["linked"].as_array().map_or(0, Vec::len);
        assert_eq!(linked, executions.len(), "link answered {body}");
    }

    /// The seed's story up to the failure: approve the session, link the
    /// execution to it, report it failed with `result`. The worker takes it
    /// from there.
    pub async fn fail_in_open_window(&self, session: Uuid, execution: Uuid, result: &str) {
        self.approve(session).await;
        self.link(session, &[execution]).await;
        self.put_status(execution, "failed", result).await;
    }

    /// `PUT /v1/executions/{id}`.
    pub async fn put_status(&self, execution: Uuid, status: &str, result: &str) {
        let url = self.url(&format!("/v1/executions/{execution}"));
        let body = json!({"status": status, "result": result});
        self.send(self.client.put(url).json(&body), "put status")
            .await;
    }

    /// `PUT /v1/policy` with a component (a loopback replica needs no
    /// token); the answer.
    pub async fn put_policy(&self, wasm: Vec<u8>) -> Value {
        let url = self.url("/v1/policy");
        self.send(self.client.put(url).body(wasm), "put policy")
            .await
    }

    /// `GET /v1/policy`.
    pub async fn policy(&self) -> Value {
        self.send(self.client.get(self.url("/v1/policy")), "get policy")
            .await
    }

    /// `GET /v1/sessions/{id}`.
    pub async fn session(&self, session: Uuid) -> Value {
        let url = self.url(&format!("/v1/sessions/{session}"));
        self.send(self.client.get(url), "get session").await
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if std::thread::panicking() {
            let log = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
            eprintln!(
                "--- stderr of replica {} ---\n{}",
                self.worker_id,
                log.join("\n")
            );
        }
    }
}

/// `nomos-continue serve` as a replica with `options` runs it: loopback on
/// a free port unless told otherwise, no token unless given in
/// `extra_args`, logs at `warn`, stdout and stderr piped.
fn serve_command(options: &ReplicaOptions) -> Command {
    let mut command = Command::new(options.binary.clone().unwrap_or_else(binary));
    command
        .arg("serve")
        .args(["--database-url", &options.database_url])
        .args(["--listen", &options.listen])
        .args(["--agent-webhook", &options.webhook])
        .args(["--worker-id", &options.worker_id])
        .args(["--poll-interval", &format!("{}ms", options.poll_ms)])
        .args(["--lease", &format!("{}s", options.lease_secs)])
        .args(&options.extra_args)
        .env_remove("NOMOS_CONTINUE_TOKEN")
        .env_remove("NOMOS_CONTINUE_ADMIN_TOKEN")
        .env_remove("NOMOS_CONTINUE_AGENT_TOKEN")
        .env_remove("NOMOS_CONTINUE_WEBHOOK_SECRET")
        .env_remove("NOMOS_CONTINUE_WEBHOOK_SECRET_FILE")
        .env_remove("NOMOS_CONTINUE_POLICY")
        .env_remove("NOMOS_CONTINUE_NO_WAKE_LISTENER")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env("NOMOS_CONTINUE_LOG", "warn")
        .envs(options.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if !options.wake_listener {
        command.arg("--no-wake-listener");
    }
    command
}

/// How a replica that was expected to refuse to start ended.
#[derive(Debug)]
pub struct Refusal {
    /// Its exit status.
    pub status: std::process::ExitStatus,
    /// Everything it wrote on stderr.
    pub stderr: String,
}

impl Refusal {
    /// Spawns a replica that must exit at start-up; panics if it reports an
    /// address instead (it started) or has not exited within the start
    /// time-out.
    pub async fn expect(options: &ReplicaOptions) -> Refusal {
        let mut child = serve_command(options)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", binary().display()));
        let stdout = child
            .stdout
            .take()
            .unwrap_or_else(|| panic!("replica {} has no stdout", options.worker_id));
        let mut lines = BufReader::new(stdout).lines();
        let ended = tokio::time::timeout(START_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if parse_listening(&line).is_some() {
                    return Err(line);
                }
            }
            Ok(())
        })
        .await;
        match ended {
            Ok(Ok(())) => {}
            Ok(Err(line)) => {
                let _ = child.start_kill();
                panic!(
                    "replica {} started although it should have refused: {line}",
                    options.worker_id
                );
            }
            Err(_) => {
                let _ = child.start_kill();
                panic!("replica {} neither started nor exited", options.worker_id);
            }
        }
        let output = tokio::time::timeout(START_TIMEOUT, child.wait_with_output())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "replica {} closed stdout but did not exit",
                    options.worker_id
                )
            })
            .unwrap_or_else(|e| panic!("wait for replica {}: {e}", options.worker_id));
        Refusal {
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// The address in `nomos-continue listening on http://ADDR (…)`.
fn parse_listening(line: &str) -> Option<SocketAddr> {
    let rest = line.split("listening on http").nth(1)?;
    let rest = rest
        .strip_prefix("s://")
        .or_else(|| rest.strip_prefix("://"))?;
    rest.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{nested_test_build, parse_listening};

    /// The nested build finds the build that made this test fresh: it
    /// compiles nothing, even when this test runs under `cargo test`,
    /// which sets `CARGO_MANIFEST_DIR` and the rest for it (set here too,
    /// for a runner that does not).
    #[test]
    fn the_nested_build_finds_the_test_build_fresh() {
        let (mut cargo, _) = nested_test_build(std::env::vars_os());
        let as_cargo_test_sets = [
            ("CARGO_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR")),
            ("CARGO_PKG_NAME", env!("CARGO_PKG_NAME")),
        ]
        .map(|(name, value)| (name.into(), value.into()));
        let (mut again, _) = nested_test_build(std::env::vars_os().chain(as_cargo_test_sets));
        for cargo in [&mut cargo, &mut again] {
            let out = cargo
                .arg("--message-format=json")
                .stderr(std::process::Stdio::inherit())
                .output()
                .expect("run cargo");
            assert!(
                out.status.success(),
                "cargo test --workspace --no-run failed"
            );
            let rebuilt: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .filter(|m| m["reason"] == "compiler-artifact" && m["fresh"] == false)
                .map(|m| m["target"]["name"].to_string())
                .collect();
            assert!(
                rebuilt.is_empty(),
                "the nested build rebuilt what the test build made: {rebuilt:?}"
            );
        }
    }

    #[test]
    fn the_listening_line_yields_the_address() {
        let line = "nomos-continue listening on http://127.0.0.1:4321 (worker w1, policy abc)";
        assert_eq!(
            parse_listening(line),
            Some("127.0.0.1:4321".parse().unwrap())
        );
        let tls = "nomos-continue listening on https://0.0.0.0:4321 (worker w1, policy abc)";
        assert_eq!(parse_listening(tls), Some("0.0.0.0:4321".parse().unwrap()));
        assert_eq!(parse_listening("something else"), None);
    }
}
