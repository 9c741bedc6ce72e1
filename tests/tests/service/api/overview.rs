//! `GET /v1/overview` and `GET /v1/sessions?status=` over real HTTP on
//! both stores: the strip's numbers from a seeded ledger, and the list
//! narrowed to the sessions showing a status. The server's clock is the
//! system's, so the ledger is seeded relative to now.

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{ContinuationPlan, PlanOutcome, Route, Store};
use nomos_continue_tests::api::ServedApi;
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    the_overview_answers_the_ledgers_numbers,
    the_list_of_sessions_narrows_to_a_status
);

/// A session approved and linked `ago` before now; its execution finished
/// `finished_after` later, if given.
async fn linked(store: &Store, ago: Duration, finished_after: Option<Duration>) -> (Uuid, Uuid) {
    linked_at(store, Utc::now() - ago, finished_after).await
}

/// [`linked`] at `at`.
async fn linked_at(
    store: &Store,
    at: DateTime<Utc>,
    finished_after: Option<Duration>,
) -> (Uuid, Uuid) {
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    store
        .approve(session, Route::Api, at, Duration::minutes(30))
        .await
        .expect("approve");
    store.link(session, &[execution], at).await.expect("link");
    if let Some(after) = finished_after {
        store
            .upsert_execution_status(execution, "done", "ok", at + after, true)
            .await
            .expect("report");
    }
    (session, execution)
}

async fn the_overview_answers_the_ledgers_numbers(store: Store) {
    let api = ServedApi::start(store.clone(), None).await;
    // Delivered three minutes ago, picked up 2.5 s after it finished.
    let at = Utc::now() - Duration::minutes(4);
    let (session, execution) = linked_at(&store, at, Some(Duration::seconds(57))).await;
    let finished = at + Duration::seconds(57);
    let ids = [execution];
    let plan = ContinuationPlan {
        session_id: session,
        execution_ids: &ids,
        note: "note",
        policy_revision: "rev",
        idempotency_key: "overview-1",
        hard_cap: 50,
    };
    let planned = store
        .plan_continuations(&[plan], finished)
        .await
        .expect("plan");
    let Some(PlanOutcome::Planned(delivery)) = planned.first() else {
        panic!("{planned:?}");
    };
    let delivered = finished + Duration::milliseconds(2500);
    let claimed = store
        .claim_deliveries("w", delivered, Duration::seconds(5), 10)
        .await
        .expect("claim");
    let claim = claimed
        .iter()
        .find(|d| d.id == delivery.id)
        .and_then(|d| d.claim())
        .expect("claimed");
    store
        .complete_deliveries(&[claim], delivered)
        .await
        .expect("complete");
    // Two running, the older linked an hour ago.
    linked(&store, Duration::minutes(60), None).await;
    linked(&store, Duration::minutes(1), None).await;

    let answer = api.send("GET", "/v1/overview", "").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let o = answer.json();
    assert_eq!(o["in_flight"], 2, "{o}");
    let age = o["oldest_in_flight_seconds"].as_i64().expect("an age");
    assert!((3600..3700).contains(&age), "{o}");
    assert_eq!(o["pending_deliveries"], 0, "{o}");
    assert_eq!(o["failed_deliveries"], 0, "{o}");
    assert_eq!(o["dropped"], 0, "{o}");
    assert_eq!(o["undelivered_notices"], 0, "{o}");
    assert_eq!(o["recent_seconds"], 86_400, "{o}");
    assert_eq!(o["continuations_last_hour"], 1, "{o}");
    let hours = o["continuations_by_hour"].as_array().expect("hours");
    assert_eq!(hours.len(), 24);
    assert_eq!(hours[23], 1, "{o}");
    assert_eq!(o["pickup"]["count"], 1, "{o}");
    assert_eq!(o["pickup"]["p50_ms"], 2500, "{o}");
    assert_eq!(o["pickup"]["p99_ms"], 2500, "{o}");
    assert_eq!(o["pickup"]["window_seconds"], 3600, "{o}");
}

async fn the_list_of_sessions_narrows_to_a_status(store: Store) {
    let api = ServedApi::start(store.clone(), None).await;
    // Linked 11 minutes ago in an open window and never finished: stuck
    // (the server's default is ten minutes). The other finished.
    let (stuck, _) = linked(&store, Duration::minutes(11), None).await;
    let (waiting, _) = linked(&store, Duration::minutes(3), Some(Duration::minutes(1))).await;
    let (running, _) = linked(&store, Duration::minutes(2), None).await;
    let listed = |answer: nomos_continue_tests::api::Answer| -> Vec<(String, String)> {
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.json()["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|r| {
                (
                    r["session_id"].as_str().expect("id").to_owned(),
                    r["status"].as_str().expect("a status").to_owned(),
                )
            })
            .collect()
    };
    let all = listed(api.send("GET", "/v1/sessions", "").await);
    assert_eq!(
        all,
        [
            (running.to_string(), "ok".to_owned()),
            (waiting.to_string(), "waiting".to_owned()),
            (stuck.to_string(), "stuck".to_owned()),
        ]
    );
    let only = listed(api.send("GET", "/v1/sessions?status=stuck", "").await);
    assert_eq!(only, [(stuck.to_string(), "stuck".to_owned())]);
    let only = listed(
        api.send("GET", "/v1/sessions?status=waiting&filter=open", "")
            .await,
    );
    assert_eq!(only, [(waiting.to_string(), "waiting".to_owned())]);
    assert!(listed(api.send("GET", "/v1/sessions?status=dropped", "").await).is_empty());
    // Paged, a status keeps to its sessions across pages.
    let first = api
        .send("GET", "/v1/sessions?status=ok&limit=1", "")
        .await
        .json();
    assert_eq!(first["items"][0]["session_id"], running.to_string());
    assert!(first["next_cursor"].is_null(), "{first}");
    let one = api
        .send("GET", &format!("/v1/sessions/{waiting}"), "")
        .await
        .json();
    assert_eq!(one["status"], "waiting", "{one}");
    assert!(one["last_activity_at"].is_string(), "{one}");
}
