//! The agent adapters against real HTTP servers on loopback: the webhook
//! (body, headers, failure classification; every status against
//! `docs/webhooks.md` in `agent_adapters/answers.rs`) and `chatWith`
//! against a fake server that speaks the OpenAI chat-completions protocol
//! (in `agent_adapters/chat.rs`).

mod answers;
mod chat;

use std::sync::Arc;
use std::time::Duration;

use chrono::DateTime;
use nomos_continue::agent::signature::signature_header;
use nomos_continue::agent::{
    AdapterConfigError, Agent, AgentError, Continuation, ExecutionReport, Notice, WebhookAgent,
    WebhookConfig, WebhookSecret,
};
use nomos_continue::clock::ManualClock;
use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use serde_json::json;
use uuid::Uuid;

const SESSION: Uuid = Uuid::from_u128(0x0c0ffee0_0000_4000_8000_000000000001);
const EXEC_FAILED: Uuid = Uuid::from_u128(0x3f2504e0_4f89_11d3_9a0c_0305e82c3301);
const EXEC_DONE: Uuid = Uuid::from_u128(0x3f2504e0_4f89_11d3_9a0c_0305e82c3302);

fn continuation(key: &str) -> Continuation {
    Continuation {
        session_id: SESSION,
        idempotency_key: key.to_string(),
        executions: vec![
            ExecutionReport {
                id: EXEC_FAILED,
                status: "FAILED".to_string(),
                outcome: "failed".to_string(),
                result: "ssh: connection refused".to_string(),
            },
            ExecutionReport {
                id: EXEC_DONE,
                status: "done".to_string(),
                outcome: "completed".to_string(),
                result: "container 101 created".to_string(),
            },
        ],
        note: format!("execution {EXEC_FAILED} failed: ssh: connection refused"),
        soul: "You will be re-invoked when async steps finish.".to_string(),
        traceparent: None,
        tracestate: None,
    }
}

/// A `deliver` span's context, as the worker puts it on a call.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn notice(key: &str) -> Notice {
    Notice {
        session_id: SESSION,
        idempotency_key: key.to_string(),
        message: "execution finished after the assent window closed".to_string(),
        traceparent: None,
        tracestate: None,
    }
}

async fn webhook(script: Script) -> (RecordingServer, WebhookAgent) {
    let (_, server) = RecordingServer::start(script).await.expect("bind loopback");
    let agent = WebhookAgent::new(WebhookConfig::new(server.url("/hook"))).expect("config");
    (server, agent)
}

/// A failure the worker retries: an error answer (`Retryable`) or a
/// shortage (`Unavailable`); `webhook_shortages_are_told_from_errors`
/// pins which is which.
fn retryable(result: Result<(), AgentError>) -> String {
    match result {
        Err(e @ (AgentError::Retryable(_) | AgentError::Unavailable { .. })) => {
            e.message().to_string()
        }
        other => panic!("expected a retryable failure, got {other:?}"),
    }
}

fn permanent(result: Result<(), AgentError>) -> String {
    match result {
        Err(AgentError::Permanent(text)) => text,
        other => panic!("expected Permanent, got {other:?}"),
    }
}

/// A random 32-byte key.
const SECRET: &str = "whsec_MQWoEeNzSSQ/F3iIMAL6LmACwOpENY7xQHKvSLhFaSE=";

