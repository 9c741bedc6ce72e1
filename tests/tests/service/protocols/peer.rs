//! The real SDKs' peers as processes: `tests/python/a2a_agent.py` (a
//! remote A2A agent, either a2a-sdk major, driven by JSON lines) and
//! `tests/python/mcp_peer.py` (an MCP task tool and the runtime's client,
//! run to its end).
//!
//! Why processes driven by lines: the SDKs are Python; the test keeps the
//! runtime's decisions (when a task may end, what to replay) and the
//! peers keep the protocol, so nothing of A2A or MCP is written in Rust.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use nomos_continue_tests::python;
use nomos_continue_tests::wait::PATIENCE;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A running `a2a_agent.py`. Dropping it kills the process.
pub struct A2aAgent {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<Vec<String>>>,
    /// Its JSON-RPC URL (what a runtime registers as the agent's address).
    pub url: String,
    /// The a2a-sdk release it runs on.
    pub sdk: String,
}

impl A2aAgent {
    /// Starts the agent with `python` (the interpreter of the venv of its
    /// SDK) and waits for its "listening" line.
    pub async fn start(python: &Path) -> A2aAgent {
        let mut child = spawn(python, "a2a_agent.py", &[], Stdio::piped());
        let stderr = drain(child.stderr.take());
        let stdin = child.stdin.take().expect("agent stdin");
        let stdout = BufReader::new(child.stdout.take().expect("agent stdout")).lines();
        let mut agent = A2aAgent {
            child,
            stdin,
            stdout,
            stderr,
            url: String::new(),
            sdk: String::new(),
        };
        let hello = agent.line("its listening line").await;
        agent.url = hello["listening"].as_str().expect("listening URL").into();
        agent.sdk = hello["sdk"].as_str().expect("sdk version").into();
        agent
    }

    /// Sends one command and returns its answer; panics on an `error`.
    pub async fn ask(&mut self, command: Value) -> Value {
        let mut line = command.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("write to the agent: {e}"));
        let answer = self.line(&command.to_string()).await;
        assert!(
            answer.get("error").is_none(),
            "the agent answered {command} with {answer}:\n{}",
            self.stderr()
        );
        answer
    }

    /// A task running `script` (fail, complete, input), held in `working`;
    /// the task as the runtime's SDK client got it.
    pub async fn send(&mut self, script: &str) -> Value {
        self.ask(json!({"op": "send", "script": script})).await["task"].take()
    }

    /// A task of `script` sent with `push` in the message's own
    /// configuration (1.0 `taskPushNotificationConfig`, 0.3
    /// `pushNotificationConfig`).
    pub async fn send_with_push(&mut self, script: &str, push: &Value) -> Value {
        let command = json!({"op": "send", "script": script, "push": push});
        self.ask(command).await["task"].take()
    }

    /// Makes the SDK's client carry `push` in every message it sends from
    /// now on (its `ClientConfig`), the SDKs' own default.
    pub async fn configure(&mut self, push: &Value) {
        self.ask(json!({"op": "client", "push": push})).await;
    }

    /// The task as the agent's SDK returns it (`GetTask`).
    pub async fn get(&mut self, task_id: &str) -> Value {
        self.ask(json!({"op": "get", "task_id": task_id})).await["task"].take()
    }

    /// Registers `push` (nomos-continue's `push` object) for the task, as
    /// the configuration `id`.
    pub async fn register(&mut self, task_id: &str, push: &Value, id: &str) -> Value {
        let command = json!({"op": "push", "task_id": task_id, "push": push, "id": id});
        self.ask(command).await["config"].take()
    }

    /// Lets the task play its script to its last state; that task.
    pub async fn go(&mut self, task_id: &str) -> Value {
        self.ask(json!({"op": "go", "task_id": task_id})).await["ended"].take()
    }

    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("\n")
    }

    async fn line(&mut self, what: &str) -> Value {
        let read = tokio::time::timeout(PATIENCE, self.stdout.next_line()).await;
        let line = match read {
            Ok(Ok(Some(line))) => line,
            other => {
                let _ = self.child.start_kill();
                panic!(
                    "no answer from the agent to {what} ({other:?}):\n{}",
                    self.stderr()
                )
            }
        };
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("agent line {line:?}: {e}"))
    }
}

/// What `mcp_peer.py` did as the runtime: one entry per call it made to
/// nomos-continue, in order.
#[derive(Debug)]
pub struct McpRun {
    pub calls: Vec<McpCall>,
}

/// One call `mcp_peer.py` made: where, what it sent, what it was answered.
#[derive(Debug, Clone)]
pub struct McpCall {
    pub path: String,
    pub body: Value,
    pub status: u16,
    pub answer: Value,
}

impl McpRun {
    /// The bodies it forwarded to `POST /v1/mcp/tasks`, in order.
    pub fn forwarded(&self) -> Vec<&McpCall> {
        self.calls
            .iter()
            .filter(|c| c.path == "/v1/mcp/tasks")
            .collect()
    }
}

/// Runs `mcp_peer.py <tool>` against nomos-continue at `base` as the
/// runtime of `session`, to its end.
pub async fn mcp_runtime(
    python: &Path,
    tool: &str,
    base: &str,
    token: &str,
    session: uuid::Uuid,
) -> McpRun {
    let session = session.to_string();
    let args = [
        tool,
        "--nomos",
        base,
        "--token",
        token,
        "--session",
        &session,
    ];
    let child = spawn(python, "mcp_peer.py", &args, Stdio::null());
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("mcp_peer.py {tool} ran past {PATIENCE:?}"))
        .unwrap_or_else(|e| panic!("wait for mcp_peer.py: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "mcp_peer.py {tool} exited {}:\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let calls = stdout
        .lines()
        .map(|line| {
            let call: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("peer line {line:?}: {e}"));
            McpCall {
                path: call["path"].as_str().unwrap_or_default().into(),
                body: call["body"].clone(),
                status: call["status"].as_u64().unwrap_or_default() as u16,
                answer: call["answer"].clone(),
            }
        })
        .collect();
    McpRun { calls }
}

/// `tests/python/<script> <args>` with `python`, stdout and stderr piped,
/// killed on drop; Python's warnings (the SDKs' deprecations) off.
fn spawn(python: &Path, script: &str, args: &[&str], stdin: Stdio) -> Child {
    let path = python::dir().join(script);
    Command::new(python)
        .args(["-W", "ignore"])
        .arg(&path)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", path.display()))
}

/// Keeps a pipe drained into lines, for a failure's message.
fn drain(pipe: Option<tokio::process::ChildStderr>) -> Arc<Mutex<Vec<String>>> {
    let sink = Arc::new(Mutex::new(Vec::new()));
    if let Some(pipe) = pipe {
        let lines = Arc::clone(&sink);
        tokio::spawn(async move {
            let mut reader = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                lines
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
            }
        });
    }
    sink
}
