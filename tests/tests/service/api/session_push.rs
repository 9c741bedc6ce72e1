//! A session's push configuration over HTTP (`POST
//! /v1/sessions/{id}/push-configs`, `POST /v1/a2a/sessions/{id}/push`):
//! the first push of a task links it to the session; the token reports its
//! own session's tasks only, opens nothing else, links nothing new after
//! its window while the tasks it linked keep reporting, and a session links
//! at most 1,000 tasks this way. The SDKs' own flow is in
//! `protocols::a2a_session`.

use std::sync::Arc;

use chrono::{Duration, Utc};
use nomos_continue::clock::ManualClock;
use nomos_continue::store::{task_execution_id, TaskSource};
use nomos_continue::{PushLimits, ServeConfig};
use nomos_continue_tests::api::{Answer, ServedApi};
use serde_json::{json, Value};
use uuid::Uuid;

const TOKEN: &str = "runtime-token";

/// Served on a fresh SQLite store at a clock the test moves, with the
/// push route's rate limits off (the bound test sends 1,001 pushes).
async fn served() -> (ServedApi, Arc<ManualClock>, tempfile::TempDir) {
    let (store, dir) = nomos_continue_tests::db::fresh_sqlite().await;
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let config = ServeConfig::default()
        .with_token(Some(TOKEN.into()))
        .with_push_limits(PushLimits::default().with_per_token(None).with_total(None));
    let api = ServedApi::start_clocked(store, config, clock.clone()).await;
    (api, clock, dir)
}

async fn approve(api: &ServedApi, session: Uuid, minutes: i64) {
    let body = json!({"decision": "approve", "route": "api", "minutes": minutes});
    let answer = api
        .json("POST", &format!("/v1/sessions/{session}/approvals"), &body)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
}

/// Mints a session push configuration with `body`; the answer.
async fn mint(api: &ServedApi, session: Uuid, body: &Value) -> Answer {
    api.json(
        "POST",
        &format!("/v1/sessions/{session}/push-configs"),
        body,
    )
    .await
}

/// A minted configuration's token, after checking its shape.
fn token_of(api: &ServedApi, session: Uuid, answer: &Answer) -> String {
    assert_eq!(answer.status, 200, "{}", answer.text);
    let body = answer.json();
    let url = format!("{}/v1/a2a/sessions/{session}/push", api.base);
    assert_eq!(body["url"], url);
    assert_eq!(body["authentication"]["scheme"], "Bearer");
    assert_eq!(body["authentication"]["credentials"], body["token"]);
    assert_eq!(body["max_tasks"], 1000);
    body["token"].as_str().expect("a token").to_owned()
}

/// An A2A 1.0 push (`statusUpdate`) of `task` in `state`, as the 1.x
/// sender sends it, to `session`'s route.
async fn push(api: &ServedApi, session: Uuid, token: &str, task: &str, state: &str) -> Answer {
    let body = json!({"statusUpdate": {"taskId": task, "contextId": "c",
        "status": {"state": state, "message": {"messageId": "m", "role": "ROLE_AGENT",
            "parts": [{"text": format!("{task} is {state}")}]}}}});
    let auth = format!("Bearer {token}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/a2a+json"),
    ];
    let path = format!("/v1/a2a/sessions/{session}/push");
    api.send_headers("POST", &path, body.to_string(), None, &headers)
        .await
}

