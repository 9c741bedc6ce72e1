//! No token or webhook secret is ever written to the log: a `serve` logging
//! at `debug` (its own crates and every library's) is given a runtime
//! token, an admin token, an agent token and a webhook secret, is asked
//! with a wrong token and the right ones, signs a webhook call, and stops;
//! none of the four values (nor the wrong token) is in anything it printed.
//!
//! Why the whole process and not a unit: a secret leaks through whatever
//! prints a configuration, a header or a request with `{:?}`, in this
//! crate or a library's debug output, which only the real binary at a
//! verbose level shows.

use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use uuid::Uuid;

const RUNTIME_TOKEN: &str = "runtime-token-4f1c9a7e02";
const ADMIN_TOKEN: &str = "admin-token-8b3d5e6f13";
const AGENT_TOKEN: &str = "agent-token-c72a90d4e5";
const WRONG_TOKEN: &str = "wrong-token-19e8f7a6b5";
/// A Standard Webhooks secret; its base64 key is what must not leak, the
/// `whsec_` prefix alone would prove nothing.
const WEBHOOK_KEY: &str = "c2VjcmV0LWtleS1mb3Itbm8tbG9nLXRlc3Q=";

#[tokio::test]
async fn no_token_or_webhook_secret_reaches_the_log() {
    let (_, hook) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook server");
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite:{}", dir.path().join("secrets.db").display());
    let mut options = ReplicaOptions::new(&database_url, &hook.url("/hook"), "secrets");
    options.token = Some(RUNTIME_TOKEN.into());
    options.extra_args = [
        "--token",
        RUNTIME_TOKEN,
        "--admin-token",
        ADMIN_TOKEN,
        "--agent-token",
        AGENT_TOKEN,
        "--webhook-secret",
        &format!("whsec_{WEBHOOK_KEY}"),
    ]
    .map(String::from)
    .to_vec();
    options.env = vec![("NOMOS_CONTINUE_LOG".into(), "debug".into())];
    let mut replica = Replica::start(&options).await;

    let client = reqwest::Client::new();
    let url = |path: &str| format!("http://{}{path}", replica.addr);
    for (token, path, expected) in [
        (WRONG_TOKEN, "/v1/sessions", 401),
        (WRONG_TOKEN, "/metrics", 401),
        (RUNTIME_TOKEN, "/v1/sessions", 200),
        (ADMIN_TOKEN, "/v1/policy", 200),
    ] {
        let answer = client
            .get(url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("request");
        assert_eq!(answer.status(), expected, "GET {path}");
    }
    let wrong_put = client
        .put(url("/v1/policy"))
        .bearer_auth(RUNTIME_TOKEN)
        .body("not a component")
        .send()
        .await
        .expect("request");
    assert_eq!(wrong_put.status(), 403, "the runtime token cannot deploy");

    // A delivery: the agent token and the signature go out.
    replica
        .fail_in_open_window(Uuid::new_v4(), Uuid::new_v4(), "exit 1")
        .await;
    let calls = hook.wait_for_requests(1).await;
    assert_eq!(
        calls[0].header("authorization"),
        Some(format!("Bearer {AGENT_TOKEN}").as_str())
    );
    assert!(calls[0].header("webhook-signature").is_some());

    let status = replica.terminate().await;
    assert!(status.success(), "{status}");
    let log = format!("{}\n{}", replica.stdout(), replica.stderr());
    // The log is verbose enough to have shown them, had anything printed them.
    assert!(log.contains("DEBUG"), "not logging at debug:\n{log}");
    assert!(
        log.lines().count() > 20,
        "too little logged to judge:\n{log}"
    );
    for secret in [
        RUNTIME_TOKEN,
        ADMIN_TOKEN,
        AGENT_TOKEN,
        WRONG_TOKEN,
        WEBHOOK_KEY,
    ] {
        assert!(!log.contains(secret), "{secret} is in the log:\n{log}");
    }
}
