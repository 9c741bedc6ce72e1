//! Webhooks a receiver can trust, checked as a receiver checks them: real
//! deliveries from the real binary, captured on loopback, verified by the
//! `standardwebhooks` Python package (`tests/python/verify_webhooks.py`),
//! not by this crate's own code.

use std::sync::Arc;

use chrono::{Duration, Utc};
use nomos_continue::agent::signature::signature_header;
use nomos_continue::agent::{
    Agent, ContinuationEvent, Notice, NoticeEvent, WebhookAgent, WebhookConfig, WebhookSecret,
};
use nomos_continue::clock::ManualClock;
use nomos_continue_tests::http::{RecordedRequest, RecordingServer, Script};
use nomos_continue_tests::python;
use nomos_continue_tests::replica::{Refusal, Replica, ReplicaOptions};
use nomos_continue_tests::wait::PATIENCE;
use serde_json::{json, Value};
use uuid::Uuid;

/// Three secrets (random 32-byte keys): the first two sign, the third is
/// one the receiver might hold by mistake.
const OLD: &str = "whsec_MQWoEeNzSSQ/F3iIMAL6LmACwOpENY7xQHKvSLhFaSE=";
const NEW: &str = "whsec_ijZjby+WRpSMBTvndVwjWNvC/3Cud8Ipx4BB+9Y+gGU=";
const OTHER: &str = "whsec_6UONJlClMwbL1kCZJIKV0jGsJWvJQCzL09vAduQxr7M=";

/// One check for `verify_webhooks.py`: `request` as received, against `secret`.
fn check(secret: &str, request: &RecordedRequest, body: &str) -> Value {
    let headers: serde_json::Map<String, Value> = request
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), Value::from(value.as_str())))
        .collect();
    json!({"secret": secret, "headers": headers, "body": body})
}

/// The package's verdict on each check: `Ok(payload)` or `Err(reason)`.
fn verify(python: &std::path::Path, checks: Vec<Value>) -> Vec<Result<Value, String>> {
    let input = json!({ "verify": checks }).to_string();
    let output = python::run(python, "verify_webhooks.py", input.as_bytes());
    let answer: Value = serde_json::from_slice(&output).expect("the script answers JSON");
    answer["verify"]
        .as_array()
        .expect("a verdict per check")
        .iter()
        .map(|verdict| match verdict["ok"].as_bool() {
            Some(true) => Ok(verdict["payload"].clone()),
            _ => Err(verdict["error"].as_str().unwrap_or_default().to_owned()),
        })
        .collect()
}

fn body_text(request: &RecordedRequest) -> String {
    String::from_utf8(request.body.clone()).expect("a webhook body is UTF-8")
}

/// The seed's failure and a finish outside any window, through `serve`
/// signing with two secrets (one from the flag, one from a file, as while
/// a secret is rotated): the continuation and the notice each verify with
/// either secret and not with a third; a body changed by one byte does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_deliveries_verify_with_the_standardwebhooks_package() {
    let Some(python) = python::python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite:{}", dir.path().join("hooks.db").display());
    let secret_file = dir.path().join("webhook-secrets");
    std::fs::write(&secret_file, format!("# rotated in\n{NEW}\n")).expect("write secrets");
    let (_, hook) = RecordingServer::start(Script::statuses([]))
        .await
        .expect("webhook");
    let mut options = ReplicaOptions::new(&database_url, &hook.url("/hook"), "hooks-1");
    options.extra_args = vec![
        "--webhook-secret".into(),
        OLD.into(),
        "--webhook-secret-file".into(),
        secret_file.display().to_string(),
    ];
    let replica = Replica::start(&options).await;

    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    replica
        .fail_in_open_window(session, execution, "ssh: connection refused")
        .await;
    let (unapproved, late) = (Uuid::new_v4(), Uuid::new_v4());
    replica.link(unapproved, &[late]).await;
    replica.put_status(late, "completed", "done").await;
    let requests = tokio::time::timeout(PATIENCE, hook.wait_for_requests(2))
        .await
        .unwrap_or_else(|_| panic!("two deliveries; serve said:\n{}", replica.stderr()));

    let continuation = requests
        .iter()
        .find(|r| serde_json::from_slice::<ContinuationEvent>(&r.body).is_ok())
        .expect("a continuation.v1");
    let notice = requests
        .iter()
        .find(|r| serde_json::from_slice::<NoticeEvent>(&r.body).is_ok())
        .expect("a notice.v1");
    let mut checks = Vec::new();
    for request in [continuation, notice] {
        let body = body_text(request);
        let signatures = request.header("webhook-signature").expect("signed");
        assert_eq!(signatures.split(' ').count(), 2, "{signatures}");
        assert_eq!(
            request.header("webhook-id"),
            request.header("idempotency-key")
        );
        let mut tampered = body.clone().into_bytes();
        let last = tampered.len() - 2; // inside the closing `}}`
        tampered[last] = b' ';
        let tampered = String::from_utf8(tampered).expect("still UTF-8");
        checks.extend([
            check(OLD, request, &body),
            check(NEW, request, &body),
            check(OTHER, request, &body),
            check(OLD, request, &tampered),
        ]);
    }
    let verdicts = verify(&python, checks);
    for (i, request) in [continuation, notice].into_iter().enumerate() {
        let [old, new, other, tampered] = &verdicts[i * 4..i * 4 + 4] else {
            panic!("four verdicts per delivery: {verdicts:?}");
        };
        let sent: Value = request.json().expect("JSON");
        assert_eq!(old.as_ref().ok(), Some(&sent), "the old secret: {old:?}");
        assert_eq!(new.as_ref().ok(), Some(&sent), "the new secret: {new:?}");
        assert_eq!(
            other.as_ref().err().map(String::as_str),
            Some("No matching signature found")
        );
        assert_eq!(
            tampered.as_ref().err().map(String::as_str),
            Some("No matching signature found")
        );
    }
}