/// The session each of the session's links names, by execution id.
async fn linked(api: &ServedApi, session: Uuid) -> Vec<String> {
    let answer = api
        .send(
            "GET",
            &format!("/v1/sessions/{session}/links?limit=500"),
            "",
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let items = answer.json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (items.iter())
        .filter_map(|l| l["execution_id"].as_str().map(str::to_owned))
        .collect()
}

fn execution_of(task: &str) -> Uuid {
    task_execution_id(TaskSource::A2a, task)
}

async fn status(api: &ServedApi, id: Uuid) -> Value {
    let answer = api.send("GET", &format!("/v1/executions/{id}"), "").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json()["execution"]["status"].clone()
}

#[tokio::test]
async fn the_first_push_of_a_task_links_it_and_every_push_reports_it() {
    let (api, _clock, _dir) = served().await;
    let session = Uuid::new_v4();
    approve(&api, session, 30).await;
    let minted = mint(&api, session, &json!({})).await;
    let token = token_of(&api, session, &minted);
    assert!(linked(&api, session).await.is_empty());

    let answer = push(&api, session, &token, "export-1", "TASK_STATE_WORKING").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let id = execution_of("export-1");
    assert_eq!(linked(&api, session).await, vec![id.to_string()]);
    assert_eq!(status(&api, id).await, "TASK_STATE_WORKING");
    let answer = push(&api, session, &token, "export-1", "TASK_STATE_FAILED").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(status(&api, id).await, "TASK_STATE_FAILED");
    assert_eq!(linked(&api, session).await.len(), 1, "one link, not two");

    // Registering the task afterwards (the per-task flow) finds the same
    // link: the execution id is the task's.
    let body = json!({"protocol": "a2a", "task_id": "export-1"});
    let registered = api
        .json("POST", &format!("/v1/sessions/{session}/tasks"), &body)
        .await;
    assert_eq!(registered.status, 200, "{}", registered.text);
    assert_eq!(registered.json()["execution_id"], id.to_string());
    assert_eq!(registered.json()["linked"], false);

    // A body the token header alone carries (the 0.3 sender) is taken too.
    let body = json!({"kind": "status-update", "taskId": "export-2", "contextId": "c",
        "final": false, "status": {"state": "working"}});
    let headers = [
        ("X-A2A-Notification-Token", token.as_str()),
        ("Content-Type", "application/json"),
    ];
    let path = format!("/v1/a2a/sessions/{session}/push");
    let answer = api
        .send_headers("POST", &path, body.to_string(), None, &headers)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(status(&api, execution_of("export-2")).await, "working");
}

#[tokio::test]
async fn the_token_reports_its_own_session_and_opens_nothing_else() {
    let (api, _clock, _dir) = served().await;
    let (mine, other) = (Uuid::new_v4(), Uuid::new_v4());
    approve(&api, mine, 30).await;
    approve(&api, other, 30).await;
    let token = token_of(&api, mine, &mint(&api, mine, &json!({})).await);
    let others = token_of(&api, other, &mint(&api, other, &json!({})).await);

    // Another session's route, another session's token, none, a guess.
    for (session, token) in [(other, &token), (mine, &others)] {
        let answer = push(&api, session, token, "t-a", "TASK_STATE_WORKING").await;
        answer.expect_error(401);
    }
    push(&api, mine, "a-guess", "t-a", "TASK_STATE_WORKING")
        .await
        .expect_error(401);
    let path = format!("/v1/a2a/sessions/{mine}/push");
    let body =
        json!({"statusUpdate": {"taskId": "t-a", "status": {"state": "TASK_STATE_WORKING"}}});
    api.send_headers("POST", &path, body.to_string(), None, &[])
        .await
        .expect_error(401);

    // A task of the other session (registered there) is not this token's.
    let body = json!({"protocol": "a2a", "task_id": "theirs"});
    let registered = api
        .json("POST", &format!("/v1/sessions/{other}/tasks"), &body)
        .await;
    assert_eq!(registered.status, 200, "{}", registered.text);
    let problem = push(&api, mine, &token, "theirs", "TASK_STATE_FAILED")
        .await
        .expect_error(403);
    assert_eq!(problem["type"], "urn:nomos-continue:problem:forbidden");
    assert!(status(&api, execution_of("theirs")).await.is_null());

    // Nothing of the API opens to it: no read, no approval, no mint.
    let auth = format!("Bearer {token}");
    let headers = [("Authorization", auth.as_str())];
    for (method, path) in [
        ("GET", format!("/v1/sessions/{mine}")),
        ("POST", format!("/v1/sessions/{mine}/approvals")),
        ("POST", format!("/v1/sessions/{mine}/push-configs")),
        ("GET", "/metrics".to_owned()),
    ] {
        let answer = api.send_headers(method, &path, "{}", None, &headers).await;
        assert_eq!(answer.status, 401, "{method} {path}: {}", answer.text);
    }
    // Nor does a task's own token open the session's route.
    let task_token = registered.json()["push"]["token"]
        .as_str()
        .expect("a task token")
        .to_owned();
    push(&api, other, &task_token, "theirs", "TASK_STATE_WORKING")
        .await
        .expect_error(401);
}

#[tokio::test]
async fn after_its_window_it_links_nothing_new_and_its_tasks_keep_reporting() {
    let (api, clock, _dir) = served().await;
    let session = Uuid::new_v4();
    // No window and no time to live: nothing to bound the linking by.
    mint(&api, session, &json!({})).await.expect_error(409);
    mint(&api, session, &json!({"ttl_seconds": 0}))
        .await
        .expect_error(400);
    approve(&api, session, 1).await;
    let minted = mint(&api, session, &json!({})).await;
    let token = token_of(&api, session, &minted);
    let answer = push(&api, session, &token, "early", "TASK_STATE_WORKING").await;
    assert_eq!(answer.status, 200, "{}", answer.text);

    clock.advance(Duration::minutes(2));
    // The task it linked still reports its end (after the window, the
    // worker tells the operator instead of continuing).
    let answer = push(&api, session, &token, "early", "TASK_STATE_FAILED").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(
        status(&api, execution_of("early")).await,
        "TASK_STATE_FAILED"
    );
    // A task it never saw is not linked any more.
    let problem = push(&api, session, &token, "late", "TASK_STATE_WORKING")
        .await
        .expect_error(403);
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("links no new task"), "{detail}");
    assert!(!linked(&api, session)
        .await
        .contains(&execution_of("late").to_string()));

    // A configuration with its own time to live links past the window.
    let minted = mint(&api, session, &json!({"ttl_seconds": 3600})).await;
    let lasting = token_of(&api, session, &minted);
    let answer = push(&api, session, &lasting, "late", "TASK_STATE_WORKING").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
}