#[tokio::test]
async fn webhook_continuation_body_and_headers_are_exact() {
    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("bind loopback");
    let mut config = WebhookConfig::new(server.url("/hook"));
    config.token = Some("s3cret".to_string());
    config.secrets = vec![WebhookSecret::parse(SECRET).expect("a valid secret")];
    // Half a second past the minute: the timestamp is whole seconds.
    let sent_at = DateTime::from_timestamp(1_800_000_000, 500_000_000).expect("in range");
    let agent = WebhookAgent::new(config)
        .expect("config")
        .with_clock(Arc::new(ManualClock::new(sent_at)));

    agent
        .continue_session(&continuation("key-1"))
        .await
        .expect("delivered");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/hook");
    assert_eq!(request.header("idempotency-key"), Some("key-1"));
    assert_eq!(request.header("webhook-id"), Some("key-1"));
    assert_eq!(request.header("webhook-timestamp"), Some("1800000000"));
    assert_eq!(request.header("authorization"), Some("Bearer s3cret"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let expected = json!({
        "type": "continuation.v1",
        "timestamp": "2027-01-15T08:00:00Z",
        "data": {
            "session_id": SESSION.to_string(),
            "idempotency_key": "key-1",
            "executions": [
                {"id": EXEC_FAILED.to_string(), "status": "FAILED", "outcome": "failed",
                 "result": "ssh: connection refused"},
                {"id": EXEC_DONE.to_string(), "status": "done", "outcome": "completed",
                 "result": "container 101 created"},
            ],
            "note": format!("execution {EXEC_FAILED} failed: ssh: connection refused"),
            "soul": "You will be re-invoked when async steps finish.",
        },
    });
    assert_eq!(request.json(), Some(expected));
    // Signed over the bytes as sent (tests/tests/service/webhooks.rs checks
    // the signing itself against the reference implementation).
    let secrets = [WebhookSecret::parse(SECRET).expect("a valid secret")];
    assert_eq!(
        request.header("webhook-signature").map(str::to_owned),
        signature_header(&secrets, "key-1", 1_800_000_000, &request.body)
    );
}

#[tokio::test]
async fn webhook_notice_body_without_token_and_to_the_notice_url() {
    let (server, agent) = webhook(Script::always(Reply::status(204))).await;
    agent.notify(&notice("n-1")).await.expect("delivered");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/hook");
    assert_eq!(request.header("idempotency-key"), Some("n-1"));
    assert_eq!(request.header("webhook-id"), Some("n-1"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.header("webhook-signature"),
        None,
        "no secret, no signature"
    );
    let body = request.json().expect("JSON");
    assert_eq!(body["type"], "notice.v1");
    assert_eq!(
        body["data"],
        json!({
            "session_id": SESSION.to_string(),
            "idempotency_key": "n-1",
            "notice": "execution finished after the assent window closed",
        })
    );
    let stamped = body["timestamp"].as_str().expect("a timestamp");
    let stamped = DateTime::parse_from_rfc3339(stamped).expect("RFC 3339");
    assert_eq!(
        request.header("webhook-timestamp"),
        Some(stamped.timestamp().to_string().as_str())
    );

    let mut config = WebhookConfig::new(server.url("/hook"));
    config.notice_url = Some(server.url("/notices"));
    let agent = WebhookAgent::new(config).expect("config");
    agent.notify(&notice("n-2")).await.expect("delivered");
    agent
        .continue_session(&continuation("c-2"))
        .await
        .expect("delivered");
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/hook", "/notices", "/hook"]);
}

/// The webhook carries the trace context of the continuation or notice as
/// W3C headers, and sends none when it has none.
#[tokio::test]
async fn webhook_carries_the_trace_context_it_is_given() {
    let (server, agent) = webhook(Script::always(Reply::status(200))).await;
    let mut traced = continuation("t-1");
    traced.traceparent = Some(TRACEPARENT.to_string());
    traced.tracestate = Some("nomos=1".to_string());
    agent.continue_session(&traced).await.expect("delivered");
    let mut traced_notice = notice("t-2");
    traced_notice.traceparent = Some(TRACEPARENT.to_string());
    agent.notify(&traced_notice).await.expect("delivered");
    agent
        .continue_session(&continuation("t-3"))
        .await
        .expect("delivered");

    let requests = server.requests();
    let headers: Vec<(Option<&str>, Option<&str>)> = requests
        .iter()
        .map(|r| (r.header("traceparent"), r.header("tracestate")))
        .collect();
    assert_eq!(
        headers,
        [
            (Some(TRACEPARENT), Some("nomos=1")),
            (Some(TRACEPARENT), None),
            (None, None)
        ]
    );
}

#[tokio::test]
async fn webhook_any_2xx_is_delivery() {
    let (server, agent) = webhook(Script::statuses([200, 201, 202, 204])).await;
    for _ in 0..4 {
        agent
            .continue_session(&continuation("k"))
            .await
            .expect("2xx is delivery");
    }
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn webhook_500_is_retryable_and_the_retry_carries_the_same_key() {
    let script = Script::queue([Reply::text(500, "database is down")], Reply::status(200));
    let (server, agent) = webhook(script).await;
    let text = retryable(agent.continue_session(&continuation("same")).await);
    assert!(text.contains("500"), "{text}");
    assert!(text.contains("database is down"), "{text}");
    agent
        .continue_session(&continuation("same"))
        .await
        .expect("second attempt delivered");
    let keys: Vec<Option<String>> = server
        .requests()
        .iter()
        .map(|r| r.header("idempotency-key").map(str::to_string))
        .collect();
    assert_eq!(keys, [Some("same".to_string()), Some("same".to_string())]);
}

#[tokio::test]
async fn webhook_408_429_and_5xx_are_retryable() {
    let (_server, agent) = webhook(Script::statuses([408, 429, 502, 503])).await;
    for code in ["408", "429", "502", "503"] {
        let text = retryable(agent.continue_session(&continuation("k")).await);
        assert!(text.contains(code), "{text}");
    }
}

/// Item 6 of the delivery issue: a 409 ("same key still in progress") is
/// retried, not permanent; 408/409/429/502/503/504 and transport failures
/// are shortages (they do not count as attempts the policy sees); a 500 is
/// an error answer; `Retry-After` (seconds or an HTTP date) is passed on.
#[tokio::test]
async fn webhook_shortages_are_told_from_errors() {
    let script = Script::queue(
        [
            Reply::status(409),
            Reply::status(429).with_header("retry-after", "7"),
            Reply::status(503).with_header("retry-after", "Fri, 31 Dec 1999 23:59:59 GMT"),
            Reply::status(500),
        ],
        Reply::status(200),
    );
    let (_server, agent) = webhook(script).await;
    let conflict = agent.continue_session(&continuation("k")).await;
    assert!(
        matches!(&conflict, Err(AgentError::Unavailable { retry_after: None, message }) if message.contains("409")),
        "{conflict:?}"
    );
    let throttled = agent.continue_session(&continuation("k")).await;
    assert_eq!(
        throttled.as_ref().err().and_then(AgentError::retry_after),
        Some(Duration::from_secs(7)),
        "{throttled:?}"
    );
    let past = agent.continue_session(&continuation("k")).await;
    assert_eq!(
        past.as_ref().err().and_then(AgentError::retry_after),
        Some(Duration::ZERO),
        "a date in the past means now: {past:?}"
    );
    let error = agent.continue_session(&continuation("k")).await;
    assert!(
        matches!(&error, Err(AgentError::Retryable(m)) if m.contains("500")),
        "{error:?}"
    );
    assert!(!error.as_ref().err().is_some_and(AgentError::is_shortage));
    assert!(conflict
        .err()
        .is_some_and(|e| e.is_shortage() && e.is_retryable()));
}

#[tokio::test]
async fn webhook_other_4xx_and_3xx_are_permanent() {
    let script = Script::queue(
        [
            Reply::json(404, &json!({"error": "no such session"})),
            Reply::status(400),
            Reply::status(401),
            Reply::status(302),
        ],
        Reply::status(200),
    );
    let (_server, agent) = webhook(script).await;
    let text = permanent(agent.continue_session(&continuation("k")).await);
    assert!(text.contains("404"), "{text}");
    assert!(text.contains("no such session"), "{text}");
    for code in ["400", "401", "302"] {
        let text = permanent(agent.notify(&notice("k")).await);
        assert!(text.contains(code), "{text}");
    }
}

#[tokio::test]
async fn webhook_error_snippet_is_bounded() {
    let (_server, agent) = webhook(Script::always(Reply::text(503, "x".repeat(100_000)))).await;
    let text = retryable(agent.continue_session(&continuation("k")).await);
    assert!(text.contains("truncated"), "{text}");
    assert!(text.len() < 512 + 200, "error text is {} bytes", text.len());
}

#[tokio::test]
async fn webhook_timeout_is_retryable() {
    let (_, server) = RecordingServer::start(Script::always(Reply::hang()))
        .await
        .expect("bind loopback");
    let mut config = WebhookConfig::new(server.url("/hook"));
    config.timeout = Duration::from_millis(200);
    let agent = WebhookAgent::new(config).expect("config");
    let text = retryable(agent.continue_session(&continuation("k")).await);
    assert!(text.contains("timed out"), "{text}");
    // The request did arrive: the receiver may have acted, hence the key.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn webhook_connection_refused_is_retryable() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    drop(listener);
    let agent =
        WebhookAgent::new(WebhookConfig::new(format!("http://{addr}/hook"))).expect("config");
    let text = retryable(agent.continue_session(&continuation("k")).await);
    assert!(text.contains("could not connect"), "{text}");
    retryable(agent.notify(&notice("k")).await);
}

#[test]
fn adapter_configuration_is_checked_up_front() {
    let bad_url = WebhookAgent::new(WebhookConfig::new("not a url"));
    assert!(matches!(bad_url, Err(AdapterConfigError::Url { .. })));
    let bad_scheme = WebhookAgent::new(WebhookConfig::new("ftp://h/x"));
    assert!(matches!(bad_scheme, Err(AdapterConfigError::Url { .. })));
    // TLS comes from rustls, so hosted endpoints work.
    assert!(WebhookAgent::new(WebhookConfig::new("https://h/x")).is_ok());
    let mut config = WebhookConfig::new("http://127.0.0.1:1/hook");
    config.token = Some("line\nbreak".to_string());
    assert_eq!(
        WebhookAgent::new(config).err(),
        Some(AdapterConfigError::Token)
    );
    let mut config = WebhookConfig::new("http://127.0.0.1:1/hook");
    config.token = Some("s3cret".to_string());
    config.secrets = vec![WebhookSecret::parse(SECRET).expect("a valid secret")];
    let shown = format!("{config:?} {:?}", WebhookAgent::new(config.clone()));
    let key = SECRET.trim_start_matches("whsec_");
    assert!(
        !shown.contains("s3cret") && !shown.contains(key),
        "a secret in Debug: {shown}"
    );
    let mut config = WebhookConfig::new("http://127.0.0.1:1/hook");
    config.timeout = Duration::ZERO;
    assert_eq!(
        WebhookAgent::new(config).err(),
        Some(AdapterConfigError::Timeout)
    );
}
