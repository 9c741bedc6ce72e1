//! The real API router served in-process on `127.0.0.1:0`, and a client
//! that returns every answer as status, content type and body, for the API
//! and OpenAPI tests.
//!
//! Why in-process rather than the binary: these tests probe every route
//! with malformed input and need to see the store and the policy runtime
//! behind the router; the binary is exercised end to end in `e2e.rs`.
//! The router is the one assembly's ([`Server`]), with the worker left
//! out: a worker behind it would act on what these tests set up (and take
//! the wake-ups they watch); the in-process system with its worker is
//! tested in the `delivery` binary.

use std::sync::{Arc, OnceLock};

use nomos_continue::clock::{Clock, SystemClock};
use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue::signing::PublicKey;
use nomos_continue::store::{Database, Store};
use nomos_continue::{Running, ServeConfig, Server};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The built-in policy, compiled once per test process (compiling per test
/// in a debug build is slow).
pub fn policy() -> Arc<PolicyRuntime> {
    static POLICY: OnceLock<Arc<PolicyRuntime>> = OnceLock::new();
    POLICY
        .get_or_init(|| {
            Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy loads"))
        })
        .clone()
}

/// One answer of the API.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body as text.
    pub text: String,
    /// The `Retry-After` header, if any.
    pub retry_after: Option<String>,
    /// Every response header.
    pub headers: reqwest::header::HeaderMap,
}

impl Answer {
    /// A response header as text, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl Answer {
    /// The body as JSON; panics (naming the body) when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): status {} {:?}", self.status, self.text))
    }

    /// Asserts a JSON error: this status, a JSON content type and a
    /// non-empty `"error"` string. Returns the body.
    /// Asserts an RFC 9457 problem document with `status`: its media
    /// type, a `urn:nomos-continue:problem:` type, the status repeated, a
    /// detail and a request id. Answers the body.
    pub fn expect_error(&self, status: u16) -> serde_json::Value {
        assert_eq!(self.status, status, "body: {}", self.text);
        assert_eq!(
            self.content_type.as_deref(),
            Some("application/problem+json"),
            "content type for {}",
            self.text
        );
        let body = self.json();
        assert!(
            body["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("urn:nomos-continue:problem:")),
            "no problem type: {body}"
        );
        assert_eq!(body["status"], status, "{body}");
        assert!(
            body["detail"].as_str().is_some_and(|e| !e.is_empty()),
            "no detail: {body}"
        );
        assert!(
            body["request_id"].as_str().is_some_and(|e| !e.is_empty()),
            "no request id: {body}"
        );
        body
    }

    /// The problem's type name (the URN's last part), after
    /// [`Self::expect_error`].
    pub fn problem(&self, status: u16) -> String {
        let body = self.expect_error(status);
        let kind = body["type"].as_str().unwrap_or_default();
        kind.rsplit(':').next().unwrap_or_default().to_owned()
    }
}

/// The router on a loopback port, over `store`.
pub struct ServedApi {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The store behind the router.
    pub store: Store,
    /// Notified by the routes that make work ready (`PUT /v1/executions/{id}`,
    /// `POST /v1/sessions/{id}/tool-results`).
    pub wake: Arc<Notify>,
    client: reqwest::Client,
    token: Option<String>,
    admin: Option<String>,
    shutdown: CancellationToken,
    /// The system behind the router; stopped when this is dropped.
    _running: Running,
}

/// A configuration with these tokens and the defaults.
fn tokens(token: Option<&str>, admin: Option<&str>) -> ServeConfig {
    ServeConfig::default()
        .with_token(token.map(str::to_owned))
        .with_admin_token(admin.map(str::to_owned))
}

impl ServedApi {
    /// Serves the router with the built-in policy and the system clock;
    /// `token`, when set, is required on every route but `/healthz`.
    pub async fn start(store: Store, token: Option<&str>) -> Self {
        Self::start_with_wake(store, token, Arc::new(Notify::new())).await
    }

    /// Like [`ServedApi::start`], with the router notifying `wake` (a
    /// worker's [`waker`](nomos_continue::worker::Worker::waker), for tests
    /// of what wakes the worker).
    pub async fn start_with_wake(store: Store, token: Option<&str>, wake: Arc<Notify>) -> Self {
        let clock = Arc::new(SystemClock);
        Self::start_full(store, policy(), tokens(token, None), wake, None, clock).await
    }

