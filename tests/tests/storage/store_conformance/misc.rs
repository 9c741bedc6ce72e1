//! Bad input, windows, turns, policies, execution status.

use std::str::FromStr;

use chrono::Duration;
use nomos_continue::policy::Revision;
use nomos_continue::store::{parse_uuid, PolicyHead, Role, Route, Store, StoreError, WAKE_CHANNEL};
use uuid::Uuid;

use super::{at, planned, read_execution, ready_session, t0};

pub async fn malformed_input_is_typed(store: Store) {
    for bad in [
        "",
        "not-a-uuid",
        "3f2504e0-4f89-11d3-9a0c-0305e82c330",
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301ff",
    ] {
        assert!(
            matches!(parse_uuid(bad), Err(StoreError::InvalidUuid(s)) if s == bad),
            "{bad:?} should be InvalidUuid"
        );
    }
    let id = parse_uuid("3F2504E0-4F89-11D3-9A0C-0305E82C3301").expect("valid");
    assert_eq!(id.to_string(), "3f2504e0-4f89-11d3-9a0c-0305e82c3301");

    let err = Store::connect("mysql://user:secret@host/db")
        .await
        .unwrap_err();
    assert!(matches!(&err, StoreError::UnsupportedUrl(s) if s == "mysql"));
    assert!(
        !err.to_string().contains("secret"),
        "URL password leaked: {err}"
    );

    assert!(matches!(
        Route::from_str("telepathy"),
        Err(StoreError::InvalidValue { field: "route", .. })
    ));
    assert!(matches!(
        Role::from_str("operator"),
        Err(StoreError::InvalidValue { .. })
    ));

    let exec = Uuid::new_v4();
    let err = store
        .upsert_execution_status(exec, "  ", "", t0(), false)
        .await;
    assert!(matches!(
        err,
        Err(StoreError::InvalidValue {
            field: "status",
            ..
        })
    ));
    assert_eq!(read_execution(&store, exec).await, None, "nothing written");

    let plan = nomos_continue::store::ContinuationPlan {
        session_id: Uuid::new_v4(),
        execution_ids: &[],
        note: "n",
        policy_revision: "r",
        idempotency_key: "k",
        hard_cap: 20,
    };
    assert!(matches!(
        store.plan_continuations(&[plan], t0()).await,
        Err(StoreError::InvalidValue {
            field: "execution_ids",
            ..
        })
    ));
}

pub async fn unknown_session_is_empty(store: Store) {
    let session = Uuid::new_v4();
    let summary = store.session_summary(session).await.unwrap();
    assert!(summary.is_empty());
    assert_eq!(summary.session_id, session);
    let snap = store.session_snapshot(session, t0()).await.unwrap();
    assert_eq!(snap.window, None);
    assert!(!snap.window_open);
    assert_eq!(snap.continuations_in_window, 0);
    assert!(snap.unsettled.is_empty());
    assert!(store.turns(session).await.unwrap().is_empty());
    assert!(store
        .deliveries_for_session(session)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .pending_links_for_session(session)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.delivery(Uuid::new_v4()).await.unwrap(), None);
}

