//! plan_continuations: the happy path and every refusal, each leaving no
//! partial state behind.

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{
    ContinuationPlan, DeliveryKind, DeliveryState, LinkState, PlanOutcome, Route, Store,
};
use uuid::Uuid;

use super::{at, ids, planned, ready_session, t0, NO_REVISION};

async fn plan_with(
    store: &Store,
    session: Uuid,
    execs: &[Uuid],
    key: &str,
    cap: i32,
    now: DateTime<Utc>,
) -> PlanOutcome {
    let plan = ContinuationPlan {
        session_id: session,
        execution_ids: execs,
        note: "note",
        policy_revision: "rev",
        idempotency_key: key,
        hard_cap: cap,
    };
    store
        .plan_continuations(&[plan], now)
        .await
        .expect("plan")
        .remove(0)
}

/// Claims everything due and completes it as worker "w".
async fn deliver_all(store: &Store, now: DateTime<Utc>) {
    for d in store
        .claim_deliveries("w", now, Duration::seconds(30), 100)
        .await
        .unwrap()
    {
        let claim = d.claim().expect("claimed");
        assert_eq!(
            store.complete_deliveries(&[claim], now).await.unwrap(),
            vec![d.id]
        );
    }
}

/// Asserts the session's count, link states and ledger size.
async fn assert_state(
    store: &Store,
    session: Uuid,
    count: i32,
    links: &[(Uuid, LinkState)],
    ledger: usize,
) {
    let summary = store.session_summary(session).await.unwrap();
    assert_eq!(
        summary.window.map_or(0, |w| w.continuations),
        count,
        "window count"
    );
    for (id, state) in links {
        let link = summary
            .links
            .iter()
            .find(|l| l.execution_id == *id)
            .expect("link");
        assert_eq!(link.state(), *state, "state of {id}");
    }
    assert_eq!(summary.deliveries.len(), ledger, "ledger rows");
}

pub async fn plan_happy_path(store: Store) {
    let (session, e) = ready_session(&store, 2).await;
    let PlanOutcome::Planned(d) = plan_with(&store, session, &e, "key-1", 20, at(5)).await else {
        panic!("expected Planned");
    };
    assert_eq!(
        (d.kind, d.state, d.attempts),
        (DeliveryKind::Continuation, DeliveryState::Pending, 0)
    );
    assert_eq!(
        (
            d.session_id,
            d.execution_ids.clone(),
            d.idempotency_key.as_str()
        ),
        (session, e.clone(), "key-1")
    );
    assert_eq!(
        (d.next_attempt_at, d.created_at, d.lease_owner.clone()),
        (at(5), at(5), None)
    );
    assert_state(
        &store,
        session,
        1,
        &[(e[0], LinkState::Planned), (e[1], LinkState::Planned)],
        1,
    )
    .await;
    let links = store.session_summary(session).await.unwrap().links;
    assert!(links.iter().all(|l| l.delivery_id == Some(d.id)));
    assert!(store
        .pending_links_ready(None, 10, NO_REVISION)
        .await
        .unwrap()
        .is_empty());
    // The same key again is the same plan, not a second one.
    assert_eq!(
        plan_with(&store, session, &e, "key-1", 20, at(6)).await,
        PlanOutcome::AlreadyPlanned(d)
    );
    assert_state(&store, session, 1, &[], 1).await;
}

pub async fn plan_session_busy(store: Store) {
    let (session, e) = ready_session(&store, 2).await;
    let first = planned(&store, session, &e[..1], at(5)).await;
    let out = plan_with(&store, session, &e[1..], "key-2", 20, at(6)).await;
    assert_eq!(
        out,
        PlanOutcome::SessionBusy {
            in_flight: first.id
        }
    );
    assert_state(
        &store,
        session,
        1,
        &[(e[0], LinkState::Planned), (e[1], LinkState::Pending)],
        1,
    )
    .await;
    // Once delivered, the next one can be planned.
    deliver_all(&store, at(7)).await;
    planned(&store, session, &e[1..], at(8)).await;
    assert_state(
        &store,
        session,
        2,
        &[(e[0], LinkState::Continued), (e[1], LinkState::Planned)],
        2,
    )
    .await;
}

pub async fn plan_link_taken(store: Store) {
    let (session, e) = ready_session(&store, 1).await;
    let (other, x) = ready_session(&store, 1).await;
    let unknown = Uuid::new_v4();
    let out = plan_with(&store, session, &[e[0], x[0]], "k1", 20, at(5)).await;
    assert_eq!(
        out,
        PlanOutcome::LinkTaken {
            unavailable: vec![x[0]]
        }
    );
    let out = plan_with(&store, session, &[unknown, e[0]], "k2", 20, at(5)).await;
    assert_eq!(
        out,
        PlanOutcome::LinkTaken {
            unavailable: vec![unknown]
        }
    );
    assert_state(&store, session, 0, &[(e[0], LinkState::Pending)], 0).await;
    assert_state(&store, other, 0, &[(x[0], LinkState::Pending)], 0).await;
    // A settled link cannot be planned again.
    planned(&store, session, &e, at(6)).await;
    deliver_all(&store, at(7)).await;
    let out = plan_with(&store, session, &e, "k3", 20, at(8)).await;
    assert_eq!(
        out,
        PlanOutcome::LinkTaken {
            unavailable: e.clone()
        }
    );
    assert_state(&store, session, 1, &[(e[0], LinkState::Continued)], 1).await;
}

pub async fn plan_window_closed(store: Store) {
    let session = Uuid::new_v4();
    let e = ids(1);
    store.link(session, &e, t0()).await.unwrap();
    assert_eq!(
        plan_with(&store, session, &e, "k", 20, at(1)).await,
        PlanOutcome::NoWindow
    );
    store
        .approve(session, Route::Api, t0(), Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(
        plan_with(&store, session, &e, "k", 20, at(60)).await,
        PlanOutcome::WindowClosed
    );
    store
        .approve(session, Route::Api, at(100), Duration::minutes(5))
        .await
        .unwrap();
    store.deny(session, at(110)).await.unwrap().expect("denied");
    assert_eq!(
        plan_with(&store, session, &e, "k", 20, at(111)).await,
        PlanOutcome::WindowClosed
    );
    assert_state(&store, session, 0, &[(e[0], LinkState::Pending)], 0).await;
}

pub async fn plan_cap_reached(store: Store) {
    let (session, e) = ready_session(&store, 2).await;
    assert!(matches!(
        plan_with(&store, session, &e[..1], "k1", 1, at(5)).await,
        PlanOutcome::Planned(_)
    ));
    deliver_all(&store, at(6)).await;
    let out = plan_with(&store, session, &e[1..], "k2", 1, at(7)).await;
    assert_eq!(out, PlanOutcome::CapReached { continuations: 1 });
    assert_state(
        &store,
        session,
        1,
        &[(e[0], LinkState::Continued), (e[1], LinkState::Pending)],
        1,
    )
    .await;
}

pub async fn concurrent_plans_one_wins(store: Store) {
    let (session, e) = ready_session(&store, 8).await;
    let tasks: Vec<_> = e
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let (store, id) = (store.clone(), *id);
            tokio::spawn(async move {
                plan_with(&store, session, &[id], &format!("k{i}"), 20, at(5)).await
            })
        })
        .collect();
    let mut planned_count = 0;
    for t in tasks {
        match t.await.unwrap() {
            PlanOutcome::Planned(_) => planned_count += 1,
            PlanOutcome::SessionBusy { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(planned_count, 1, "one continuation in flight per session");
    assert_state(&store, session, 1, &[], 1).await;
}
