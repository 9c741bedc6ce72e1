//! The wire contract beyond the routes' happy paths: idempotent writes
//! (`Idempotency-Key`), request ids, problem documents that keep internal
//! text off the wire, 500 for what retrying cannot mend, and an outage
//! answered at once with 503 while `/healthz` stays up and `/readyz` says
//! why it is not ready.

use std::time::{Duration, Instant};

use nomos_continue::store::{NoticeAbout, Store};
use nomos_continue_tests::api::ServedApi;
use nomos_continue_tests::cut::CutProxy;
use nomos_continue_tests::wait::until_true;
use serde_json::json;
use uuid::Uuid;

use super::sqlite_api;

fn turn_path(session: Uuid) -> String {
    format!("/v1/sessions/{session}/turns")
}

async fn send_turn(
    api: &ServedApi,
    session: Uuid,
    body: &str,
    key: Option<&str>,
) -> nomos_continue_tests::api::Answer {
    let headers: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
    api.send_headers("POST", &turn_path(session), body, None, &headers)
        .await
}

#[tokio::test]
async fn a_turn_sent_again_with_its_key_is_recorded_once() {
    let (api, _dir) = sqlite_api(None).await;
    let session = Uuid::new_v4();
    let body = r#"{"role": "user", "content": "create container 101"}"#;

    let first = send_turn(&api, session, body, Some("turn-1")).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(first.header("idempotent-replayed").is_none());
    let again = send_turn(&api, session, body, Some("turn-1")).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json(), "the first answer, again");
    assert_eq!(api.store.turns(session).await.expect("turns").len(), 1);

    // The same key with another body, or for another session, is refused.
    let other = r#"{"role": "user", "content": "delete container 101"}"#;
    let reused = send_turn(&api, session, other, Some("turn-1")).await;
    assert_eq!(reused.problem(422), "idempotency-key-reused");
    let elsewhere = send_turn(&api, Uuid::new_v4(), body, Some("turn-1")).await;
    assert_eq!(elsewhere.problem(422), "idempotency-key-reused");

    // Without a key the same words are two turns; a bad key is a 400.
    for _ in 0..2 {
        assert_eq!(send_turn(&api, session, body, None).await.status, 200);
    }
    assert_eq!(api.store.turns(session).await.expect("turns").len(), 3);
    let long = "k".repeat(256);
    for bad in [long.as_str(), "with space"] {
        let answer = send_turn(&api, session, body, Some(bad)).await;
        assert_eq!(answer.problem(400), "bad-request", "{bad:?}");
    }
    // A request that failed keeps no answer: its retry acts.
    let empty = r#"{"role": "user", "content": " "}"#;
    assert_eq!(
        send_turn(&api, session, empty, Some("turn-2")).await.status,
        400
    );
    let fixed = send_turn(&api, session, body, Some("turn-2")).await;
    assert_eq!(fixed.status, 200, "{}", fixed.text);
    assert!(fixed.header("idempotent-replayed").is_none());
}

/// A failed notice delivery, as the worker leaves one after its budget.
async fn failed_delivery(store: &Store) -> Uuid {
    let session = Uuid::new_v4();
    let executions = [Uuid::new_v4()];
    let about = NoticeAbout {
        session_id: session,
        execution_ids: &executions,
        policy_revision: "test",
    };
    let now = chrono::Utc::now();
    assert!(store
        .record_notice(about, "notice-key", "dropped", now)
        .await
        .expect("notice"));
    let id = store.deliveries_for_session(session).await.expect("ledger")[0].id;
    store
        .execute_raw(&format!(
            "UPDATE nomos_deliveries SET state = 'failed', attempts = 5, \
             last_error = 'HTTP 500' WHERE id = '{id}'"
        ))
        .await
        .expect("mark it failed");
    id
}

#[tokio::test]
async fn a_retry_sent_again_with_its_key_answers_the_first_answer() {
    let (api, _dir) = sqlite_api(None).await;
    let id = failed_delivery(&api.store).await;
    let path = format!("/v1/deliveries/{id}/retry");
    let read = api.send("GET", &format!("/v1/deliveries/{id}"), "").await;
    assert_eq!(read.status, 200, "{}", read.text);
    assert_eq!(read.json()["state"], "failed");
    assert_eq!(read.json()["failed_attempts"], 5);
    assert_eq!(read.json()["last_error"], "HTTP 500");

    let key = [("Idempotency-Key", "retry-1")];
    let first = api.send_headers("POST", &path, "", None, &key).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.json()["delivery"]["state"], "pending");
    let again = api.send_headers("POST", &path, "", None, &key).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    // Without the key the second retry is what it is: the delivery is
    // pending, not failed.
    assert_eq!(api.send("POST", &path, "").await.problem(409), "conflict");
    let unknown = format!("/v1/deliveries/{}", Uuid::new_v4());
    assert_eq!(
        api.send("GET", &unknown, "").await.problem(404),
        "not-found"
    );
}

