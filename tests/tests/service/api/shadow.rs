//! Shadow mode over HTTP: a candidate uploaded in shadow (admin scope) is
//! shown beside the active revision, promoted through the normal activation
//! (so a rollback undoes it), or dropped; a refused candidate goes nowhere.

use nomos_continue::policy::Revision;
use nomos_continue_tests::api::ServedApi;
use nomos_continue_tests::db::fresh_sqlite;
use nomos_continue_tests::policies::variant;
use serde_json::json;

async fn scoped(token: Option<&str>, admin: Option<&str>) -> (ServedApi, tempfile::TempDir) {
    let (store, dir) = fresh_sqlite().await;
    (ServedApi::start_scoped(store, token, admin).await, dir)
}

#[tokio::test]
async fn shadow_changes_need_the_admin_token() {
    let (api, _dir) = scoped(Some("rt"), Some("adm")).await;
    let candidate = variant("shadow-scopes");
    for (method, path) in [
        ("PUT", "/v1/policy?mode=shadow"),
        ("POST", "/v1/policy/shadow/promote"),
        ("DELETE", "/v1/policy/shadow"),
    ] {
        api.send_with(method, path, candidate.clone(), Some("rt"))
            .await
            .expect_error(403);
        api.send_with(method, path, candidate.clone(), None)
            .await
            .expect_error(401);
    }
    assert_eq!(api.store.policy_shadow().await.expect("shadow"), None);
    let shown = api.send("GET", "/v1/policy", "").await.json();
    assert_eq!(shown["shadow"], json!(null));
}

#[tokio::test]
async fn a_shadow_is_shown_beside_the_active_revision_and_promoted() {
    let (api, _dir) = scoped(Some("rt"), Some("adm")).await;
    let builtin = api.send("GET", "/v1/policy", "").await.json()["revision"].clone();
    let candidate = variant("shadow-promote");
    let revision = Revision::of(&candidate).0;

    let answer = api
        .send_admin("PUT", "/v1/policy?mode=shadow", candidate.clone())
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["revision"], revision);
    assert_eq!(answer.json()["mode"], "shadow");
    // In shadow, not active: here and in the database.
    let shown = api.send("GET", "/v1/policy", "").await.json();
    assert_eq!(shown["revision"], builtin);
    assert_eq!(shown["shadow"]["revision"], revision);
    assert_eq!(shown["shadow"]["policy"]["name"], "nomos-default");
    for counter in ["disagreements", "decisions", "skipped_batches", "failures"] {
        assert_eq!(shown["shadow"][counter], 0, "{counter}: {shown}");
    }
    let stored = api.store.policy_shadow().await.expect("shadow");
    assert_eq!(stored.map(|s| s.hash), Some(revision.clone()));
    assert_eq!(api.store.active_policy().await.expect("active"), None);

    let promoted = api
        .send_admin("POST", "/v1/policy/shadow/promote", "")
        .await;
    assert_eq!(promoted.status, 200, "{}", promoted.text);
    assert_eq!(
        promoted.json(),
        json!({"from": builtin, "revision": revision})
    );
    let shown = api.send("GET", "/v1/policy", "").await.json();
    assert_eq!(shown["revision"], revision, "this replica runs it at once");
    assert_eq!(shown["shadow"], json!(null));
    let active = api.store.active_policy().await.expect("active");
    assert_eq!(active.map(|a| a.hash), Some(revision.clone()));
    assert_eq!(api.store.policy_shadow().await.expect("shadow"), None);

    // Nothing left to promote; the activation was logged, so the
    // operator's undo returns to the built-in policy.
    api.send_admin("POST", "/v1/policy/shadow/promote", "")
        .await
        .expect_error(409);
    let undo = api.send_admin("POST", "/v1/policy/rollback", "").await;
    assert_eq!(undo.status, 200, "{}", undo.text);
    assert_eq!(undo.json()["revision"], builtin);
}

#[tokio::test]
async fn a_refused_candidate_goes_nowhere_and_a_shadow_can_be_dropped() {
    let (api, _dir) = scoped(None, None).await;
    let broken = std::fs::read(env!("BROKEN_WASM")).expect("broken policy built");
    let refused = api.send("PUT", "/v1/policy?mode=shadow", broken).await;
    let body = refused.expect_error(422);
    assert!(
        body["reasons"].as_array().is_some_and(|r| !r.is_empty()),
        "{body}"
    );
    assert_eq!(api.store.policy_shadow().await.expect("shadow"), None);
    api.send("PUT", "/v1/policy?mode=sideways", variant("bad-mode"))
        .await
        .expect_error(400);

    let candidate = variant("shadow-drop");
    let answer = api
        .send("PUT", "/v1/policy?mode=shadow", candidate.clone())
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let dropped = api.send("DELETE", "/v1/policy/shadow", "").await;
    assert_eq!(dropped.status, 200, "{}", dropped.text);
    assert_eq!(dropped.json(), json!({"dropped": true}));
    assert_eq!(api.store.policy_shadow().await.expect("shadow"), None);
    let shown = api.send("GET", "/v1/policy", "").await.json();
    assert_eq!(shown["shadow"], json!(null));
    let again = api.send("DELETE", "/v1/policy/shadow", "").await;
    assert_eq!(again.json(), json!({"dropped": false}));
    // The candidate was saved as a revision; the active one never changed.
    assert_eq!(api.store.active_policy().await.expect("active"), None);
    let metrics = api.send("GET", "/metrics", "").await.text;
    for name in [
        "nomos_continue_policy_shadow_decisions_total 0",
        "nomos_continue_policy_shadow_disagreements_total 0",
        "nomos_continue_policy_shadow_skipped_batches_total 0",
        "nomos_continue_policy_shadow_failures_total 0",
    ] {
        assert!(metrics.contains(name), "{name} missing from {metrics}");
    }
}
