//! The console's reads on both backends: sessions listed once each, newest
//! first, a page at a time (kept by the triggers of migration 043, whoever
//! inserts the link or the window), filtered, and found by an execution id;
//! and the decisions and deliveries of one page of a session's links.

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{
    NewDecision, NoticeAbout, SessionFilter, SessionRow, Store, StoreError,
};
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    sessions_are_listed_once_newest_first_a_page_at_a_time,
    a_filter_lists_only_the_sessions_it_names,
    an_execution_id_finds_its_session,
    the_decisions_of_a_page_of_links_are_read_for_those_links_only,
    a_session_inserted_behind_the_store_is_listed
);

fn at(minute: i64) -> DateTime<Utc> {
    "2026-11-30T04:00:00Z"
        .parse::<DateTime<Utc>>()
        .expect("a valid time")
        + Duration::minutes(minute)
}

async fn page(store: &Store, filter: SessionFilter, now: DateTime<Utc>) -> Vec<Uuid> {
    let page = store
        .sessions_page(filter, None, 50, now)
        .await
        .expect("a page");
    page.items.iter().map(|r| r.session_id).collect()
}

async fn row(store: &Store, session: Uuid) -> SessionRow {
    store
        .session_row(session)
        .await
        .expect("read")
        .expect("listed")
}

async fn sessions_are_listed_once_newest_first_a_page_at_a_time(store: Store) {
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    store
        .link(a, &[Uuid::new_v4()], at(0))
        .await
        .expect("link a");
    // Approved before anything is linked: listed from its window.
    store
        .approve(
            b,
            "button".parse().expect("route"),
            at(1),
            Duration::minutes(30),
        )
        .await
        .expect("approve b");
    store
        .link(c, &[Uuid::new_v4()], at(2))
        .await
        .expect("link c");
    // Later links and approvals of a listed session neither move nor repeat it.
    store
        .link(a, &[Uuid::new_v4()], at(3))
        .await
        .expect("link a again");
    store
        .approve(
            a,
            "api".parse().expect("route"),
            at(3),
            Duration::minutes(30),
        )
        .await
        .expect("approve a");

    let first = store
        .sessions_page(SessionFilter::All, None, 2, at(4))
        .await
        .expect("first page");
    let ids: Vec<Uuid> = first.items.iter().map(|r| r.session_id).collect();
    assert_eq!(ids, [c, b]);
    let cursor = first.next.expect("a second page");
    let text = cursor.to_string();
    assert_eq!(
        text.parse::<nomos_continue::store::SessionCursor>()
            .expect("parse"),
        cursor
    );
    let second = store
        .sessions_page(SessionFilter::All, Some(cursor), 2, at(4))
        .await
        .expect("second page");
    assert_eq!(
        second
            .items
            .iter()
            .map(|r| r.session_id)
            .collect::<Vec<_>>(),
        [a]
    );
    assert_eq!(second.next, None);

    let a_row = row(&store, a).await;
    assert_eq!((a_row.first_seen_at, a_row.in_flight), (at(0), 2));
    assert!(a_row.window.is_some_and(|w| w.is_open_at(at(4))));
    assert_eq!(row(&store, b).await.in_flight, 0);
    assert_eq!(store.session_row(Uuid::new_v4()).await.expect("read"), None);
    let bad =
        "l1.0.00000000-0000-0000-0000-000000000000".parse::<nomos_continue::store::SessionCursor>();
    assert!(
        matches!(bad, Err(StoreError::InvalidValue { .. })),
        "{bad:?}"
    );
}

async fn a_filter_lists_only_the_sessions_it_names(store: Store) {
    let (open, denied, noticed) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let route = || "button".parse().expect("route");
    store
        .approve(open, route(), at(0), Duration::minutes(30))
        .await
        .expect("approve");
    store
        .approve(denied, route(), at(1), Duration::minutes(30))
        .await
        .expect("approve");
    store.deny(denied, at(2)).await.expect("deny");
    store
        .link(noticed, &[Uuid::new_v4()], at(3))
        .await
        .expect("link");
    store
        .append_notice(noticed, "the window closed", "n-1", at(4))
        .await
        .expect("notice");
    // A notice to the agent is a delivery: pending until it is sent.
    store
        .record_notice(
            NoticeAbout {
                session_id: open,
                execution_ids: &[],
                policy_revision: "r",
            },
            "d-1",
            "a status the policy could not classify",
            at(4),
        )
        .await
        .expect("notice delivery");

    assert_eq!(
        page(&store, SessionFilter::All, at(5)).await,
        [noticed, denied, open]
    );
    assert_eq!(page(&store, SessionFilter::Open, at(5)).await, [open]);
    // Open is judged at the time given: after its expiry, none is open.
    assert!(page(&store, SessionFilter::Open, at(31)).await.is_empty());
    assert_eq!(
        page(&store, SessionFilter::InFlight, at(5)).await,
        [noticed]
    );
    assert_eq!(page(&store, SessionFilter::Noticed, at(5)).await, [noticed]);
    assert!(page(&store, SessionFilter::Failed, at(5)).await.is_empty());
    assert_eq!(row(&store, noticed).await.notices, 1);
    assert_eq!(row(&store, open).await.pending, 1);
    assert!(matches!(
        "closed".parse::<SessionFilter>(),
        Err(StoreError::InvalidValue {
            field: "filter",
            ..
        })
    ));
}

async fn an_execution_id_finds_its_session(store: Store) {
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    store
        .link(session, &[execution], at(0))
        .await
        .expect("link");
    assert_eq!(
        store.session_of_execution(execution).await.expect("find"),
        Some(session)
    );
    assert_eq!(
        store
            .session_of_execution(Uuid::new_v4())
            .await
            .expect("find"),
        None
    );
}

async fn the_decisions_of_a_page_of_links_are_read_for_those_links_only(store: Store) {
    let session = Uuid::new_v4();
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    store
        .link(session, &[first, second], at(0))
        .await
        .expect("link");
    let decision = |execution: Uuid, action: &str| NewDecision {
        session_id: session,
        execution_id: execution,
        revision: "r".into(),
        input: "{}".into(),
        output: "{}".into(),
        action: action.into(),
        idempotency_key: None,
        detail: None,
    };
    store
        .record_decisions(
            &[
                decision(first, "waited"),
                decision(second, "dropped"),
                decision(first, "continued"),
            ],
            at(1),
        )
        .await
        .expect("record");
    let read = store
        .decisions_on(session, &[first], 10)
        .await
        .expect("read");
    let actions: Vec<&str> = read.iter().map(|d| d.decision.action.as_str()).collect();
    assert_eq!(actions, ["waited", "continued"]);
    assert!(store
        .decisions_on(Uuid::new_v4(), &[first], 10)
        .await
        .expect("read")
        .is_empty());
    assert!(store
        .deliveries_by_id(&[Uuid::new_v4()])
        .await
        .expect("read")
        .is_empty());
}

/// The runtime may insert links into the seed's table itself: the trigger
/// lists the session all the same.
async fn a_session_inserted_behind_the_store_is_listed(store: Store) {
    let session = Uuid::new_v4();
    nomos_continue::store::bench::add_executions(
        &store,
        &[(session, Uuid::new_v4()), (session, Uuid::new_v4())],
        "running",
        "",
        None,
        at(7),
    )
    .await
    .expect("insert");
    let listed = row(&store, session).await;
    assert_eq!((listed.first_seen_at, listed.in_flight), (at(7), 2));
    assert_eq!(page(&store, SessionFilter::All, at(8)).await, [session]);
}
