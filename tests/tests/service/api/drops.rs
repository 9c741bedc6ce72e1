//! `POST /v1/deliveries/{id}/drop`: the admin token drops a pending
//! continuation (never sent, one notice), a runtime token may not, and what
//! cannot be dropped is a problem document under the wire contract.

use chrono::{Duration, Utc};
use nomos_continue::store::{ContinuationPlan, PlanOutcome, Route, Store};
use nomos_continue_tests::api::ServedApi;
use uuid::Uuid;

/// A pending continuation of two finished executions in an open window.
async fn pending_continuation(store: &Store) -> (Uuid, Uuid) {
    let session = Uuid::new_v4();
    let now = Utc::now();
    store
        .approve(session, Route::Button, now, Duration::minutes(30))
        .await
        .expect("approve");
    let executions = [Uuid::new_v4(), Uuid::new_v4()];
    store.link(session, &executions, now).await.expect("link");
    for e in executions {
        store
            .upsert_execution_status(e, "failed", "exit 1", now, true)
            .await
            .expect("status");
    }
    let key = format!("k-{}", Uuid::new_v4());
    let plan = ContinuationPlan {
        session_id: session,
        execution_ids: &executions,
        note: "two steps failed",
        policy_revision: "rev",
        idempotency_key: &key,
        hard_cap: 20,
    };
    match store
        .plan_continuations(&[plan], now)
        .await
        .expect("plan")
        .remove(0)
    {
        PlanOutcome::Planned(d) => (session, d.id),
        other => panic!("expected a plan, got {other:?}"),
    }
}

#[tokio::test]
async fn the_admin_drops_a_pending_continuation_and_the_runtime_may_not() {
    let (store, _dir) = nomos_continue_tests::db::fresh_sqlite().await;
    let api = ServedApi::start_scoped(store.clone(), Some("runtime-t"), Some("admin-t")).await;
    let (session, id) = pending_continuation(&store).await;
    let path = format!("/v1/deliveries/{id}/drop");

    assert_eq!(api.send("POST", &path, "").await.problem(403), "forbidden");
    let key = [("Idempotency-Key", "drop-1")];
    let first = api
        .send_headers("POST", &path, "", Some("admin-t"), &key)
        .await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.json()["delivery"]["state"], "dropped");
    assert_eq!(
        first.json()["delivery"]["last_error"],
        "dropped by the operator"
    );
    let again = api
        .send_headers("POST", &path, "", Some("admin-t"), &key)
        .await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    // Without the key a second drop is a conflict: it is no longer pending.
    let conflict = api.send_admin("POST", &path, "").await;
    assert_eq!(conflict.problem(409), "conflict");
    assert!(
        conflict.text.contains("only a pending delivery"),
        "{}",
        conflict.text
    );
    let unknown = format!("/v1/deliveries/{}/drop", Uuid::new_v4());
    assert_eq!(
        api.send_admin("POST", &unknown, "").await.problem(404),
        "not-found"
    );
    let malformed = api
        .send_admin("POST", "/v1/deliveries/not-an-id/drop", "")
        .await;
    assert_eq!(malformed.problem(400), "bad-request");

    // One notice, about both executions; both settled dropped.
    let ledger = store.deliveries_for_session(session).await.expect("ledger");
    let notices: Vec<_> = ledger
        .iter()
        .filter(|d| d.kind == nomos_continue::store::DeliveryKind::Notice)
        .collect();
    assert_eq!(notices.len(), 1, "{ledger:?}");
    assert!(
        notices[0].note.contains("The operator dropped"),
        "{}",
        notices[0].note
    );
    let links = api
        .send("GET", &format!("/v1/sessions/{session}/links"), "")
        .await;
    for link in links.json()["items"].as_array().expect("links") {
        assert_eq!(link["outcome"], "dropped", "{link}");
    }
}

#[tokio::test]
async fn a_delivery_whose_call_is_in_flight_is_not_dropped() {
    let (store, _dir) = nomos_continue_tests::db::fresh_sqlite().await;
    let api = ServedApi::start_scoped(store.clone(), Some("runtime-t"), Some("admin-t")).await;
    let (_, id) = pending_continuation(&store).await;
    let claimed = store
        .claim_deliveries("w", Utc::now(), Duration::minutes(5), 10)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    let answer = api
        .send_admin("POST", &format!("/v1/deliveries/{id}/drop"), "")
        .await;
    assert_eq!(answer.problem(409), "conflict");
    assert!(answer.text.contains("in flight"), "{}", answer.text);
    let read = api.send("GET", &format!("/v1/deliveries/{id}"), "").await;
    assert_eq!(read.json()["state"], "pending");
}