#[tokio::test]
async fn an_execution_reads_back_with_its_session() {
    let (api, _dir) = sqlite_api(None).await;
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    let path = format!("/v1/executions/{execution}");
    assert_eq!(api.send("GET", &path, "").await.problem(404), "not-found");
    let text = json!({ "text": format!("started execution {execution}") });
    let linked = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/tool-results"),
            &text,
        )
        .await;
    assert_eq!(linked.status, 200, "{}", linked.text);
    let read = api.send("GET", &path, "").await.json();
    assert_eq!(read["session_id"], session.to_string());
    assert!(read["execution"].is_null(), "linked, not reported: {read}");
    api.json("PUT", &path, &json!({"status": "failed", "result": "boom"}))
        .await;
    let read = api.send("GET", &path, "").await.json();
    assert_eq!(read["execution"]["status"], "failed");
    assert_eq!(read["execution"]["terminal"], true);
}

#[tokio::test]
async fn every_answer_names_its_request() {
    let (api, _dir) = sqlite_api(None).await;
    let ok = api.send("GET", "/v1/policy", "").await;
    let id = ok.header("x-request-id").expect("a request id");
    assert!(Uuid::parse_str(id).is_ok(), "{id}");
    let error = api
        .send_headers(
            "GET",
            "/v1/sessions/nope",
            "",
            None,
            &[("x-request-id", "rt-42.a")],
        )
        .await;
    assert_eq!(
        error.header("x-request-id"),
        Some("rt-42.a"),
        "the caller's id is kept"
    );
    assert_eq!(error.expect_error(400)["request_id"], "rt-42.a");
    // An id that is not a short token is replaced.
    let odd = api
        .send_headers("GET", "/healthz", "", None, &[("x-request-id", "a b")])
        .await;
    assert_ne!(odd.header("x-request-id"), Some("a b"));
}

/// A fault retrying cannot mend is a 500, not a 503, and its text (here
/// the database's, naming a table) stays in the log.
#[tokio::test]
async fn a_lasting_fault_is_500_and_keeps_its_text_off_the_wire() {
    let (api, _dir) = sqlite_api(None).await;
    api.store
        .execute_raw("DROP TABLE nomos_idempotency_keys")
        .await
        .expect("drop the table");
    let body = r#"{"role": "user", "content": "hello"}"#;
    let answer = send_turn(&api, Uuid::new_v4(), body, Some("k")).await;
    assert_eq!(answer.problem(500), "internal");
    assert!(answer.retry_after.is_none(), "retrying cannot help");
    assert!(
        !answer.text.contains("nomos_idempotency_keys") && !answer.text.contains("no such table"),
        "internal text on the wire: {}",
        answer.text
    );
}

/// With the database cut, a request answers 503 with `Retry-After` at once
/// (not after the pool's 30 s), `/healthz` stays 200 and `/readyz` is 503;
/// once mended, both recover.
#[tokio::test]
async fn an_outage_answers_503_at_once_and_readiness_follows_it() {
    let Some(db) = nomos_continue_tests::db::fresh_postgres_db().await else {
        return;
    };
    let url = reqwest::Url::parse(&db.url).expect("the URL");
    let target = format!(
        "{}:{}",
        url.host_str().expect("host"),
        url.port().unwrap_or(5432)
    );
    let target = tokio::net::lookup_host(&target)
        .await
        .expect("resolve")
        .next()
        .expect("an address");
    let proxy = CutProxy::start(target).await;
    let mut proxied = url.clone();
    proxied
        .set_port(Some(proxy.addr().port()))
        .expect("set the port");
    let store = Store::connect(proxied.as_str())
        .await
        .expect("connect through the proxy");
    let api = ServedApi::start(store, None).await;
    let report = json!({"status": "running"});
    let path = format!("/v1/executions/{}", Uuid::new_v4());
    assert_eq!(api.json("PUT", &path, &report).await.status, 200);
    assert_eq!(api.send("GET", "/readyz", "").await.status, 200);

    proxy.cut();
    let started = Instant::now();
    let answer = api.json("PUT", &path, &report).await;
    let took = started.elapsed();
    assert_eq!(answer.problem(503), "storage-unavailable");
    assert_eq!(answer.retry_after.as_deref(), Some("1"));
    // A bound far under the 30 s a pool waits by default: the behaviour,
    // not a speed target.
    assert!(took < Duration::from_secs(10), "answered after {took:?}");
    assert_eq!(api.send("GET", "/healthz", "").await.status, 200);
    let ready = api.send("GET", "/readyz", "").await;
    assert_eq!(ready.status, 503, "{}", ready.text);
    assert_eq!(ready.json()["database"], false);
    assert!(ready.retry_after.is_some());

    proxy.mend().await;
    until_true("ready again", async || {
        api.send("GET", "/readyz", "").await.status == 200
    })
    .await;
    assert_eq!(api.json("PUT", &path, &report).await.status, 200);
    db.cleanup().await;
}