#[tokio::test]
async fn a_second_mint_leaves_the_first_reporting() {
    let (api, _clock, _dir) = served().await;
    let session = Uuid::new_v4();
    approve(&api, session, 30).await;
    let first = token_of(&api, session, &mint(&api, session, &json!({})).await);
    let answer = push(&api, session, &first, "shared", "TASK_STATE_WORKING").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let second = token_of(&api, session, &mint(&api, session, &json!({})).await);
    assert_ne!(first, second);
    for (token, task, state) in [
        (&first, "shared", "TASK_STATE_FAILED"),
        (&second, "shared", "TASK_STATE_FAILED"),
        (&first, "next", "TASK_STATE_WORKING"),
        (&second, "third", "TASK_STATE_WORKING"),
    ] {
        let answer = push(&api, session, token, task, state).await;
        assert_eq!(answer.status, 200, "{task} {state}: {}", answer.text);
    }
    assert_eq!(linked(&api, session).await.len(), 3);
}

#[tokio::test]
async fn a_session_links_at_most_1000_tasks_through_its_configurations() {
    let (api, _clock, _dir) = served().await;
    let session = Uuid::new_v4();
    approve(&api, session, 30).await;
    // The bound is the session's, across its configurations.
    let tokens = [
        token_of(&api, session, &mint(&api, session, &json!({})).await),
        token_of(&api, session, &mint(&api, session, &json!({})).await),
    ];
    for n in 0..1000 {
        let token = &tokens[n % 2];
        let answer = push(
            &api,
            session,
            token,
            &format!("t-{n}"),
            "TASK_STATE_WORKING",
        )
        .await;
        assert_eq!(answer.status, 200, "task {n}: {}", answer.text);
    }
    let refused = push(&api, session, &tokens[0], "t-1000", "TASK_STATE_WORKING").await;
    assert!(
        refused.header("retry-after").is_none(),
        "a bound, not a rate"
    );
    let problem = refused.expect_error(429);
    assert_eq!(
        problem["type"],
        "urn:nomos-continue:problem:session-task-limit"
    );
    // Its tasks still report; a task registered on its own still links.
    let answer = push(&api, session, &tokens[1], "t-7", "TASK_STATE_FAILED").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let body = json!({"protocol": "a2a", "task_id": "t-1000"});
    let registered = api
        .json("POST", &format!("/v1/sessions/{session}/tasks"), &body)
        .await;
    assert_eq!(registered.status, 200, "{}", registered.text);
}
