//! The two token scopes, the rollback route, and the limits' answers.

use nomos_continue::api::{MAX_STATUS_BYTES, MAX_TURN_BYTES};
use nomos_continue::policy::{Limits, Revision};
use nomos_continue_tests::api::ServedApi;
use nomos_continue_tests::db::fresh_sqlite;
use nomos_continue_tests::policies::variant;
use serde_json::json;
use uuid::Uuid;

async fn scoped(token: Option<&str>, admin: Option<&str>) -> (ServedApi, tempfile::TempDir) {
    let (store, dir) = fresh_sqlite().await;
    (ServedApi::start_scoped(store, token, admin).await, dir)
}

#[tokio::test]
async fn the_runtime_token_cannot_change_the_policy() {
    let (api, _dir) = scoped(Some("rt"), Some("adm")).await;
    let candidate = variant("scopes");
    for (method, path) in [("PUT", "/v1/policy"), ("POST", "/v1/policy/rollback")] {
        let body = api
            .send_with(method, path, candidate.clone(), Some("rt"))
            .await
            .expect_error(403);
        assert!(
            body["detail"]
                .as_str()
                .is_some_and(|e| e.contains("admin token")),
            "{body}"
        );
        api.send_with(method, path, candidate.clone(), None)
            .await
            .expect_error(401);
    }
    assert_eq!(api.store.active_policy().await.expect("active"), None);
    // The runtime's routes take either token.
    for token in ["rt", "adm"] {
        let answer = api.send_with("GET", "/v1/policy", "", Some(token)).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
    let answer = api.send_admin("PUT", "/v1/policy", candidate.clone()).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["revision"], Revision::of(&candidate).0);
}

#[tokio::test]
async fn without_an_admin_token_policy_changes_are_refused_with_the_way_to_enable_them() {
    let (api, _dir) = scoped(Some("rt"), None).await;
    let body = api
        .send("PUT", "/v1/policy", variant("refused"))
        .await
        .expect_error(403);
    let message = body["detail"].as_str().unwrap_or_default();
    assert!(
        message.contains("--admin-token") && message.contains("NOMOS_CONTINUE_ADMIN_TOKEN"),
        "{message}"
    );
    api.send("POST", "/v1/policy/rollback", "")
        .await
        .expect_error(403);
    assert_eq!(api.store.active_policy().await.expect("active"), None);
}

