//! The set-based plan on both backends: a whole pass's plans in one call,
//! each answered as it would have been alone (first of a session wins, a
//! repeated key is the same row, every refusal writes nothing), and the
//! batched session snapshots equal the one-by-one ones.

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{ContinuationPlan, FreshClaim, PlanOutcome, Route, Store};
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    a_pass_of_plans_is_answered_plan_by_plan,
    snapshots_in_one_call_equal_one_by_one,
    planning_can_claim_what_it_writes,
    a_window_opened_after_the_pass_read_the_clock_is_not_claimed_before_it
);

fn now() -> DateTime<Utc> {
    "2026-11-30T04:00:00Z".parse().expect("a valid time")
}

fn plan<'a>(session: Uuid, ids: &'a [Uuid], key: &'a str, cap: i32) -> ContinuationPlan<'a> {
    ContinuationPlan {
        hard_cap: cap,
        ..super::store_batch::plan(session, ids, key)
    }
}

/// An approved session with `n` linked executions.
async fn session(store: &Store, n: usize) -> (Uuid, Vec<Uuid>) {
    let s = Uuid::new_v4();
    let ids: Vec<Uuid> = (0..n).map(|_| Uuid::new_v4()).collect();
    store
        .approve(s, Route::Api, now(), Duration::minutes(30))
        .await
        .expect("approve");
    store.link(s, &ids, now()).await.expect("link");
    (s, ids)
}

async fn a_pass_of_plans_is_answered_plan_by_plan(store: Store) {
    let mut sessions = Vec::new();
    for _ in 0..40 {
        sessions.push(session(&store, 2).await);
    }
    let keys: Vec<String> = (0..40).map(|i| format!("key-{i}")).collect();
    let (unapproved, lone) = (Uuid::new_v4(), [Uuid::new_v4()]);
    store.link(unapproved, &lone, now()).await.expect("link");
    let (capped, capped_ids) = session(&store, 1).await;
    let (thief, _) = session(&store, 1).await;
    let mut plans: Vec<ContinuationPlan> = sessions
        .iter()
        .zip(&keys)
        .map(|((s, ids), key)| plan(*s, &ids[..1], key, 50))
        .collect();
    // A second plan of session 0 (another key, its other link): busy.
    let second = [sessions[0].1[1]];
    plans.push(plan(sessions[0].0, &second, "key-second", 50));
    // Session 1's key again: the same row, not a second one.
    plans.push(plan(sessions[1].0, &sessions[1].1[..1], &keys[1], 50));
    plans.push(plan(unapproved, &lone, "key-unapproved", 50));
    plans.push(plan(capped, &capped_ids, "key-capped", 0));
    // Another session naming session 4's other link: taken.
    let foreign = [sessions[4].1[1]];
    plans.push(plan(thief, &foreign, "key-foreign", 50));
    let outcomes = store
        .plan_continuations(&plans, now())
        .await
        .expect("one batch");
    assert_eq!(outcomes.len(), plans.len());

    let mut planned = Vec::new();
    for (i, outcome) in outcomes[..40].iter().enumerate() {
        let PlanOutcome::Planned(d) = outcome else {
            panic!("plan {i}: {outcome:?}");
        };
        assert_eq!(d.session_id, sessions[i].0);
        assert_eq!(d.execution_ids, sessions[i].1[..1].to_vec());
        assert_eq!(d.idempotency_key, keys[i]);
        planned.push(d.clone());
    }
    assert_eq!(
        outcomes[40],
        PlanOutcome::SessionBusy {
            in_flight: planned[0].id
        }
    );
    assert_eq!(
        outcomes[41],
        PlanOutcome::AlreadyPlanned(planned[1].clone())
    );
    assert_eq!(outcomes[42], PlanOutcome::NoWindow);
    assert_eq!(outcomes[43], PlanOutcome::CapReached { continuations: 0 });
    assert_eq!(
        outcomes[44],
        PlanOutcome::LinkTaken {
            unavailable: foreign.to_vec()
        }
    );

    for (i, (s, ids)) in sessions.iter().enumerate() {
        let window = store.window(*s).await.expect("read").expect("window");
        assert_eq!(window.continuations, 1, "session {i} counted once");
        let ledger = store.deliveries_for_session(*s).await.expect("ledger");
        assert_eq!(ledger.len(), 1, "session {i} has one continuation");
        let snapshot = store.session_snapshot(*s, now()).await.expect("snapshot");
        let pointed: Vec<(Uuid, Option<Uuid>)> = snapshot
            .unsettled
            .iter()
            .map(|l| (l.execution_id, l.delivery_id))
            .collect();
        assert!(pointed.contains(&(ids[0], Some(ledger[0].id))));
        assert!(
            pointed.contains(&(ids[1], None)),
            "the other link is untouched"
        );
    }
    for refused in [unapproved, capped, thief] {
        assert!(store
            .deliveries_for_session(refused)
            .await
            .expect("ledger")
            .is_empty());
    }
    let capped_window = store.window(capped).await.expect("read").expect("window");
    assert_eq!(capped_window.continuations, 0, "a refusal counts nothing");

    // The whole pass again: every plan is the row already written.
    let again = store
        .plan_continuations(&plans[..40], now())
        .await
        .expect("again");
    for (outcome, first) in again.iter().zip(&planned) {
        assert_eq!(outcome, &PlanOutcome::AlreadyPlanned(first.clone()));
    }
}