pub async fn approval_extension_keeps_opened_at_and_count(store: Store) {
    let (session, execs) = ready_session(&store, 1).await;
    planned(&store, session, &execs, at(60)).await;
    let w = store
        .approve(session, Route::Chat, at(300), Duration::minutes(30))
        .await
        .unwrap();
    assert_eq!(w.opened_at, t0(), "extension keeps opened_at");
    assert_eq!(w.continuations, 1, "extension keeps the count");
    assert_eq!(w.expires_at, at(300) + Duration::minutes(30));
    assert_eq!(w.route, Route::Chat);
    // A shorter approval never shortens the window.
    let w2 = store
        .approve(session, Route::Api, at(400), Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(w2.expires_at, w.expires_at);
    assert_eq!(store.window(session).await.unwrap(), Some(w2));
}

pub async fn approval_after_closed_window_opens_new_one(store: Store) {
    let (session, execs) = ready_session(&store, 1).await;
    planned(&store, session, &execs, at(10)).await;
    let denied = store.deny(session, at(60)).await.unwrap().expect("closed");
    assert_eq!(denied.closed_at, Some(at(60)));
    assert_eq!(denied.expires_at, at(60));
    assert!(!denied.is_open_at(at(60)));
    let w = store
        .approve(session, Route::Button, at(120), Duration::minutes(10))
        .await
        .unwrap();
    assert_eq!(
        (w.opened_at, w.continuations, w.closed_at),
        (at(120), 0, None)
    );
    assert_eq!(w.expires_at, at(120) + Duration::minutes(10));
    // After expiry (not denied) an approval also starts afresh.
    let w = store
        .approve(
            session,
            Route::Api,
            at(120) + Duration::minutes(10),
            Duration::minutes(5),
        )
        .await
        .unwrap();
    assert_eq!(w.opened_at, at(120) + Duration::minutes(10));
    assert!(w.is_open_at(w.opened_at));
}

pub async fn deny_without_open_window_is_noop(store: Store) {
    let session = Uuid::new_v4();
    assert_eq!(
        store.deny(session, t0()).await.unwrap(),
        None,
        "never approved"
    );
    assert_eq!(
        store.window(session).await.unwrap(),
        None,
        "deny wrote nothing"
    );
    store
        .approve(session, Route::Button, t0(), Duration::minutes(1))
        .await
        .unwrap();
    let first = store
        .deny(session, at(10))
        .await
        .unwrap()
        .expect("open window closes");
    assert_eq!(
        store.deny(session, at(20)).await.unwrap(),
        None,
        "already closed"
    );
    assert_eq!(store.window(session).await.unwrap(), Some(first));
    let other = Uuid::new_v4();
    store
        .approve(other, Route::Button, t0(), Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(
        store.deny(other, at(120)).await.unwrap(),
        None,
        "already expired"
    );
}

pub async fn approval_duration_is_bounded(store: Store) {
    let session = Uuid::new_v4();
    for d in [
        Duration::minutes(31),
        Duration::seconds(1801),
        Duration::zero(),
        Duration::seconds(-5),
    ] {
        assert!(matches!(
            store.approve(session, Route::Api, t0(), d).await,
            Err(StoreError::InvalidDuration(x)) if x == d
        ));
    }
    assert_eq!(
        store.window(session).await.unwrap(),
        None,
        "nothing written"
    );
    let w = store
        .approve(session, Route::Api, t0(), Duration::minutes(30))
        .await
        .expect("exactly 30 minutes is allowed");
    assert_eq!(w.expires_at, t0() + Duration::minutes(30));
}

pub async fn turns_keep_order(store: Store) {
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let said = [
        (Role::System, "soul"),
        (Role::User, "create a container"),
        (Role::Assistant, "started"),
    ];
    for (role, text) in said {
        store.append_turn(a, role, text, t0()).await.unwrap();
        store
            .append_turn(b, Role::User, "other", t0())
            .await
            .unwrap();
    }
    let turns = store.turns(a).await.unwrap();
    let got: Vec<(Role, &str)> = turns.iter().map(|t| (t.role, t.content.as_str())).collect();
    assert_eq!(got, said);
    assert!(turns.windows(2).all(|w| w[0].id < w[1].id));
    assert!(turns
        .iter()
        .all(|t| t.session_id == a && t.created_at == t0()));
    assert_eq!(store.turns(b).await.unwrap().len(), 3);
}

pub async fn policy_revisions_and_activation(store: Store) {
    let (a, b) = (b"policy a".to_vec(), b"policy b".to_vec());
    let (ha, hb) = (Revision::of(&a).0, Revision::of(&b).0);
    assert_eq!(store.active_policy().await.unwrap(), None);
    assert_eq!(store.active_policy_head().await.unwrap(), None);
    assert!(matches!(
        store.activate_policy(&ha, t0()).await,
        Err(StoreError::UnknownPolicy(h)) if h == ha
    ));
    assert!(store
        .save_policy_revision(&ha, &a, "p", "1", t0())
        .await
        .unwrap());
    assert!(
        !store
            .save_policy_revision(&ha, &a, "p", "1", at(1))
            .await
            .unwrap(),
        "same bytes once"
    );
    assert_eq!(
        store.active_policy().await.unwrap(),
        None,
        "saving does not activate"
    );
    store.activate_policy(&ha, at(2)).await.unwrap();
    let active = store.active_policy().await.unwrap().expect("active");
    assert_eq!(
        (
            active.hash.as_str(),
            active.wasm.as_slice(),
            active.activated_at
        ),
        (ha.as_str(), a.as_slice(), at(2))
    );
    assert!(store
        .save_policy_revision(&hb, &b, "p", "2", at(3))
        .await
        .unwrap());
    assert_eq!(
        store.active_policy_head().await.unwrap().map(|h| h.hash),
        Some(ha.clone()),
        "the head names the active revision without its bytes"
    );
    store.activate_policy(&hb, at(4)).await.unwrap();
    let active = store.active_policy().await.unwrap().expect("active");
    assert_eq!((active.hash, active.version), (hb.clone(), "2".to_owned()));
    assert_eq!(
        store.active_policy_head().await.unwrap(),
        Some(PolicyHead {
            hash: hb.clone(),
            signature: None
        })
    );
    let revs = store.policy_revisions().await.unwrap();
    assert_eq!(
        revs.iter().map(|r| r.hash.clone()).collect::<Vec<_>>(),
        vec![hb, ha]
    );
}

/// The activation log behind `POST /v1/policy/rollback`: the target is the
/// last revision activated other than the active one, and the swap is a
/// compare-and-set on the active revision.
pub async fn policy_rollback_target_and_compare_and_set(store: Store) {
    let (a, b) = (b"policy a".to_vec(), b"policy b".to_vec());
    let (ha, hb) = (Revision::of(&a).0, Revision::of(&b).0);
    assert_eq!(
        store.rollback_target().await.unwrap(),
        None,
        "nothing active"
    );
    store
        .save_policy_revision(&ha, &a, "p", "1", t0())
        .await
        .unwrap();
    store
        .save_policy_revision(&hb, &b, "p", "2", t0())
        .await
        .unwrap();
    store.activate_policy(&ha, at(1)).await.unwrap();
    assert_eq!(
        store.rollback_target().await.unwrap(),
        None,
        "nothing before it"
    );
    store.activate_policy(&hb, at(2)).await.unwrap();
    let (current, target) = store.rollback_target().await.unwrap().expect("target");
    assert_eq!(
        (current.as_str(), target.hash.as_str()),
        (hb.as_str(), ha.as_str())
    );
    assert_eq!(target.wasm, a);

    // Decided against b, but a was activated meanwhile: nothing changes.
    store.activate_policy(&ha, at(3)).await.unwrap();
    assert!(!store.replace_active_policy(&hb, &ha, at(4)).await.unwrap());
    // Decided against the active revision: swapped and logged, so the next
    // rollback undoes this one.
    assert!(store.replace_active_policy(&ha, &hb, at(5)).await.unwrap());
    let active = store.active_policy().await.unwrap().expect("active");
    assert_eq!(
        (active.hash.as_str(), active.activated_at),
        (hb.as_str(), at(5))
    );
    let (_, target) = store.rollback_target().await.unwrap().expect("target");
    assert_eq!(target.hash, ha);
}

pub async fn status_for_unknown_execution_creates_it(store: Store) {
    let exec = Uuid::new_v4();
    assert_eq!(read_execution(&store, exec).await, None);
    let e = store
        .upsert_execution_status(exec, " running ", "", t0(), false)
        .await
        .unwrap()
        .execution;
    assert_eq!((e.status.as_str(), e.finished_at), ("running", None));
    let first = store
        .upsert_execution_status(exec, "failed", "ssh: connection refused", at(5), true)
        .await
        .unwrap();
    assert!(first.applied);
    let repeat = store
        .upsert_execution_status(exec, "failed", "ssh: connection refused", at(9), true)
        .await
        .unwrap();
    assert!(!repeat.applied, "terminal is final, even for a repeat");
    assert_eq!(
        repeat.execution, first.execution,
        "first terminal report wins"
    );
    assert_eq!(repeat.execution.finished_at, Some(at(5)));
    assert_eq!(read_execution(&store, exec).await, Some(first.execution));
}

pub async fn status_upsert_wakes_listeners(store: Store) {
    store.notify_wake().await.expect("notify is always allowed");
    let Some(pool) = store.pg_pool() else {
        return; // SQLite: the wake-up is in-process, not the store's job.
    };
    let mut listener = sqlx::postgres::PgListener::connect_with(pool)
        .await
        .unwrap();
    listener.listen(WAKE_CHANNEL).await.unwrap();
    store
        .upsert_execution_status(Uuid::new_v4(), "completed", "", t0(), true)
        .await
        .unwrap();
    let note = tokio::time::timeout(std::time::Duration::from_secs(30), listener.recv())
        .await
        .expect("a notification within the bound")
        .unwrap();
    assert_eq!(note.channel(), WAKE_CHANNEL);
}