#[tokio::test]
async fn rollback_returns_to_the_previous_revision_and_a_second_undoes_it() {
    let (api, _dir) = scoped(Some("rt"), Some("adm")).await;
    let builtin = api.send("GET", "/v1/policy", "").await.json()["revision"].clone();
    // Nothing was ever uploaded: nothing to roll back to.
    api.send_admin("POST", "/v1/policy/rollback", "")
        .await
        .expect_error(409);

    let (a, b) = (variant("rollback-a"), variant("rollback-b"));
    for candidate in [&a, &b] {
        let answer = api.send_admin("PUT", "/v1/policy", candidate.clone()).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
    let active = || async {
        api.store
            .active_policy()
            .await
            .expect("active")
            .map(|p| p.hash)
    };
    assert_eq!(active().await, Some(Revision::of(&b).0));

    let undo = api.send_admin("POST", "/v1/policy/rollback", "").await;
    assert_eq!(undo.status, 200, "{}", undo.text);
    assert_eq!(
        undo.json(),
        json!({"from": Revision::of(&b).0, "revision": Revision::of(&a).0})
    );
    assert_eq!(active().await, Some(Revision::of(&a).0));
    let running = api.send("GET", "/v1/policy", "").await.json()["revision"].clone();
    assert_eq!(
        running,
        json!(Revision::of(&a).0),
        "this replica runs it at once"
    );

    let redo = api.send_admin("POST", "/v1/policy/rollback", "").await;
    assert_eq!(redo.json()["revision"], Revision::of(&b).0);

    // The first upload recorded the built-in policy it replaced, so an
    // operator can return to it.
    let (fresh, _dir2) = scoped(None, None).await;
    fresh.send("PUT", "/v1/policy", a.clone()).await;
    let back = fresh.send("POST", "/v1/policy/rollback", "").await;
    assert_eq!(back.status, 200, "{}", back.text);
    assert_eq!(back.json()["revision"], builtin);
}

#[tokio::test]
async fn every_limit_is_a_413_naming_it() {
    let (api, _dir) = scoped(None, None).await;
    let session = Uuid::new_v4();
    let text_cap = Limits::default().max_text_bytes;
    let over = |n: usize| "x".repeat(n + 1);
    let cases = [
        (
            "POST",
            format!("/v1/sessions/{session}/tool-results"),
            json!({ "text": over(text_cap) }),
            "text",
        ),
        (
            "PUT",
            format!("/v1/executions/{}", Uuid::new_v4()),
            json!({ "status": over(MAX_STATUS_BYTES), "result": "" }),
            "status",
        ),
        (
            "PUT",
            format!("/v1/executions/{}", Uuid::new_v4()),
            json!({ "status": "completed", "result": over(text_cap - MAX_STATUS_BYTES) }),
            "result",
        ),
        (
            "POST",
            format!("/v1/sessions/{session}/turns"),
            json!({ "role": "user", "content": over(MAX_TURN_BYTES) }),
            "content",
        ),
        (
            "POST",
            format!("/v1/sessions/{session}/approvals"),
            json!({ "decision": "approve", "route": over(64 << 10) }),
            "body_bytes",
        ),
    ];
    for (method, path, body, limit) in cases {
        let answer = api.json(method, &path, &body).await;
        let error = answer.expect_error(413);
        assert_eq!(error["limit"], limit, "{method} {path}: {error}");
        assert!(error["max"].as_u64().is_some_and(|m| m > 0), "{error}");
        assert_eq!(answer.retry_after, None, "a 413 is not worth retrying");
    }
}

#[tokio::test]
async fn a_condition_that_passes_is_503_with_retry_after() {
    let (api, _dir) = scoped(None, None).await;
    api.store.close().await;
    let answer = api
        .json(
            "POST",
            &format!("/v1/sessions/{}/approvals", Uuid::new_v4()),
            &json!({ "decision": "approve" }),
        )
        .await;
    answer.expect_error(503);
    assert_eq!(answer.retry_after.as_deref(), Some("1"));
}

/// Without a token (loopback only), any page the operator's browser opens
/// could call the API: a cross-site request is refused, named as such, and
/// nothing it asked for happens. Clients that are not browsers send no
/// `Origin`, and the console's own calls come from the same origin.
#[tokio::test]
async fn without_a_token_another_site_s_page_is_refused() {
    let (api, _dir) = scoped(None, None).await;
    let session = Uuid::new_v4();
    let path = format!("/v1/sessions/{session}/approvals");
    let approve = r#"{"decision": "approve", "route": "button"}"#;
    let host = api.base.trim_start_matches("http://").to_owned();
    let same_origin = format!("http://{host}");
    for headers in [
        vec![("Origin", "http://evil.example")],
        vec![("Origin", "null")],
        vec![("Sec-Fetch-Site", "cross-site")],
        vec![
            ("Sec-Fetch-Site", "same-site"),
            ("Origin", "http://127.0.0.1:1"),
        ],
    ] {
        let body = api
            .send_headers("POST", &path, approve, None, &headers)
            .await
            .expect_error(403);
        assert!(
            body["detail"]
                .as_str()
                .is_some_and(|e| e.contains("another site")),
            "{headers:?}: {body}"
        );
        api.send_headers("POST", "/v1/policy/rollback", "", None, &headers)
            .await
            .expect_error(403);
    }
    assert_eq!(api.store.window(session).await.expect("window"), None);
    // The same origin (the console) and a client that names none are served.
    let console = [
        ("Origin", same_origin.as_str()),
        ("Sec-Fetch-Site", "same-origin"),
    ];
    let answer = api
        .send_headers("POST", &path, approve, None, &console)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let answer = api.send_with("GET", "/v1/policy", "", None).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    // With a token, a page elsewhere cannot send it: no check is needed,
    // and a proxy that rewrites Host does not break the console.
    let (guarded, _dir) = scoped(Some("rt"), None).await;
    let answer = guarded
        .send_headers(
            "GET",
            "/v1/policy",
            "",
            Some("rt"),
            &[("Origin", "https://console.example")],
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
}

/// The read token reads every GET route, `/metrics` and the console, and
/// is refused (403) on every write; the runtime's token still writes.
#[tokio::test]
async fn the_read_token_reads_and_writes_nothing() {
    let (store, _dir) = fresh_sqlite().await;
    let config = nomos_continue::ServeConfig::default()
        .with_token(Some("rt".into()))
        .with_read_token(Some("rd".into()))
        .with_admin_token(Some("adm".into()));
    let api = ServedApi::start_configured(store, config).await;
    let session = Uuid::new_v4();
    let answer = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/approvals"),
            &json!({"decision": "approve", "route": "chat"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    for path in [
        "/v1/overview".to_owned(),
        "/v1/sessions".to_owned(),
        format!("/v1/sessions/{session}"),
        format!("/v1/sessions/{session}/links"),
        "/v1/policy".to_owned(),
        "/metrics".to_owned(),
        "/ui/fragments/sessions".to_owned(),
        format!("/ui/fragments/sessions/{session}"),
        "/ui/fragments/policy".to_owned(),
    ] {
        let answer = api.send_with("GET", &path, "", Some("rd")).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text);
        api.send_with("GET", &path, "", Some("wrong"))
            .await
            .expect_error(401);
    }
    let writes = [
        ("POST", format!("/v1/sessions/{session}/approvals")),
        ("POST", format!("/v1/sessions/{session}/tool-results")),
        ("POST", format!("/v1/sessions/{session}/turns")),
        ("POST", format!("/v1/sessions/{session}/tasks")),
        ("PUT", format!("/v1/executions/{}", Uuid::new_v4())),
        ("POST", format!("/v1/deliveries/{}/retry", Uuid::new_v4())),
        ("POST", "/v1/mcp/tasks".to_owned()),
        ("PUT", "/v1/policy".to_owned()),
        ("POST", "/v1/policy/rollback".to_owned()),
    ];
    for (method, path) in &writes {
        let body = api
            .send_with(method, path, "{}", Some("rd"))
            .await
            .expect_error(403);
        assert!(
            body["detail"]
                .as_str()
                .is_some_and(|d| d.contains("only reads")),
            "{method} {path}: {body}"
        );
    }
    let window = api
        .send_with("GET", &format!("/v1/sessions/{session}"), "", Some("rd"))
        .await
        .json();
    assert_eq!(
        window["window"]["route"], "chat",
        "the approval stands: {window}"
    );
    // The console says what each token may do.
    for (token, says) in [
        ("rd", "Signed in with the read token"),
        ("rt", "Signed in with the runtime"),
        ("adm", "Signed in with the admin token"),
    ] {
        let page = api
            .send_with("GET", "/ui/fragments/sessions", "", Some(token))
            .await;
        assert!(page.text.contains(says), "{token}: {}", page.text);
        let policy = api
            .send_with("GET", "/ui/fragments/policy", "", Some(token))
            .await;
        assert_eq!(
            policy.text.contains("Roll back"),
            token != "rd",
            "{token}: the policy's buttons: {}",
            policy.text
        );
    }
}
