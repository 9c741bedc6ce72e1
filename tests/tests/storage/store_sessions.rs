//! The console's reads on both backends: sessions listed once each, newest
//! first, a page at a time (kept by the triggers of migration 018, whoever
//! inserts the link or the window), filtered, and found by an execution id;
//! and the steps of one page of a session's links, long texts cut.

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{
    Judged, NewDecision, NoticeAbout, Recorded, SessionFilter, SessionRow, Store, StoreError,
    SHOWN_CHARS,
};
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    sessions_are_listed_once_newest_first_a_page_at_a_time,
    a_filter_lists_only_the_sessions_it_names,
    an_execution_id_finds_its_session,
    a_timeline_page_reads_its_links_steps_with_long_texts_cut,
    the_open_filter_pages_like_the_others,
    a_session_inserted_behind_the_store_is_listed
);

fn at(minute: i64) -> DateTime<Utc> {
    "2026-11-30T04:00:00Z"
        .parse::<DateTime<Utc>>()
        .expect("a valid time")
        + Duration::minutes(minute)
}

async fn approve(store: &Store, session: Uuid, minute: i64) {
    let route = "button".parse().expect("a route");
    store
        .approve(session, route, at(minute), Duration::minutes(30))
        .await
        .expect("approve");
}

async fn link(store: &Store, session: Uuid, executions: &[Uuid], minute: i64) {
    store
        .link(session, executions, at(minute))
        .await
        .expect("link");
}

fn judged(now: DateTime<Utc>) -> Judged {
    Judged::at(now, std::time::Duration::from_secs(600))
}

async fn page(store: &Store, filter: SessionFilter, now: DateTime<Utc>) -> Vec<Uuid> {
    let page = store
        .sessions_page(filter, None, None, 50, judged(now))
        .await
        .expect("a page");
    page.items.iter().map(|r| r.session_id).collect()
}

async fn row(store: &Store, session: Uuid) -> SessionRow {
    store
        .session_row(session, judged(at(10)))
        .await
        .expect("read")
        .expect("listed")
}

async fn sessions_are_listed_once_newest_first_a_page_at_a_time(store: Store) {
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    link(&store, a, &[Uuid::new_v4()], 0).await;
    // Approved before anything is linked: listed from its window.
    approve(&store, b, 1).await;
    link(&store, c, &[Uuid::new_v4()], 2).await;
    // Later links and approvals of a listed session neither move nor repeat it.
    link(&store, a, &[Uuid::new_v4()], 3).await;
    approve(&store, a, 3).await;

    let first = store
        .sessions_page(SessionFilter::All, None, None, 2, judged(at(4)))
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
        .sessions_page(SessionFilter::All, None, Some(cursor), 2, judged(at(4)))
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
    assert_eq!(
        store
            .session_row(Uuid::new_v4(), judged(at(4)))
            .await
            .expect("read"),
        None
    );
    let bad =
        "l1.0.00000000-0000-0000-0000-000000000000".parse::<nomos_continue::store::SessionCursor>();
    assert!(
        matches!(bad, Err(StoreError::InvalidValue { .. })),
        "{bad:?}"
    );
}

