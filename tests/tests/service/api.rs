//! The HTTP API against the real router served on loopback with a fresh
//! SQLite store (and one smoke test on PostgreSQL): every route's happy
//! path, and every malformed request answered with a 4xx and a JSON
//! problem document, never a 500.

mod contract;
mod drops;
mod executions;
mod fuzz;
mod overview;
mod scopes;
mod session_push;
mod sessions;
mod shadow;
mod tasks;
mod tool_results;

use nomos_continue::api::MAX_POLICY_BYTES;
use nomos_continue::policy::BUILTIN_POLICY_WASM;
use nomos_continue_tests::api::ServedApi;
use serde_json::json;
use uuid::Uuid;

async fn sqlite_api(token: Option<&str>) -> (ServedApi, tempfile::TempDir) {
    let (store, dir) = nomos_continue_tests::db::fresh_sqlite().await;
    (ServedApi::start(store, token).await, dir)
}

/// Every route's happy path, in the order a runtime would call them.
async fn happy_path(api: &ServedApi) {
    let session = Uuid::new_v4();
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());

    let answer = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/approvals"),
            &json!({"decision": "approve", "route": "chat"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let window = &answer.json()["window"];
    assert_eq!(window["route"], "chat");
    assert_eq!(window["open"], true, "{window}");
    assert!(
        window.get("session_id").is_none(),
        "no store columns: {window}"
    );

    let text = format!("started: execution {a}\nand execution {b} is queued");
    let answer = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/tool-results"),
            &json!({ "text": text }),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["linked"], json!([a, b]));
    // Linking again is idempotent.
    let again = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/tool-results"),
            &json!({ "text": text }),
        )
        .await;
    assert_eq!(again.json()["linked"], json!([]));
    assert_eq!(again.json()["already_linked"], json!([a, b]));

    let answer = api
        .json(
            "PUT",
            &format!("/v1/executions/{a}"),
            &json!({"status": "failed", "result": "ssh: connection refused"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["execution"]["terminal"], true);
    assert_eq!(answer.json()["execution"]["status"], "failed");
    let running = api
        .json(
            "PUT",
            &format!("/v1/executions/{b}"),
            &json!({"status": "running"}),
        )
        .await;
    assert_eq!(running.json()["execution"]["terminal"], false);

    let answer = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/turns"),
            &json!({"role": "user", "content": "create container 101"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["turn"]["role"], "user");
    assert_eq!(api.store.turns(session).await.expect("turns").len(), 1);

    let answer = api
        .send("GET", &format!("/v1/sessions/{session}"), "")
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let summary = answer.json();
    assert_eq!(summary["window"]["route"], "chat");
    assert_eq!(summary["counts"]["links"], 2, "{summary}");
    assert_eq!(summary["counts"]["in_flight"], 2, "{summary}");
    let answer = api
        .send("GET", &format!("/v1/sessions/{session}/links"), "")
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let summary = answer.json();
    assert!(summary["next_cursor"].is_null(), "{summary}");
    let links = summary["items"].as_array().expect("links");
    assert_eq!(links.len(), 2);
    assert!(
        links
            .iter()
            .any(|l| l["execution_id"] == a.to_string() && l["execution_status"] == "failed"),
        "{summary}"
    );

    let answer = api.send("GET", "/v1/policy", "").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["revision"].as_str().map(str::len), Some(64));

    let answer = api.send("GET", "/metrics", "").await;
    assert_eq!(answer.status, 200);
    assert!(
        answer
            .content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("text/plain")),
        "{:?}",
        answer.content_type
    );
    for name in [
        "nomos_continue_decisions_total",
        "nomos_continue_policy_failures_total",
        "nomos_continue_pickup_latency_seconds_bucket",
        "nomos_continue_policy_active_revision",
        "nomos_continue_pending_links",
        "nomos_continue_backlog_oldest_age_seconds",
    ] {
        assert!(
            answer.text.contains(name),
            "{name} missing from /metrics:\n{}",
            answer.text
        );
    }
    // The failed execution above is finished and not settled (no worker).
    let backlog: Option<i64> = answer
        .text
        .lines()
        .find_map(|l| l.strip_prefix("nomos_continue_backlog_finished "))
        .and_then(|v| v.parse().ok());
    assert!(backlog.is_some_and(|n| n >= 1), "{}", answer.text);

    let answer = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/approvals"),
            &json!({"decision": "deny"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json(), json!({"window": null}));

    let answer = api.send("GET", "/healthz", "").await;
    assert_eq!(
        (answer.status, answer.json()),
        (200, json!({"status": "ok"}))
    );
}

#[tokio::test]
async fn every_route_answers_on_sqlite() {
    let (api, _dir) = sqlite_api(None).await;
    happy_path(&api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_on_postgres() {
    let Some(db) = nomos_continue_tests::db::fresh_postgres_db().await else {
        return;
    };
    let api = ServedApi::start(db.store.clone(), Some("pg-token")).await;
    happy_path(&api).await;
    drop(api);
    db.cleanup().await;
}

#[tokio::test]
async fn malformed_bodies_are_400_json() {
    let (api, _dir) = sqlite_api(None).await;
    let session = Uuid::new_v4();
    let tool = format!("/v1/sessions/{session}/tool-results");
    let approvals = format!("/v1/sessions/{session}/approvals");
    let turns = format!("/v1/sessions/{session}/turns");
    let execution = format!("/v1/executions/{}", Uuid::new_v4());
    let cases: Vec<(&str, &str, String)> = vec![
        ("POST", &tool, "{".into()),
        ("POST", &tool, "".into()),
        ("POST", &tool, "[]".into()),
        ("POST", &tool, r#"{"text": 5}"#.into()),
        ("POST", &tool, r#"{"text": "x", "extra": 1}"#.into()),
        ("POST", &tool, "\u{0}\u{ff}garbage".into()),
        ("POST", &approvals, r#"{"decision": "maybe"}"#.into()),
        (
            "POST",
            &approvals,
            r#"{"decision": "approve", "route": "telepathy"}"#.into(),
        ),
        (
            "POST",
            &approvals,
            r#"{"decision": "approve", "minutes": 31}"#.into(),
        ),
        (
            "POST",
            &approvals,
            r#"{"decision": "approve", "minutes": 0}"#.into(),
        ),
        (
            "POST",
            &approvals,
            r#"{"decision": "approve", "minutes": -5}"#.into(),
        ),
        (
            "POST",
            &approvals,
            r#"{"decision": "approve", "minutes": 9223372036854775807}"#.into(),
        ),
        (
            "POST",
            &approvals,
            r#"{"decision": "approve", "minutes": "5"}"#.into(),
        ),
        (
            "POST",
            &approvals,
            r#"{"decision": "approve", "color": "red"}"#.into(),
        ),
        ("PUT", &execution, r#"{"status": ""}"#.into()),
        ("PUT", &execution, r#"{"status": "   "}"#.into()),
        ("PUT", &execution, r#"{"result": "no status"}"#.into()),
        (
            "PUT",
            &execution,
            r#"{"status": "completed", "result": 7}"#.into(),
        ),
        ("PUT", &execution, r#"{"status": "completed\u0000"}"#.into()),
        (
            "PUT",
            &execution,
            r#"{"status": "completed", "result": "a\u0000b"}"#.into(),
        ),
        ("POST", &turns, r#"{"role": "tool", "content": "x"}"#.into()),
        ("POST", &turns, r#"{"role": "user", "content": ""}"#.into()),
        ("POST", &turns, r#"{"role": "user"}"#.into()),
        (
            "POST",
            &turns,
            r#"{"role": "user", "content": "x", "key": "k"}"#.into(),
        ),
        (
            "POST",
            &turns,
            r#"{"role": "user", "content": "nul \u0000 here"}"#.into(),
        ),
        ("PUT", "/v1/policy", "".into()),
    ];
    for (method, path, body) in cases {
        let answer = api.send(method, path, body.clone()).await;
        assert!(
            answer.status == 400 || answer.status == 422,
            "{method} {path} {body:?}: {} {}",
            answer.status,
            answer.text
        );
        answer.expect_error(answer.status);
    }
    // Nothing was written for the session by any of them.
    assert!(api
        .store
        .session_summary(session)
        .await
        .expect("summary")
        .is_empty());
    assert!(api.store.turns(session).await.expect("turns").is_empty());
}

#[tokio::test]
async fn bad_ids_in_the_path_are_400_json() {
    let (api, _dir) = sqlite_api(None).await;
    for (method, path) in [
        ("GET", "/v1/sessions/not-a-uuid"),
        ("GET", "/v1/sessions/%FF%FE"),
        ("POST", "/v1/sessions/123/tool-results"),
        ("POST", "/v1/sessions/%FF/approvals"),
        (
            "POST",
            "/v1/sessions/zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz/turns",
        ),
        ("PUT", "/v1/executions/%00"),
        ("PUT", "/v1/executions/3f2504e0-4f89-11d3-9a0c"),
    ] {
        let answer = api
            .send(method, path, r#"{"text": "x", "decision": "deny"}"#)
            .await;
        answer.expect_error(400);
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_413_json() {
    let (api, _dir) = sqlite_api(None).await;
    let huge = vec![b'a'; MAX_POLICY_BYTES + 1];
    api.send("PUT", "/v1/policy", huge.clone())
        .await
        .expect_error(413);
    let session = Uuid::new_v4();
    let mut json = br#"{"text": ""#.to_vec();
    json.extend_from_slice(&huge);
    json.extend_from_slice(br#""}"#);
    api.send(
        "POST",
        &format!("/v1/sessions/{session}/tool-results"),
        json,
    )
    .await
    .expect_error(413);
}

#[tokio::test]
async fn the_token_guards_every_route_but_healthz() {
    let (api, _dir) = sqlite_api(Some("s3cret")).await;
    let session = Uuid::new_v4();
    let routes = [
        ("GET", format!("/v1/sessions/{session}")),
        ("POST", format!("/v1/sessions/{session}/tool-results")),
        ("POST", format!("/v1/sessions/{session}/approvals")),
        ("POST", format!("/v1/sessions/{session}/turns")),
        ("PUT", format!("/v1/executions/{}", Uuid::new_v4())),
        ("GET", "/v1/policy".to_string()),
        ("PUT", "/v1/policy".to_string()),
        ("POST", "/v1/policy/rollback".to_string()),
        ("GET", "/metrics".to_string()),
    ];
    for (method, path) in &routes {
        for token in [None, Some("wrong"), Some("s3cret-but-longer"), Some("")] {
            let answer = api.send_with(method, path, "{}", token).await;
            answer.expect_error(401);
        }
    }
    let healthz = api.send_with("GET", "/healthz", "", None).await;
    assert_eq!(healthz.status, 200);
    let answer = api.send_with("GET", "/v1/policy", "", Some("s3cret")).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(api
        .store
        .session_summary(session)
        .await
        .expect("summary")
        .is_empty());
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405_json() {
    let (api, _dir) = sqlite_api(None).await;
    let session = Uuid::new_v4();
    for path in [
        "/",
        "/v1",
        "/v2/policy",
        "/v1/session",
        "/v1/sessions/x/y/z",
        "/metrics/x",
        "/v1/executions",
    ] {
        api.send("GET", path, "").await.expect_error(404);
    }
    for (method, path) in [
        ("DELETE", "/v1/policy".to_string()),
        ("POST", "/v1/policy".to_string()),
        ("GET", format!("/v1/sessions/{session}/tool-results")),
        ("PUT", format!("/v1/sessions/{session}/approvals")),
        ("DELETE", format!("/v1/sessions/{session}")),
        ("POST", format!("/v1/executions/{}", Uuid::new_v4())),
        ("POST", "/healthz".to_string()),
        ("POST", "/metrics".to_string()),
    ] {
        api.send(method, &path, "{}").await.expect_error(405);
    }
}

#[tokio::test]
async fn unknown_session_is_404_and_unknown_execution_is_created() {
    let (api, _dir) = sqlite_api(None).await;
    api.send("GET", &format!("/v1/sessions/{}", Uuid::new_v4()), "")
        .await
        .expect_error(404);
    // Documented: a status for an execution nobody linked yet is recorded
    // (the runtime may report before the tool result is linked).
    let id = Uuid::new_v4();
    let answer = api
        .json(
            "PUT",
            &format!("/v1/executions/{id}"),
            &json!({"status": "completed", "result": "ok"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["execution"]["id"], id.to_string());
    assert!(answer.json()["execution"]["finished_at"].is_string());
}

#[tokio::test]
async fn recording_a_status_wakes_the_worker() {
    let (api, _dir) = sqlite_api(None).await;
    let woken = api.wake.notified();
    let answer = api
        .json(
            "PUT",
            &format!("/v1/executions/{}", Uuid::new_v4()),
            &json!({"status": "completed"}),
        )
        .await;
    assert_eq!(answer.status, 200);
    // `notify_one` stores a permit, so this completes even though the
    // future was created (not polled) before the request.
    tokio::time::timeout(std::time::Duration::from_secs(10), woken)
        .await
        .expect("woken");
}

#[tokio::test]
async fn a_bad_policy_is_422_with_reasons_and_changes_nothing() {
    let (api, _dir) = sqlite_api(None).await;
    let before = api.send("GET", "/v1/policy", "").await.json()["revision"].clone();
    for garbage in [
        b"\x00asm garbage".to_vec(),
        b"not wasm at all".to_vec(),
        vec![0xff; 4096],
    ] {
        let body = api
            .send("PUT", "/v1/policy", garbage)
            .await
            .expect_error(422);
        let reasons = body["reasons"].as_array().expect("reasons");
        assert!(
            !reasons.is_empty()
                && reasons
                    .iter()
                    .all(|r| r.as_str().is_some_and(|r| !r.is_empty())),
            "{body}"
        );
    }
    assert_eq!(
        api.send("GET", "/v1/policy", "").await.json()["revision"],
        before
    );
    assert_eq!(api.store.active_policy().await.expect("active"), None);

    let answer = api.send("PUT", "/v1/policy", BUILTIN_POLICY_WASM).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(
        answer.json()["revision"],
        before,
        "the built-in bytes are the active revision"
    );
    let active = api
        .store
        .active_policy()
        .await
        .expect("active")
        .expect("recorded for the replicas");
    assert_eq!(json!(active.hash), before);
}

#[tokio::test]
async fn approvals_open_extend_and_close() {
    let (api, _dir) = sqlite_api(None).await;
    let session = Uuid::new_v4();
    let path = format!("/v1/sessions/{session}/approvals");
    let deny = api.json("POST", &path, &json!({"decision": "deny"})).await;
    assert_eq!((deny.status, deny.json()), (200, json!({"window": null})));
    for route in ["button", "chat", "api"] {
        let answer = api
            .json(
                "POST",
                &path,
                &json!({"decision": "approve", "route": route, "minutes": 1}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.json()["window"]["route"], route);
    }
    let default_route = api
        .json("POST", &path, &json!({"decision": "approve"}))
        .await;
    assert_eq!(default_route.json()["window"]["route"], "api");
    let window = api
        .store
        .window(session)
        .await
        .expect("window")
        .expect("open");
    assert!(window.closed_at.is_none());
    let deny = api
        .json(
            "POST",
            &path,
            &json!({"decision": "deny", "route": "button"}),
        )
        .await;
    assert_eq!(deny.json(), json!({"window": null}));
    let window = api
        .store
        .window(session)
        .await
        .expect("window")
        .expect("kept");
    assert!(window.closed_at.is_some());
}
