//! A notice's operator copy (queued by the trigger, claimed, recorded by
//! compare-and-set, ended `none`/`expired`), what counts as reaching no
//! one, the operator's drop of a pending delivery, and stuck executions.

use chrono::Duration;
use nomos_continue::store::{
    DeliveryKind, DeliveryState, NoticeAbout, OperatorDrop, OperatorOutcome, OperatorState, Route,
    Store, OPERATOR_DROP_REASON,
};
use uuid::Uuid;

use super::{at, ids, planned, ready_session, t0};

const LEASE: Duration = Duration::seconds(60);

/// Writes a notice about a fresh session; returns its ledger id.
async fn notice(store: &Store, key: &str) -> Uuid {
    let session = Uuid::new_v4();
    let execs = ids(1);
    let about = NoticeAbout {
        session_id: session,
        execution_ids: &execs,
        policy_revision: "rev",
    };
    assert!(store
        .record_notice(about, key, "something to tell", t0())
        .await
        .unwrap());
    let row = store
        .deliveries_for_session(session)
        .await
        .unwrap()
        .into_iter()
        .find(|d| d.idempotency_key == key)
        .expect("the notice row");
    row.id
}

/// Ends the agent's copy of each notice in `failed` as failed, as a worker
/// giving up, and records the others' as delivered.
async fn agent_answers(store: &Store, failed: &[Uuid], delivered: &[Uuid]) {
    let claimed = store
        .claim_deliveries("w", at(1), LEASE, 100)
        .await
        .unwrap();
    for d in &claimed {
        let claim = d.claim().expect("claim");
        if failed.contains(&d.id) {
            let call = nomos_continue::store::FailedCall {
                error: "HTTP 500",
                next_attempt_at: at(2),
                shortage: false,
                give_up: true,
                notice: None,
            };
            store
                .fail_delivery_attempt(claim, &call, at(1))
                .await
                .unwrap();
        } else if delivered.contains(&d.id) {
            store.complete_deliveries(&[claim], at(1)).await.unwrap();
        }
    }
}

pub async fn every_notice_is_queued_for_the_operator(store: Store) {
    let id = notice(&store, "n-queued").await;
    let copy = store.operator_copy(id).await.unwrap().expect("a copy");
    assert_eq!((copy.state, copy.attempts), (OperatorState::Pending, 0));
    assert_eq!(store.pending_operator_notices().await.unwrap(), 1);
    // A continuation gets no copy.
    let (session, e) = ready_session(&store, 1).await;
    let d = planned(&store, session, &e, at(1)).await;
    assert_eq!(store.operator_copy(d.id).await.unwrap(), None);
}

pub async fn operator_copies_are_claimed_once_and_recorded_by_their_claim(store: Store) {
    let id = notice(&store, "n-claim").await;
    let first = store
        .claim_operator_notices("a", at(0), LEASE, 10)
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(
        (
            first[0].claim.id,
            first[0].message.as_str(),
            first[0].agent_state
        ),
        (id, "something to tell", DeliveryState::Pending)
    );
    assert!(
        store
            .claim_operator_notices("b", at(30), LEASE, 10)
            .await
            .unwrap()
            .is_empty(),
        "held by a's lease"
    );
    // a stalls; b takes it over after the lease.
    let second = store
        .claim_operator_notices("b", at(61), LEASE, 10)
        .await
        .unwrap();
    assert_eq!(second.len(), 1);
    let retry = OperatorOutcome::Retry {
        at: at(100),
        error: "HTTP 500".into(),
    };
    assert!(
        !store
            .finish_operator_notice(first[0].claim, &OperatorOutcome::Delivered, at(62))
            .await
            .unwrap(),
        "a's late record is refused"
    );
    assert!(store
        .finish_operator_notice(second[0].claim, &retry, at(62))
        .await
        .unwrap());
    assert!(store
        .claim_operator_notices("b", at(99), LEASE, 10)
        .await
        .unwrap()
        .is_empty());
    let third = store
        .claim_operator_notices("b", at(100), LEASE, 10)
        .await
        .unwrap();
    assert_eq!(third[0].attempts, 1);
    assert!(store
        .finish_operator_notice(third[0].claim, &OperatorOutcome::Delivered, at(101))
        .await
        .unwrap());
    let copy = store.operator_copy(id).await.unwrap().expect("a copy");
    assert_eq!(
        (
            copy.state,
            copy.attempts,
            copy.last_error.as_deref(),
            copy.delivered_at.is_some()
        ),
        (OperatorState::Delivered, 2, Some("HTTP 500"), true)
    );
}

pub async fn a_notice_reaches_no_one_only_when_both_channels_failed(store: Store) {
    let delivered = notice(&store, "n-op-delivered").await;
    let unrouted = notice(&store, "n-op-none").await;
    let agent_ok = notice(&store, "n-agent-ok").await;
    agent_answers(&store, &[delivered, unrouted], &[agent_ok]).await;
    assert_eq!(
        store.undelivered_notices().await.unwrap(),
        0,
        "copies still pending"
    );
    let copies = store
        .claim_operator_notices("n", at(2), LEASE, 10)
        .await
        .unwrap();
    let mine = copies
        .iter()
        .find(|c| c.claim.id == delivered)
        .expect("copy");
    assert_eq!(mine.agent_state, DeliveryState::Failed);
    assert_eq!(mine.agent_error.as_deref(), Some("HTTP 500"));
    store
        .finish_operator_notice(mine.claim, &OperatorOutcome::Delivered, at(3))
        .await
        .unwrap();
    // The others' leases lapse; a process with no channel ends them `none`.
    let ended = store
        .end_operator_notices(OperatorState::None, None, at(120))
        .await
        .unwrap();
    assert_eq!(ended, 2);
    assert_eq!(
        store.undelivered_notices().await.unwrap(),
        1,
        "only the notice neither the agent nor the operator got"
    );
    assert_eq!(
        store
            .operator_copy(unrouted)
            .await
            .unwrap()
            .expect("copy")
            .state,
        OperatorState::None
    );
}