async fn a_filter_lists_only_the_sessions_it_names(store: Store) {
    let (open, denied, noticed) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    approve(&store, open, 0).await;
    approve(&store, denied, 1).await;
    store.deny(denied, at(2)).await.expect("deny");
    link(&store, noticed, &[Uuid::new_v4()], 3).await;
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
    // A notice is a delivery of kind notice; chatWith's copy of one in its
    // history is not counted again.
    assert_eq!(page(&store, SessionFilter::Noticed, at(5)).await, [open]);
    assert!(page(&store, SessionFilter::Failed, at(5)).await.is_empty());
    assert_eq!(row(&store, noticed).await.notices, 0);
    assert_eq!(row(&store, open).await.notices, 1);
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
    link(&store, session, &[execution], 0).await;
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

async fn a_timeline_page_reads_its_links_steps_with_long_texts_cut(store: Store) {
    let session = Uuid::new_v4();
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    link(&store, session, &[first, second], 0).await;
    // "é" is two bytes and one character: the cut counts characters.
    let long: String = "é".repeat(SHOWN_CHARS as usize + 10);
    let decision = |execution: Uuid, action: &str, input: &str| NewDecision {
        session_id: session,
        execution_id: execution,
        revision: "r".into(),
        recorded: Recorded::Whole {
            input: input.into(),
            output: "{}".into(),
        },
        action: action.into(),
        idempotency_key: None,
        detail: None,
    };
    store
        .record_decisions(
            &[
                decision(first, "waited", &long),
                decision(second, "dropped", "{}"),
                decision(first, "continued", "{}"),
            ],
            at(1),
        )
        .await
        .expect("record");
    let read = store
        .shown_decisions(session, &[first], 10)
        .await
        .expect("read");
    let actions: Vec<(&str, usize, i64)> = read
        .iter()
        .map(|d| {
            let n = &d.row.decision;
            let Recorded::Whole { input, .. } = &n.recorded else {
                panic!("written whole")
            };
            (n.action.as_str(), input.chars().count(), d.left_out)
        })
        .collect();
    assert_eq!(
        actions,
        [("waited", SHOWN_CHARS as usize, 10), ("continued", 2, 0)]
    );
    assert!(store
        .shown_decisions(Uuid::new_v4(), &[first], 10)
        .await
        .expect("read")
        .is_empty());

    store
        .upsert_execution_status(first, "failed", &long, at(2), true)
        .await
        .expect("report");
    store
        .upsert_execution_status(first, "completed", "ok", at(3), true)
        .await
        .expect("late report");
    let executions = store
        .shown_executions(&[first, second])
        .await
        .expect("read");
    assert_eq!(executions.len(), 1, "the second has not reported");
    // The start and, apart, the end: here the ten characters after the
    // start, so nothing is left out between them.
    assert_eq!(
        (
            executions[0].row.result.chars().count(),
            executions[0].tail.chars().count(),
            executions[0].left_out
        ),
        (SHOWN_CHARS as usize, 10, 0)
    );
    let late = store.shown_late_reports(&[first], 10).await.expect("read");
    assert_eq!(
        late.iter()
            .map(|r| (r.row.status.as_str(), r.left_out))
            .collect::<Vec<_>>(),
        [("completed", 0)]
    );
    assert!(store
        .shown_deliveries(&[Uuid::new_v4()])
        .await
        .expect("read")
        .is_empty());
    let ledger = store.shown_ledger(session, None, 10).await.expect("read");
    assert!(ledger.items.is_empty() && ledger.next.is_none());
}

/// Only the open filter binds the time, so its keyset placeholders come
/// one later: a second page of it must still follow the first.
async fn the_open_filter_pages_like_the_others(store: Store) {
    let (older, newer) = (Uuid::new_v4(), Uuid::new_v4());
    for (session, minute) in [(older, 0), (newer, 1)] {
        approve(&store, session, minute).await;
    }
    let first = store
        .sessions_page(SessionFilter::Open, None, None, 1, judged(at(2)))
        .await
        .expect("first page");
    assert_eq!(
        first.items.iter().map(|r| r.session_id).collect::<Vec<_>>(),
        [newer]
    );
    let second = store
        .sessions_page(SessionFilter::Open, None, first.next, 1, judged(at(2)))
        .await
        .expect("second page");
    assert_eq!(
        second
            .items
            .iter()
            .map(|r| r.session_id)
            .collect::<Vec<_>>(),
        [older]
    );
    assert_eq!(second.next, None);
}

/// The runtime may insert links into the seed's table itself: the trigger
/// lists the session all the same.
async fn a_session_inserted_behind_the_store_is_listed(store: Store) {
    let session = Uuid::new_v4();
    nomos_continue::store::testing::add_executions(
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
