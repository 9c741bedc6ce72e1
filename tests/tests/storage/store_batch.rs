//! The set-at-a-time store functions the worker uses, on both backends:
//! a refused plan in a batch leaves the others intact and writes nothing of
//! its own; a batch completion marks only the rows the caller's lease holds.

use nomos_continue::store::{
    Claim, ContinuationPlan, DeliveryState, PlanOutcome, Route, Settlement, Store,
};

use chrono::Duration;
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    a_refused_plan_does_not_undo_the_others,
    batch_completion_is_a_compare_and_set
);

pub(crate) fn plan<'a>(session: Uuid, ids: &'a [Uuid], key: &'a str) -> ContinuationPlan<'a> {
    ContinuationPlan {
        session_id: session,
        execution_ids: ids,
        note: "note",
        policy_revision: "rev",
        idempotency_key: key,
        hard_cap: 50,
    }
}

async fn a_refused_plan_does_not_undo_the_others(store: Store) {
    let now = "2026-11-30T04:00:00Z"
        .parse::<chrono::DateTime<chrono::Utc>>()
        .expect("a valid time");
    let (open, closed) = (Uuid::new_v4(), Uuid::new_v4());
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    store
        .approve(open, Route::Api, now, Duration::minutes(30))
        .await
        .expect("approve");
    store.link(open, &[a], now).await.expect("link");
    store.link(closed, &[b], now).await.expect("link");
    let (ka, kb) = ("key-a".to_string(), "key-b".to_string());
    let (ia, ib) = ([a], [b]);
    let outcomes = store
        .plan_continuations(&[plan(closed, &ib, &kb), plan(open, &ia, &ka)], now)
        .await
        .expect("batch");
    assert!(
        matches!(outcomes[0], PlanOutcome::NoWindow),
        "{:?}",
        outcomes[0]
    );
    assert!(
        matches!(outcomes[1], PlanOutcome::Planned(_)),
        "{:?}",
        outcomes[1]
    );
    assert_eq!(
        store
            .deliveries_for_session(open)
            .await
            .expect("ledger")
            .len(),
        1
    );
    assert!(store
        .deliveries_for_session(closed)
        .await
        .expect("ledger")
        .is_empty());
    assert_eq!(
        store
            .window(open)
            .await
            .expect("window")
            .expect("open")
            .continuations,
        1
    );
    let again = store
        .plan_continuations(&[plan(open, &ia, &ka)], now)
        .await
        .expect("batch");
    assert!(
        matches!(again[0], PlanOutcome::AlreadyPlanned(_)),
        "a repeat is not a second plan"
    );
}

async fn batch_completion_is_a_compare_and_set(store: Store) {
    let now = "2026-11-30T04:00:00Z"
        .parse::<chrono::DateTime<chrono::Utc>>()
        .expect("a valid time");
    let (s1, s2) = (Uuid::new_v4(), Uuid::new_v4());
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    for (s, id, key) in [(s1, a, "k1"), (s2, b, "k2")] {
        store
            .approve(s, Route::Api, now, Duration::minutes(30))
            .await
            .expect("approve");
        store.link(s, &[id], now).await.expect("link");
        let ids = [id];
        store
            .plan_continuations(&[plan(s, &ids, key)], now)
            .await
            .expect("plan");
    }
    let mine = store
        .claim_deliveries("me", now, Duration::seconds(60), 1)
        .await
        .expect("claim");
    let theirs = store
        .claim_deliveries("them", now, Duration::seconds(60), 1)
        .await
        .expect("claim");
    // My claim, and their row under my token: only the first is mine.
    let forged = Claim {
        id: theirs[0].id,
        token: mine[0].claim_token.expect("token"),
    };
    let both = [mine[0].claim().expect("claimed"), forged];
    let done = store
        .complete_deliveries(&both, now)
        .await
        .expect("complete");
    assert_eq!(done, vec![mine[0].id], "only the rows my lease holds");
    assert_eq!(
        store
            .delivery(theirs[0].id)
            .await
            .expect("row")
            .expect("exists")
            .state,
        DeliveryState::Pending
    );
    let summary = store
        .session_summary(mine[0].session_id)
        .await
        .expect("summary");
    assert_eq!(summary.links[0].outcome, Some(Settlement::Continued));
    assert!(
        store
            .complete_deliveries(&both, now)
            .await
            .expect("again")
            .is_empty(),
        "marking twice changes nothing"
    );
}
