//! The protocols through the real binary and the real SDKs: the seed's
//! story told by an A2A remote agent (a2a-sdk 1.x for A2A 1.0, 0.3.x for
//! A2A 0.3) pushing to nomos-continue with the SDK's own sender, and by an
//! MCP task tool (mcp 1.30, the 2025-11-25 tasks) whose runtime forwards
//! what its client got.
//!
//! Each story: an approved window; the long-running tool answers a task
//! (that answer is the tool result the runtime posts); the task fails; the
//! agent is continued exactly once, with the failure and the partial
//! output in its note; the same update again and a `working` after the
//! failure change nothing; a push that names another task than its token's
//! is refused; a task that asks for input gives a notice (to the agent and
//! the operator's channel) and is never continued; a task that ends while
//! nomos-continue is down (the senders do not retry) is asked for after its
//! restart, because the runtime registered the agent's URL.
//!
//! Why a sentinel rather than a wait: "never a second continuation" cannot
//! be watched for. After the replays the test reports a plain execution of
//! the same session failed and waits for its continuation; the worker takes
//! a session's work in order, so once that one is delivered anything the
//! replays had caused would be in the ledger too, and the test counts.
//!
//! Needs the tests' Python environments (main, and `a2a03` for A2A 0.3):
//! without them each test skips, except under `CI=true`.

