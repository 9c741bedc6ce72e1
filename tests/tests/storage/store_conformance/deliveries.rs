//! Claims, leases, compare-and-set settlement and retries.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{
    AttemptOutcome, Claim, DeliveryState, FailedCall, LinkState, Notice, Route, Store,
};
use uuid::Uuid;

use super::{at, planned, ready_session};

const LEASE: Duration = Duration::seconds(30);

/// Records an accepted call under `claim`; true if it was recorded.
async fn complete(store: &Store, claim: Claim, now: DateTime<Utc>) -> bool {
    store.complete_deliveries(&[claim], now).await.unwrap() == vec![claim.id]
}

/// A failed call that retries at `next`, or gives up.
fn failed_call(error: &str, next: DateTime<Utc>, give_up: bool) -> FailedCall<'_> {
    FailedCall {
        error,
        next_attempt_at: next,
        shortage: false,
        give_up,
        notice: None,
    }
}

pub async fn claim_lease_expiry_reclaim(store: Store) {
    let (session, e) = ready_session(&store, 1).await;
    let d = planned(&store, session, &e, at(5)).await;
    assert!(
        store
            .claim_deliveries("w1", at(4), LEASE, 10)
            .await
            .unwrap()
            .is_empty(),
        "not due yet"
    );
    let got = store
        .claim_deliveries("w1", at(5), LEASE, 10)
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (
            got[0].id,
            got[0].lease_owner.as_deref(),
            got[0].lease_expires_at,
            got[0].claimed_at
        ),
        (d.id, Some("w1"), Some(at(35)), Some(at(5)))
    );
    let w1 = got[0].claim().expect("claimed");
    assert!(
        store
            .claim_deliveries("w2", at(34), LEASE, 10)
            .await
            .unwrap()
            .is_empty(),
        "leased"
    );
    // The lease lapses: another worker takes it over (the rescue).
    let got = store
        .claim_deliveries("w2", at(35), LEASE, 10)
        .await
        .unwrap();
    assert_eq!((got.len(), got[0].lease_owner.as_deref()), (1, Some("w2")));
    let w2 = got[0].claim().expect("claimed");
    assert_ne!(w1.token, w2.token, "every claim has its own token");
    assert_eq!(
        got[0].idempotency_key, d.idempotency_key,
        "redelivered with the same key"
    );
    assert!(!complete(&store, w1, at(36)).await, "w1 lost its lease");
    assert_eq!(
        store.delivery(d.id).await.unwrap().unwrap().state,
        DeliveryState::Pending
    );
    assert!(complete(&store, w2, at(37)).await);
    let done = store.delivery(d.id).await.unwrap().unwrap();
    assert_eq!(
        (done.state, done.delivered_at, done.lease_owner),
        (DeliveryState::Delivered, Some(at(37)), None)
    );
    let link = &store.session_summary(session).await.unwrap().links[0];
    assert_eq!(
        (link.state(), link.continued_at),
        (LinkState::Continued, Some(at(37)))
    );
    assert!(store
        .claim_deliveries("w3", at(100), LEASE, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(!complete(&store, w2, at(101)).await, "only once");
}

/// A claim whose `now` was read before its window was approved again (a
/// worker slow between reading the clock and claiming, or a replica whose
/// clock is behind the approver's) is stamped at the window's opening, not
/// before it: the claim read the approval, so it came after it.
pub async fn a_claim_is_stamped_no_earlier_than_its_window_opened(store: Store) {
    let (session, e) = ready_session(&store, 1).await;
    let d = planned(&store, session, &e, at(5)).await;
    store.deny(session, at(10)).await.unwrap().expect("denied");
    store
        .approve(session, Route::Button, at(20), Duration::minutes(30))
        .await
        .unwrap();
    let got = store
        .claim_deliveries("w1", at(15), LEASE, 10)
        .await
        .unwrap();
    assert_eq!(
        got.iter().map(|g| (g.id, g.claimed_at)).collect::<Vec<_>>(),
        vec![(d.id, Some(at(20)))]
    );
}

pub async fn lost_lease_changes_nothing(store: Store) {
    let (session, e) = ready_session(&store, 1).await;
    let d = planned(&store, session, &e, at(5)).await;
    let w1 = store
        .claim_deliveries("w1", at(5), LEASE, 10)
        .await
        .unwrap()[0]
        .claim()
        .expect("claimed");
    let before = store.delivery(d.id).await.unwrap();
    // Another claim's token, even under the same worker id, changes nothing.
    let intruder = Claim {
        id: d.id,
        token: Uuid::new_v4(),
    };
    assert!(!complete(&store, intruder, at(6)).await);
    let out = store
        .fail_delivery_attempt(intruder, &failed_call("boom", at(7), false), at(6))
        .await
        .unwrap();
    assert_eq!(out, AttemptOutcome::LeaseLost);
    assert!(store
        .renew_leases(&[intruder], at(6), LEASE)
        .await
        .unwrap()
        .is_empty());
    assert!(!store.release_lease(intruder, at(6)).await.unwrap());
    assert_eq!(
        store.delivery(d.id).await.unwrap(),
        before,
        "nothing changed"
    );
    assert_eq!(
        store.session_summary(session).await.unwrap().links[0].state(),
        LinkState::Planned
    );
    // Renewal by the holder moves the expiry, nothing else.
    assert_eq!(
        store.renew_leases(&[w1], at(20), LEASE).await.unwrap(),
        vec![d.id]
    );
    let renewed = store.delivery(d.id).await.unwrap().unwrap();
    assert_eq!(
        (renewed.lease_expires_at, renewed.claimed_at, renewed.claims),
        (Some(at(50)), Some(at(5)), 1)
    );
    assert!(
        store
            .claim_deliveries("w2", at(40), LEASE, 10)
            .await
            .unwrap()
            .is_empty(),
        "the renewed lease holds past the original expiry"
    );
    // Graceful release: claimable at once by another worker.
    assert!(store.release_lease(w1, at(6)).await.unwrap());
    let got = store
        .claim_deliveries("w2", at(6), LEASE, 10)
        .await
        .unwrap();
    assert_eq!(got.iter().map(|d| d.id).collect::<Vec<_>>(), vec![d.id]);
}

pub async fn failed_attempts_give_up_and_settle(store: Store) {
    let (session, e) = ready_session(&store, 2).await;
    let d = planned(&store, session, &e[..1], at(5)).await;
    let mut now = at(5);
    for attempt in 1..=3 {
        let got = store.claim_deliveries("w", now, LEASE, 10).await.unwrap();
        assert_eq!(got.len(), 1, "attempt {attempt} claimable");
        let claim = got[0].claim().expect("claimed");
        let next = now + Duration::seconds(10);
        let out = store
            .fail_delivery_attempt(
                claim,
                &failed_call("503 from agent", next, attempt == 3),
                now,
            )
            .await
            .unwrap();
        if attempt < 3 {
            assert_eq!(
                out,
                AttemptOutcome::Retry {
                    attempts: attempt,
                    next_attempt_at: next
                }
            );
            assert!(
                store
                    .claim_deliveries("w", next - Duration::seconds(1), LEASE, 10)
                    .await
                    .unwrap()
                    .is_empty(),
                "backoff"
            );
        } else {
            assert_eq!(out, AttemptOutcome::GaveUp { attempts: 3 });
        }
        now = next;
    }
    let row = store.delivery(d.id).await.unwrap().unwrap();
    assert_eq!(
        (
            row.state,
            row.attempts,
            row.last_error.as_deref(),
            row.first_failed_at
        ),
        (
            DeliveryState::Failed,
            3,
            Some("503 from agent"),
            Some(at(5))
        )
    );
    assert!(
        store
            .claim_deliveries("w", at(1000), LEASE, 10)
            .await
            .unwrap()
            .is_empty(),
        "failed is final"
    );
    let link = store.session_summary(session).await.unwrap().links;
    let failed = link.iter().find(|l| l.execution_id == e[0]).unwrap();
    assert_eq!(
        (
            failed.state(),
            failed.reason.as_deref(),
            failed.continued_at
        ),
        (LinkState::Failed, Some("503 from agent"), Some(at(25)))
    );
    // The session is no longer busy.
    planned(&store, session, &e[1..], at(40)).await;
    // A permanent error gives up at once.
    let claim = store
        .claim_deliveries("w", at(40), LEASE, 10)
        .await
        .unwrap()[0]
        .claim()
        .expect("claimed");
    let out = store
        .fail_delivery_attempt(claim, &failed_call("400", at(42), true), at(41))
        .await
        .unwrap();
    assert_eq!(out, AttemptOutcome::GaveUp { attempts: 1 });
}

pub async fn release_expired_leases_counts(store: Store) {
    let (s1, e1) = ready_session(&store, 1).await;
    let (s2, e2) = ready_session(&store, 1).await;
    planned(&store, s1, &e1, at(5)).await;
    planned(&store, s2, &e2, at(5)).await;
    assert_eq!(
        store
            .claim_deliveries("w", at(5), Duration::seconds(10), 10)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(store.release_expired_leases(at(14)).await.unwrap(), 0);
    assert_eq!(store.release_expired_leases(at(15)).await.unwrap(), 2);
    let ledger = store.deliveries_for_session(s1).await.unwrap();
    assert_eq!(
        (ledger[0].lease_owner.clone(), ledger[0].attempts),
        (None, 0),
        "a rescue is not an attempt"
    );
    assert_eq!(
        store
            .claim_deliveries("w2", at(15), LEASE, 10)
            .await
            .unwrap()
            .len(),
        2
    );
}

pub async fn concurrent_claims_never_overlap(store: Store) {
    const N: usize = 40;
    let (session, e) = ready_session(&store, N).await;
    for (i, id) in e.iter().enumerate() {
        let key = format!("notice-{i}");
        let notice = Notice {
            idempotency_key: &key,
            message: "dropped",
            policy_revision: "rev",
        };
        let out = store
            .drop_links_seen(session, &[*id], "test", Some(notice), at(5), None)
            .await
            .unwrap();
        assert!(out.notice.is_some());
    }
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let got = store
                        .claim_deliveries(&format!("w{w}"), at(10), LEASE, 3)
                        .await
                        .unwrap();
                    if got.is_empty() {
                        break mine;
                    }
                    mine.extend(got.into_iter().map(|d| d.id));
                }
            })
        })
        .collect();
    let mut all: Vec<Uuid> = Vec::new();
    for w in workers {
        all.extend(w.await.unwrap());
    }
    let unique: HashSet<Uuid> = all.iter().copied().collect();
    assert_eq!(
        all.len(),
        N,
        "every row claimed exactly once: {} claims",
        all.len()
    );
    assert_eq!(unique.len(), N);
}
