//! End to end through the real binary: `nomos-continue serve` on an SQLite
//! file with a recording webhook on loopback, driven over HTTP as a runtime
//! would; then SIGTERM, then `status` against the same file; and `--help`
//! for every subcommand.
//!
//! Window expiry is not exercised here: the API's smallest window is one
//! minute, which a test cannot wait out without sleeping. It is covered
//! through the library with an injected clock in `worker.rs`
//! (`after_the_window_expires_a_completion_is_not_continued`, both stores);
//! this test covers the deny case.

use std::collections::{BTreeSet, HashSet};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use nomos_continue::agent::{ContinuationEvent, NoticeEvent};
use nomos_continue_tests::http::{RecordedRequest, RecordingServer, Script};
use nomos_continue_tests::replica::binary;
use nomos_continue_tests::wait::{try_within, PATIENCE};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use uuid::Uuid;

/// A running `nomos-continue serve`; dropping it kills the process, and a
/// panicking test prints its stderr.
struct Serve {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<Vec<String>>>,
    client: reqwest::Client,
}

impl Serve {
    async fn start(database_url: &str, webhook: &str) -> Serve {
        let mut child = Command::new(binary())
            .arg("serve")
            .args(["--database-url", database_url])
            .args(["--listen", "127.0.0.1:0"])
            .args(["--agent-webhook", webhook])
            .args(["--poll-interval", "200ms"])
            .env_remove("NOMOS_CONTINUE_TOKEN")
            .env_remove("NOMOS_CONTINUE_AGENT_OPENAI")
            .env_remove("NOMOS_CONTINUE_POLICY")
            .env("NOMOS_CONTINUE_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
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
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(PATIENCE, async {
            while let Ok(Some(line)) = lines.next_line().await {
                let addr = line
                    .strip_prefix("nomos-continue listening on http://")
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|a| a.parse().ok());
                if addr.is_some() {
                    return addr;
                }
            }
            None
        })
        .await
        .ok()
        .flatten();
        let Some(addr) = addr else {
            let log = stderr
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .join("\n");
            panic!("serve did not print its address:\n{log}");
        };
        // Keep draining stdout so the process never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Serve {
            child,
            addr,
            stderr,
            client: reqwest::Client::new(),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self
            .client
            .request(method.clone(), format!("http://{}{path}", self.addr));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{method} {path}: {status} {body}");
        body
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn put(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::PUT, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Value {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// Polls the session's links and deliveries until `done` holds for it (bounded).
    async fn wait_for_session(
        &self,
        session: Uuid,
        what: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let path = format!("/v1/sessions/{session}");
        let waited = try_within(PATIENCE, async || {
            // The session's two lists, each one page (the test's are small).
            let links = self.get(&format!("{path}/links")).await;
            let deliveries = self.get(&format!("{path}/deliveries")).await;
            let summary = serde_json::json!({
                "links": links["items"],
                "deliveries": deliveries["items"],
            });
            done(&summary).then_some(summary)
        })
        .await;
        waited.unwrap_or_else(|| panic!("timed out waiting for {what}: {}", self.stderr_text()))
    }

    /// SIGTERM, then the exit status (bounded).
    async fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().expect("still running");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {pid}");
        tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("no exit after SIGTERM: {}", self.stderr_text()))
            .expect("wait")
    }

    fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("\n")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if std::thread::panicking() {
            eprintln!("--- stderr of serve ---\n{}", self.stderr_text());
        }
    }
}

/// The state of a link in a session summary, by execution id.
fn link_state(summary: &Value, execution: Uuid) -> Option<String> {
    summary["links"]
        .as_array()?
        .iter()
        .find(|l| l["execution_id"] == execution.to_string())
        .and_then(|l| l["outcome"].as_str().map(str::to_owned))
}

fn bodies(requests: &[RecordedRequest]) -> Vec<Value> {
    requests
        .iter()
        .map(|r| r.json().expect("the webhook body is JSON"))
        .collect()
}