    /// With the runtime's token and the admin token (see `api::Auth`), and
    /// a policy runtime of its own: these tests swap policies, and a swap in
    /// the shared runtime would change what the other tests run.
    pub async fn start_scoped(store: Store, token: Option<&str>, admin: Option<&str>) -> Self {
        let own = Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy loads"));
        Self::start_full(
            store,
            own,
            tokens(token, admin),
            Arc::new(Notify::new()),
            None,
            Arc::new(SystemClock),
        )
        .await
    }

    /// Like [`ServedApi::start_scoped`] with an admin token only, as
    /// `serve --policy-verify-key` runs: every revision must be signed by
    /// `key`.
    pub async fn start_verified(store: Store, admin: &str, key: PublicKey) -> Self {
        let own = Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy loads"));
        let wake = Arc::new(Notify::new());
        let clock = Arc::new(SystemClock);
        Self::start_full(
            store,
            own,
            tokens(None, Some(admin)),
            wake,
            Some(key),
            clock,
        )
        .await
    }

    /// Over `config` (its tokens, limits and the like), with the built-in
    /// policy in a runtime of its own; [`ServedApi::send`] sends its
    /// runtime token.
    pub async fn start_configured(store: Store, config: ServeConfig) -> Self {
        Self::start_clocked(store, config, Arc::new(SystemClock)).await
    }

    /// Like [`ServedApi::start_configured`], acting on `clock` (a
    /// `ManualClock` moves time for a test without waiting).
    pub async fn start_clocked(store: Store, config: ServeConfig, clock: Arc<dyn Clock>) -> Self {
        let own = Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy loads"));
        let wake = Arc::new(Notify::new());
        Self::start_full(store, own, config, wake, None, clock).await
    }

    async fn start_full(
        store: Store,
        policy: Arc<PolicyRuntime>,
        mut config: ServeConfig,
        wake: Arc<Notify>,
        verify_key: Option<PublicKey>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        // The one assembly, as `serve` runs it, without the worker: these
        // tests watch the wake-ups and the rows a worker would act on.
        let keys = tempfile::tempdir().expect("a folder for the verify key");
        let (token, admin) = (config.token.clone(), config.admin_token.clone());
        if let Some(key) = verify_key {
            let path = keys.path().join("verify.pub");
            std::fs::write(&path, key.to_file_text()).expect("write the verify key");
            config.policy_verify_keys = vec![path];
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let shutdown = CancellationToken::new();
        let running = Server::new(config, Database::over(store.clone()))
            .with_policy(policy)
            .with_clock(clock)
            .with_waker(wake.clone())
            .without_worker()
            .start(listener, shutdown.clone())
            .await
            .expect("the API starts");
        ServedApi {
            base: format!("http://{}", running.addr().expect("served over HTTP")),
            store,
            wake,
            client: reqwest::Client::new(),
            token,
            admin,
            shutdown,
            _running: running,
        }
    }

    /// Sends a request with the admin token (if any).
    pub async fn send_admin(&self, method: &str, path: &str, body: impl Into<Vec<u8>>) -> Answer {
        let token = self.admin.clone();
        self.send_with(method, path, body, token.as_deref()).await
    }

    /// Sends a request with the configured token (if any).
    pub async fn send(&self, method: &str, path: &str, body: impl Into<Vec<u8>>) -> Answer {
        let token = self.token.clone();
        self.send_with(method, path, body, token.as_deref()).await
    }

    /// Sends a request with this bearer token (or none).
    pub async fn send_with(
        &self,
        method: &str,
        path: &str,
        body: impl Into<Vec<u8>>,
        token: Option<&str>,
    ) -> Answer {
        self.send_headers(method, path, body, token, &[]).await
    }

    /// `PUT /v1/policy` with the admin token and, if given, the signature
    /// line in its header (`Nomos-Policy-Signature`).
    pub async fn upload_policy(&self, wasm: &[u8], signature: Option<&str>) -> Answer {
        let token = self.admin.clone();
        let headers: Vec<(&str, &str)> = signature
            .map(|s| ("Nomos-Policy-Signature", s))
            .into_iter()
            .collect();
        self.send_headers("PUT", "/v1/policy", wasm, token.as_deref(), &headers)
            .await
    }

    /// Sends a request with this bearer token (or none) and these headers.
    pub async fn send_headers(
        &self,
        method: &str,
        path: &str,
        body: impl Into<Vec<u8>>,
        token: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .body(body.into());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let headers = response.headers().clone();
        let text = response.text().await.expect("response body");
        Answer {
            status,
            content_type,
            text,
            retry_after,
            headers,
        }
    }

    /// Sends a JSON body.
    pub async fn json(&self, method: &str, path: &str, body: &serde_json::Value) -> Answer {
        self.send(method, path, body.to_string()).await
    }
}

impl Drop for ServedApi {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