/// Two tests for each story: A2A 1.0 on a2a-sdk 1.x (the main
/// environment), A2A 0.3 on a2a-sdk 0.3.x (its own).
macro_rules! each_version {
    ($($story:ident: $v1_0:ident, $v0_3:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $v1_0() {
            $story(Venv::Main, "1.0").await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $v0_3() {
            $story(Venv::A2a03, "0.3").await;
        }
    )*};
}

mod a2a;
mod a2a_session;
mod mcp;
mod peer;

use nomos_continue_tests::http::{RecordedRequest, RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::until;
use serde_json::{json, Value};
use uuid::Uuid;

/// The runtime's token the served binary is given.
const RUNTIME_TOKEN: &str = "protocols-runtime-token";

/// What the peers' scripts say (tests/python/a2a_agent.py, mcp_peer.py).
const FAILURE: &str = "the export failed: the warehouse refused the credentials";
const PARTIAL: &str = "exported 17 of 42 rows before the error";
const QUESTION: &str = "which account should the export be billed to?";

/// `serve` on a fresh SQLite file with a runtime token, the agent's
/// webhook and the operator's channel both recorded.
struct Serve {
    replica: Replica,
    options: ReplicaOptions,
    /// The agent's webhook: continuations and notices.
    agent: RecordingServer,
    /// `--notify-webhook`: what a person is told.
    operator: RecordingServer,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// One answer of the API: its status and its JSON body (null if none).
struct Answer {
    status: u16,
    body: Value,
}

impl Serve {
    async fn start() -> Serve {
        Self::start_with(&[]).await
    }

    /// Like [`Serve::start`], with more of `serve`'s flags.
    async fn start_with(flags: &[&str]) -> Serve {
        let ok = || Script::always(Reply::json(200, &json!({})));
        let (_, agent) = RecordingServer::start(ok()).await.expect("agent webhook");
        let (_, operator) = RecordingServer::start(ok()).await.expect("operator");
        let dir = tempfile::tempdir().expect("tempdir");
        let database_url = format!("sqlite:{}", dir.path().join("protocols.db").display());
        let mut options = ReplicaOptions::new(&database_url, &agent.url("/hook"), "protocols");
        options.token = Some(RUNTIME_TOKEN.into());
        options.extra_args = vec![
            "--token".into(),
            RUNTIME_TOKEN.into(),
            "--notify-webhook".into(),
            operator.url("/operator"),
        ];
        options
            .extra_args
            .extend(flags.iter().map(|f| (*f).to_owned()));
        Serve {
            replica: Replica::start(&options).await,
            options,
            agent,
            operator,
            http: reqwest::Client::new(),
            _dir: dir,
        }
    }

    /// Kills the process (SIGKILL: nothing is finished politely).
    async fn stop(&mut self) {
        self.replica.kill().await;
    }

    /// Starts it again on the same database (on a new port), as a new
    /// incarnation: the killed one's worker id stays registered until its
    /// heartbeat goes stale, and a process that knows it is a restart
    /// takes a new one (as the kill -9 tests' replicas do).
    async fn start_again(&mut self) {
        self.options.worker_id = format!("{}-again", self.options.worker_id);
        self.replica = Replica::start(&self.options).await;
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.replica.addr)
    }

    /// `POST path` with the runtime's token and a JSON body.
    async fn post(&self, path: &str, body: &Value) -> Answer {
        let request = self.http.post(self.url(path)).bearer_auth(RUNTIME_TOKEN);
        answer(request.json(body), path).await
    }

    /// `GET path` with the runtime's token; asserts a 2xx.
    async fn get(&self, path: &str) -> Value {
        let request = self.http.get(self.url(path)).bearer_auth(RUNTIME_TOKEN);
        let got = answer(request, path).await;
        assert!(got.ok(), "GET {path}: {} {}", got.status, got.body);
        got.body
    }

    /// A push as a remote agent sends it: `path` (the push URL's), the
    /// headers it sent, the body verbatim; no API token.
    async fn push(&self, path: &str, headers: &[(String, String)], body: &[u8]) -> Answer {
        let mut request = self.http.post(self.url(path)).body(body.to_vec());
        for (name, value) in headers {
            request = request.header(name, value);
        }
        answer(request, path).await
    }

    /// [`push`](Self::push) of a request a tap recorded, to the same path.
    async fn replay(&self, recorded: &RecordedRequest) -> Answer {
        let headers = sent_headers(recorded);
        self.push(&recorded.path, &headers, &recorded.body).await
    }

    /// Approves `session` (the operator's window opens).
    async fn approve(&self, session: Uuid) {
        let body = json!({"decision": "approve", "route": "button"});
        let got = self
            .post(&format!("/v1/sessions/{session}/approvals"), &body)
            .await;
        assert!(got.ok(), "approve: {} {}", got.status, got.body);
    }

    /// Posts `result` (the JSON a tool answered) as the session's tool
    /// result; the link answer.
    async fn tool_result(&self, session: Uuid, result: &Value) -> Value {
        let body = json!({"text": result.to_string()});
        let got = self
            .post(&format!("/v1/sessions/{session}/tool-results"), &body)
            .await;
        assert!(got.ok(), "tool result: {} {}", got.status, got.body);
        got.body
    }

    /// `POST /v1/sessions/{id}/tasks`; the answer (execution id, push).
    async fn task(&self, session: Uuid, body: Value) -> Value {
        let got = self
            .post(&format!("/v1/sessions/{session}/tasks"), &body)
            .await;
        assert!(got.ok(), "session task: {} {}", got.status, got.body);
        got.body
    }

    /// `GET /v1/executions/{id}`'s execution (null before any report).
    async fn execution(&self, id: &str) -> Value {
        self.get(&format!("/v1/executions/{id}")).await["execution"].take()
    }

    /// The session's deliveries of `kind` (continuation, notice), oldest
    /// first.
    async fn deliveries(&self, session: Uuid, kind: &str) -> Vec<Value> {
        let page = self
            .get(&format!("/v1/sessions/{session}/deliveries?limit=500"))
            .await;
        let mut items: Vec<Value> = page["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"] == kind)
            .cloned()
            .collect();
        items.reverse();
        items
    }

    /// Waits until the session has a delivered delivery of `kind` naming
    /// `execution` (any, when `None`); that delivery.
    async fn delivered(&self, session: Uuid, kind: &str, execution: Option<&str>) -> Value {
        let what = format!("a delivered {kind} of session {session} naming {execution:?}");
        until(&what, async || {
            self.deliveries(session, kind)
                .await
                .into_iter()
                .find(|d| d["state"] == "delivered" && execution.is_none_or(|id| names(d, id)))
        })
        .await
    }

    /// The sentinel (see the module's doc): a plain execution of `session`
    /// reported failed, waited for until its continuation is delivered;
    /// then every continuation of the session, oldest first.
    async fn after_a_sentinel(&self, session: Uuid) -> Vec<Value> {
        let sentinel = Uuid::new_v4();
        let text = json!({"text": format!("started execution {sentinel}")});
        let linked = self
            .post(&format!("/v1/sessions/{session}/tool-results"), &text)
            .await;
        assert!(linked.ok(), "link the sentinel: {}", linked.body);
        let report = json!({"status": "failed", "result": "sentinel"});
        let request = self
            .http
            .put(self.url(&format!("/v1/executions/{sentinel}")))
            .bearer_auth(RUNTIME_TOKEN)
            .json(&report);
        let put = answer(request, "the sentinel's report").await;
        assert!(put.ok(), "report the sentinel: {} {}", put.status, put.body);
        let sentinel = sentinel.to_string();
        self.delivered(session, "continuation", Some(&sentinel))
            .await;
        self.deliveries(session, "continuation").await
    }

    /// The agent webhook's requests of event `kind` (continuation.v1,
    /// notice.v1) for `session`.
    fn agent_events(&self, kind: &str, session: Uuid) -> Vec<Value> {
        events(&self.agent, kind, session)
    }

    /// The operator channel's `operator_notice.v1` bodies for `session`.
    fn operator_events(&self, session: Uuid) -> Vec<Value> {
        events(&self.operator, "operator_notice.v1", session)
    }
}

impl Answer {
    fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

async fn answer(request: reqwest::RequestBuilder, what: &str) -> Answer {
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    Answer { status, body }
}

fn events(server: &RecordingServer, kind: &str, session: Uuid) -> Vec<Value> {
    let session = session.to_string();
    server
        .requests()
        .iter()
        .filter_map(RecordedRequest::json)
        .filter(|e| e["type"] == kind && e["data"]["session_id"] == session.as_str())
        .collect()
}

/// Whether `list` (a JSON array of ids) holds `id`.
fn contains(list: &Value, id: &str) -> bool {
    list.as_array()
        .is_some_and(|ids| ids.iter().any(|e| e == id))
}

/// Whether `delivery` is about the execution `id`.
fn names(delivery: &Value, id: &str) -> bool {
    contains(&delivery["execution_ids"], id)
}

/// The headers a sender chose (what a replay must send again), without
/// those of the connection.
fn sent_headers(request: &RecordedRequest) -> Vec<(String, String)> {
    const CONNECTION: [&str; 6] = [
        "host",
        "content-length",
        "connection",
        "accept-encoding",
        "accept",
        "user-agent",
    ];
    request
        .headers
        .iter()
        .filter(|(name, _)| !CONNECTION.contains(&name.as_str()))
        .cloned()
        .collect()
}

/// The task's last state, in either spelling, the way the tests compare
/// (`TASK_STATE_INPUT_REQUIRED` and `input-required` → `input-required`).
fn plain_state(status: &str) -> String {
    status
        .to_lowercase()
        .trim_start_matches("task_state_")
        .replace('_', "-")
}