/// Runs the binary to completion and returns its stdout (asserting exit 0).
fn run(args: &[&str]) -> String {
    let output = std::process::Command::new(binary())
        .args(args)
        .env_remove("DATABASE_URL")
        .output()
        .unwrap_or_else(|e| panic!("run {args:?}: {e}"));
    assert!(
        output.status.success(),
        "{args:?} exited {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_link_fail_complete_deny_through_the_binary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite:{}", dir.path().join("e2e.db").display());
    let (_, hook) = RecordingServer::start(Script::statuses([]))
        .await
        .expect("webhook");
    let mut serve = Serve::start(&database_url, &hook.url("/hook")).await;

    // Approve by chat, then a tool result that starts two executions.
    let session = Uuid::new_v4();
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let approved = serve
        .post(
            &format!("/v1/sessions/{session}/approvals"),
            json!({"decision": "approve", "route": "chat"}),
        )
        .await;
    assert_eq!(approved["window"]["route"], "chat");
    let text = format!("pct_create: running, execution {a}\npct_start: running, execution {b}");
    let linked = serve
        .post(
            &format!("/v1/sessions/{session}/tool-results"),
            json!({ "text": text }),
        )
        .await;
    assert_eq!(linked["linked"], json!([a, b]));

    serve
        .put(
            &format!("/v1/executions/{a}"),
            json!({"status": "failed", "result": "ssh: connection refused"}),
        )
        .await;
    serve
        .put(
            &format!("/v1/executions/{b}"),
            json!({"status": "completed", "result": "container 101 started"}),
        )
        .await;
    let summary = serve
        .wait_for_session(session, "both links continued", |s| {
            link_state(s, a).as_deref() == Some("continued")
                && link_state(s, b).as_deref() == Some("continued")
        })
        .await;
    let continuations = summary["deliveries"].as_array().expect("ledger").len();

    // What the runtime received: continuations only (one, or two if the
    // worker picked up the first result before the second was reported),
    // each with a distinct key, covering each execution exactly once.
    let requests = tokio::time::timeout(PATIENCE, hook.wait_for_requests(continuations))
        .await
        .expect("webhook calls");
    assert_eq!(
        requests.len(),
        continuations,
        "one request per ledger row, no redelivery"
    );
    let mut keys = HashSet::new();
    let mut reported = Vec::new();
    for (request, body) in requests.iter().zip(bodies(&requests)) {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/hook");
        let fields = |value: &Value| -> BTreeSet<String> {
            value.as_object().expect("object").keys().cloned().collect()
        };
        assert_eq!(
            fields(&body),
            BTreeSet::from(["data", "timestamp", "type"].map(String::from))
        );
        assert_eq!(
            fields(&body["data"]),
            BTreeSet::from(
                [
                    "executions",
                    "idempotency_key",
                    "note",
                    "session_id",
                    "soul"
                ]
                .map(String::from)
            ),
            "a continuation carries no operator message: {body}"
        );
        let event: ContinuationEvent =
            serde_json::from_value(body.clone()).expect("a continuation.v1");
        let data = event.data;
        assert_eq!(data.session_id, session);
        let key = data.idempotency_key.as_str();
        assert_eq!(request.header("idempotency-key"), Some(key));
        assert_eq!(request.header("webhook-id"), Some(key));
        assert!(keys.insert(key.to_owned()), "key {key} delivered twice");
        assert!(!data.soul.trim().is_empty(), "empty soul");
        let note = &data.note;
        for execution in &data.executions {
            reported.push(execution.id);
            if execution.id == a {
                assert_eq!(execution.outcome, "failed");
                let line = format!("execution {a} failed: ssh: connection refused");
                assert!(
                    note.lines().any(|l| l == line),
                    "no line {line:?} in note:\n{note}"
                );
                if data.executions.len() == 1 {
                    assert_eq!(note.lines().next(), Some(line.as_str()));
                }
            }
        }
    }
    reported.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(reported, expected, "each execution continued exactly once");

    // A third execution starts, the operator denies, then it completes:
    // not continued, and exactly one notice.
    let linked = serve
        .post(
            &format!("/v1/sessions/{session}/tool-results"),
            json!({"text": format!("execution {c} queued")}),
        )
        .await;
    assert_eq!(linked["linked"], json!([c]));
    serve
        .put(&format!("/v1/executions/{c}"), json!({"status": "running"}))
        .await;
    let denied = serve
        .post(
            &format!("/v1/sessions/{session}/approvals"),
            json!({"decision": "deny", "route": "chat"}),
        )
        .await;
    assert_eq!(denied, json!({"window": null}));
    serve
        .put(
            &format!("/v1/executions/{c}"),
            json!({"status": "completed", "result": "done"}),
        )
        .await;
    let summary = serve
        .wait_for_session(session, "the notice delivered", |s| {
            link_state(s, c).is_some()
                && s["deliveries"].as_array().is_some_and(|d| {
                    d.iter()
                        .any(|d| d["kind"] == "notice" && d["state"] == "delivered")
                })
        })
        .await;
    assert_eq!(
        link_state(&summary, c).as_deref(),
        Some("dropped"),
        "{summary}"
    );
    let requests = hook.requests();
    let notices: Vec<NoticeEvent> = bodies(&requests)
        .into_iter()
        .filter_map(|b| serde_json::from_value(b).ok())
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(
        requests.len(),
        continuations + 1,
        "nothing but the notice after the deny"
    );
    assert_eq!(notices[0].data.session_id, session);
    assert!(
        notices[0].data.notice.contains(&c.to_string()),
        "{:?}",
        notices[0]
    );

    // Graceful shutdown on SIGTERM.
    let status = serve.terminate().await;
    assert!(
        status.success(),
        "serve exited {status} after SIGTERM: {}",
        serve.stderr_text()
    );
    drop(serve);

    // `status` reads the same file after the process is gone.
    let text = run(&[
        "status",
        "--database-url",
        &database_url,
        &session.to_string(),
    ]);
    assert!(text.contains(&format!("session {session}")), "{text}");
    assert!(text.contains("window: closed by chat"), "{text}");
    assert!(text.contains("denied at"), "{text}");
    assert!(
        text.contains(&format!("execution {a} [continued] status failed")),
        "{text}"
    );
    assert!(
        text.contains(&format!("execution {b} [continued] status completed")),
        "{text}"
    );
    assert!(
        text.contains(&format!("execution {c} [dropped] status completed")),
        "{text}"
    );
    assert!(text.contains("ledger"), "{text}");
    assert!(text.contains("continuation delivered"), "{text}");
    assert!(text.contains("notice delivered"), "{text}");
    let overview = run(&["status", "--database-url", &database_url]);
    assert!(
        overview.contains("links: 0 pending, 2 continued, 1 dropped, 0 failed"),
        "{overview}"
    );
    assert!(
        overview.contains(&format!(
            "deliveries: {continuations} continuations delivered, 1 notices delivered"
        )),
        "{overview}"
    );
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["demo", "--help"],
        vec!["migrate", "--help"],
        vec!["status", "--help"],
        vec!["policy", "--help"],
        vec!["policy", "check", "--help"],
        vec!["policy", "test", "--help"],
        vec!["policy", "decide", "--help"],
        vec!["policy", "extract", "--help"],
    ] {
        let text = run(&args);
        assert!(text.contains("Usage: nomos-continue"), "{args:?}:\n{text}");
    }
    let serve = run(&["serve", "--help"]);
    for flag in [
        "--agent-webhook",
        "--agent-openai",
        "--openai-model",
        "--openai-key",
        "--token",
        "--listen",
    ] {
        assert!(serve.contains(flag), "serve --help lacks {flag}:\n{serve}");
    }
}