pub async fn old_copies_expire_rather_than_page_late(store: Store) {
    let id = notice(&store, "n-old").await;
    let ended = store
        .end_operator_notices(OperatorState::Expired, Some(t0()), at(5))
        .await
        .unwrap();
    assert_eq!(ended, 0, "written at t0, not before it");
    let ended = store
        .end_operator_notices(OperatorState::Expired, Some(at(1)), at(5))
        .await
        .unwrap();
    assert_eq!(ended, 1);
    assert_eq!(
        store.operator_copy(id).await.unwrap().expect("copy").state,
        OperatorState::Expired
    );
}

pub async fn the_operator_drops_a_pending_continuation_with_one_notice(store: Store) {
    let (session, e) = ready_session(&store, 2).await;
    let d = planned(&store, session, &e, at(1)).await;
    // In flight under a live lease: refused.
    let claimed = store.claim_deliveries("w", at(1), LEASE, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(
        store.drop_delivery(d.id, at(2)).await.unwrap(),
        OperatorDrop::InFlight
    );
    // The lease lapses (its worker died): the drop goes through.
    let dropped = match store.drop_delivery(d.id, at(100)).await.unwrap() {
        OperatorDrop::Dropped(d) => d,
        other => panic!("expected a drop, got {other:?}"),
    };
    assert_eq!(dropped.state, DeliveryState::Dropped);
    assert_eq!(dropped.last_error.as_deref(), Some(OPERATOR_DROP_REASON));
    let summary = store.session_summary(session).await.unwrap();
    for link in &summary.links {
        assert_eq!(link.reason.as_deref(), Some(OPERATOR_DROP_REASON));
    }
    let notices: Vec<_> = summary
        .deliveries
        .iter()
        .filter(|d| d.kind == DeliveryKind::Notice)
        .collect();
    assert_eq!(notices.len(), 1, "one notice");
    assert_eq!(notices[0].execution_ids.len(), 2);
    // Again: nothing more.
    assert_eq!(
        store.drop_delivery(d.id, at(101)).await.unwrap(),
        OperatorDrop::NotPending(DeliveryState::Dropped)
    );
    assert_eq!(
        store.drop_delivery(Uuid::new_v4(), at(101)).await.unwrap(),
        OperatorDrop::NotFound
    );
    // The dropped continuation's executions are not planned again.
    let again = store
        .claim_deliveries("w", at(200), LEASE, 10)
        .await
        .unwrap();
    assert!(
        again.iter().all(|x| x.kind == DeliveryKind::Notice),
        "{again:?}"
    );
}

pub async fn executions_running_past_the_threshold_are_stuck(store: Store) {
    let session = Uuid::new_v4();
    store
        .approve(session, Route::Button, t0(), Duration::minutes(30))
        .await
        .unwrap();
    let [running, silent, finished] = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    store
        .link(session, &[running, silent, finished], t0())
        .await
        .unwrap();
    store
        .upsert_execution_status(running, "running", "", at(60), false)
        .await
        .unwrap();
    store
        .upsert_execution_status(finished, "completed", "ok", at(60), true)
        .await
        .unwrap();
    let after = Duration::minutes(10);
    assert!(
        store
            .stuck_executions(at(599), after)
            .await
            .unwrap()
            .is_empty(),
        "not yet"
    );
    let stuck = store.stuck_executions(at(600), after).await.unwrap();
    let mut got: Vec<Uuid> = stuck.iter().map(|s| s.execution_id).collect();
    got.sort();
    let mut want = vec![running, silent];
    want.sort();
    assert_eq!(got, want, "the finished one is not stuck");
    let r = stuck
        .iter()
        .find(|s| s.execution_id == running)
        .expect("running");
    assert_eq!(
        (r.status.as_deref(), r.noticed, r.closing_noticed),
        (Some("running"), false, false)
    );
    assert_eq!(r.window_expires_at, t0() + Duration::minutes(30));
    // Its notice is seen as written.
    let about = NoticeAbout {
        session_id: session,
        execution_ids: std::slice::from_ref(&running),
        policy_revision: "host",
    };
    let key = format!("{}{running}", nomos_continue::store::STUCK_KEY);
    store
        .record_notice(about, &key, "stuck", at(600))
        .await
        .unwrap();
    let stuck = store.stuck_executions(at(601), after).await.unwrap();
    let r = stuck
        .iter()
        .find(|s| s.execution_id == running)
        .expect("running");
    assert!(r.noticed && !r.closing_noticed);
    // Outside an open window nothing is stuck.
    store.deny(session, at(700)).await.unwrap();
    assert!(store
        .stuck_executions(at(701), after)
        .await
        .unwrap()
        .is_empty());
}