async fn snapshots_in_one_call_equal_one_by_one(store: Store) {
    let (a, _) = session(&store, 3).await;
    let (b, _) = session(&store, 1).await;
    let unlinked = Uuid::new_v4();
    let lone = Uuid::new_v4();
    store
        .link(lone, &[Uuid::new_v4()], now())
        .await
        .expect("link");
    let later = now() + Duration::minutes(40);
    let asked = [b, a, unlinked, lone, a];
    let batch = store.session_snapshots(&asked, later).await.expect("batch");
    let order: Vec<Uuid> = batch.iter().map(|s| s.session_id).collect();
    assert_eq!(order, vec![b, a, unlinked, lone], "input order, once each");
    for snapshot in &batch {
        let alone = store
            .session_snapshot(snapshot.session_id, later)
            .await
            .expect("one");
        assert_eq!(snapshot, &alone);
    }
    assert_eq!(batch[1].unsettled.len(), 3);
    assert!(!batch[1].window_open, "closed 40 minutes later");
    assert!(batch[2].window.is_none() && batch[2].unsettled.is_empty());
}

/// The first `limit` continuations written (in session order) are claimed
/// in the plan's own transaction, under one token, as a claim would; the
/// rest are left for any worker to claim.
async fn planning_can_claim_what_it_writes(store: Store) {
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(session(&store, 1).await);
    }
    sessions.sort();
    let keys = ["k0", "k1", "k2"];
    let plans: Vec<ContinuationPlan> = sessions
        .iter()
        .zip(keys)
        .map(|((s, ids), key)| plan(*s, ids, key, 50))
        .collect();
    let claim = FreshClaim {
        worker_id: "planner",
        lease: Duration::seconds(6),
        limit: 2,
    };
    let outcomes = store
        .plan_and_claim(&plans, now(), Some(claim))
        .await
        .expect("plan and claim");
    let rows: Vec<_> = outcomes
        .iter()
        .map(|o| match o {
            PlanOutcome::Planned(d) => d.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    for d in &rows[..2] {
        assert_eq!(d.lease_owner.as_deref(), Some("planner"));
        assert_eq!(d.lease_expires_at, Some(now() + Duration::seconds(6)));
        assert_eq!((d.claims, d.claimed_at), (1, Some(now())));
        assert!(d.claim().is_some());
    }
    assert_eq!(rows[0].claim_token, rows[1].claim_token, "one token");
    assert_eq!(rows[2].lease_owner, None);
    assert_eq!((rows[2].claims, rows[2].claim()), (0, None));
    // Another worker finds only the unclaimed one due.
    let other = store
        .claim_deliveries("other", now(), Duration::seconds(6), 10)
        .await
        .expect("claim");
    let taken: Vec<_> = other.iter().map(|d| d.id).collect();
    assert_eq!(taken, vec![rows[2].id]);
}

/// A pass reads the clock, then a denied window is approved again before the
/// plan runs: the plan still writes the continuation (the window is open),
/// but claims only the one whose window had opened by the pass's `now`, so
/// no claim is stamped at an instant before its window opened.
async fn a_window_opened_after_the_pass_read_the_clock_is_not_claimed_before_it(store: Store) {
    let (early, early_ids) = session(&store, 1).await;
    let (late, late_ids) = session(&store, 1).await;
    let stale = now() + Duration::seconds(10);
    store
        .deny(late, now() + Duration::seconds(5))
        .await
        .expect("deny");
    let reopened = stale + Duration::seconds(1);
    store
        .approve(late, Route::Api, reopened, Duration::minutes(30))
        .await
        .expect("approve again");
    let plans = [
        plan(early, &early_ids, "k-early", 50),
        plan(late, &late_ids, "k-late", 50),
    ];
    let claim = FreshClaim {
        worker_id: "planner",
        lease: Duration::seconds(6),
        limit: 10,
    };
    let outcomes = store
        .plan_and_claim(&plans, stale, Some(claim))
        .await
        .expect("plan and claim");
    let [PlanOutcome::Planned(e), PlanOutcome::Planned(l)] = &outcomes[..] else {
        panic!("both are planned: {outcomes:?}");
    };
    assert_eq!(
        (e.lease_owner.as_deref(), e.claimed_at),
        (Some("planner"), Some(stale))
    );
    assert_eq!(
        (l.lease_owner.as_deref(), l.claimed_at, l.claims),
        (None, None, 0)
    );
    // The next claim, at a later now, takes it.
    let next = store
        .claim_deliveries("other", reopened, Duration::seconds(6), 10)
        .await
        .expect("claim");
    assert_eq!(
        next.iter()
            .map(|d| (d.id, d.claimed_at))
            .collect::<Vec<_>>(),
        vec![(l.id, Some(reopened))]
    );
}