/// Every variable that can hold a secret, or a URL that carries one, set
/// to a value with a planted password: no help text shows it (clap prints
/// `[env: NAME=value]` for a variable that is set, unless told not to).
#[test]
fn no_help_prints_a_secret_from_the_environment() {
    const PLANTED: &str = "s3cretpw";
    let url = format!("postgres://u:{PLANTED}@127.0.0.1:1/db");
    let hook = format!("https://hooks.example/services/{PLANTED}");
    let secret = format!("whsec_{PLANTED}");
    let vars = [
        ("DATABASE_URL", url.as_str()),
        ("NOMOS_CONTINUE_AGENT_WEBHOOK", hook.as_str()),
        ("NOMOS_CONTINUE_AGENT_OPENAI", hook.as_str()),
        ("NOMOS_CONTINUE_NOTIFY_WEBHOOK", hook.as_str()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", hook.as_str()),
        ("NOMOS_CONTINUE_TOKEN", PLANTED),
        ("NOMOS_CONTINUE_ADMIN_TOKEN", PLANTED),
        ("NOMOS_CONTINUE_OPENAI_KEY", PLANTED),
        ("NOMOS_CONTINUE_AGENT_TOKEN", PLANTED),
        ("NOMOS_CONTINUE_NOTIFY_TOKEN", PLANTED),
        ("NOMOS_CONTINUE_WEBHOOK_SECRET", secret.as_str()),
        ("NOMOS_CONTINUE_NOTIFY_SECRET", secret.as_str()),
    ];
    for args in [
        vec!["serve", "--help"],
        vec!["migrate", "--help"],
        vec!["status", "--help"],
        vec!["policy", "replay", "--help"],
    ] {
        let output = std::process::Command::new(binary())
            .args(&args)
            .envs(vars)
            .output()
            .unwrap_or_else(|e| panic!("run {args:?}: {e}"));
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{args:?}: {}", output.status);
        assert!(
            text.contains("[env: "),
            "{args:?} names its variables:\n{text}"
        );
        let shown: Vec<&str> = (text.lines())
            .filter(|line| line.contains(PLANTED))
            .collect();
        assert!(shown.is_empty(), "{args:?} prints a secret: {shown:#?}");
    }
}

#[test]
fn webhook_and_openai_exclude_each_other() {
    let output = std::process::Command::new(binary())
        .args([
            "serve",
            "--agent-webhook",
            "http://127.0.0.1:9/h",
            "--agent-openai",
            "http://127.0.0.1:9",
        ])
        .output()
        .expect("run serve");
    assert_eq!(output.status.code(), Some(2), "clap's usage error");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
    assert!(Path::new(&binary()).exists());
}