/// A delivery stamped six minutes ago (the clock injected, not waited
/// for) fails the package's five-minute tolerance; the same agent's
/// delivery stamped now passes. The body's `timestamp` is the header's.
#[tokio::test]
async fn a_delivery_signed_six_minutes_ago_is_refused_as_too_old() {
    let Some(python) = python::python() else {
        return;
    };
    let (_, hook) = RecordingServer::start(Script::statuses([]))
        .await
        .expect("webhook");
    let clock = Arc::new(ManualClock::new(Utc::now() - Duration::minutes(6)));
    let mut config = WebhookConfig::new(hook.url("/hook"));
    config.secrets = vec![WebhookSecret::parse(OLD).expect("a valid secret")];
    let agent = WebhookAgent::new(config)
        .expect("config")
        .with_clock(clock.clone());
    let notice = |key: &str| Notice {
        session_id: Uuid::new_v4(),
        idempotency_key: key.into(),
        message: "finished after the window closed".into(),
        ..Notice::default()
    };
    agent.notify(&notice("notice-old")).await.expect("accepted");
    clock.set(Utc::now());
    agent.notify(&notice("notice-now")).await.expect("accepted");

    let requests = hook.requests();
    let checks = requests
        .iter()
        .map(|r| check(OLD, r, &body_text(r)))
        .collect();
    let verdicts = verify(&python, checks);
    assert_eq!(
        verdicts[0].as_ref().err().map(String::as_str),
        Some("Message timestamp too old")
    );
    assert!(verdicts[1].is_ok(), "{:?}", verdicts[1]);
    for request in &requests {
        let event: NoticeEvent = serde_json::from_slice(&request.body).expect("a notice.v1");
        assert_eq!(
            request.header("webhook-timestamp"),
            Some(event.timestamp.timestamp().to_string().as_str())
        );
    }
}

/// The signature of an id, a timestamp and a body, as the package computes
/// it and as ours does, one secret at a time and both at once.
#[test]
fn signatures_match_the_reference_implementation() {
    let Some(python) = python::python() else {
        return;
    };
    let (id, timestamp) = ("cont-5e1f0c7d2a9b4e36", 1_800_000_123_i64);
    let body = r#"{"type":"notice.v1","data":{"notice":"é ✓"}}"#;
    let requests: Vec<Value> = [OLD, NEW]
        .map(|secret| json!({"secret": secret, "id": id, "timestamp": timestamp, "body": body}))
        .into();
    let input = json!({ "sign": requests });
    let output = python::run(&python, "verify_webhooks.py", input.to_string().as_bytes());
    let answer: Value = serde_json::from_slice(&output).expect("JSON");
    let theirs: Vec<&str> = answer["sign"]
        .as_array()
        .expect("signatures")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let secret = |text: &str| WebhookSecret::parse(text).expect("a valid secret");
    let ours =
        |secrets: &[WebhookSecret]| signature_header(secrets, id, timestamp, body.as_bytes());
    assert_eq!(ours(&[secret(OLD)]).as_deref(), Some(theirs[0]));
    assert_eq!(ours(&[secret(NEW)]).as_deref(), Some(theirs[1]));
    assert_eq!(ours(&[secret(OLD), secret(NEW)]), Some(theirs.join(" ")));
}

/// A secret that is not one stops `serve` before it serves, saying which
/// setting is wrong and never echoing the value.
#[tokio::test]
async fn a_malformed_secret_stops_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite:{}", dir.path().join("refused.db").display());
    for (value, reason) in [
        ("hunter2-not-a-secret", "must start with whsec_"),
        ("whsec_c2hvcnQ=", "at least 24 bytes"),
    ] {
        let mut options = ReplicaOptions::new(&database_url, "http://127.0.0.1:9/hook", "refused");
        options.extra_args = vec!["--webhook-secret".into(), OLD.into()];
        options
            .extra_args
            .extend(["--webhook-secret".into(), value.into()]);
        let refusal = Refusal::expect(&options).await;
        assert!(!refusal.status.success());
        let said = &refusal.stderr;
        assert!(said.contains("--webhook-secret, value 2"), "{said}");
        assert!(said.contains(reason), "{said}");
        assert!(!said.contains(value), "the secret was echoed: {said}");
    }
}
