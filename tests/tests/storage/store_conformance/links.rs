//! Linking, the pending-links poll, snapshots and dropping.

use chrono::Duration;
use nomos_continue::classes::still_running;
use nomos_continue::store::{
    Backlog, DeliveryKind, DeliveryState, LinkState, Notice, Route, Store, StoredClass,
};
use uuid::Uuid;

use super::{at, ids, planned, ready_session, t0, NO_REVISION};

pub async fn link_is_idempotent(store: Store) {
    let session = Uuid::new_v4();
    let e = ids(2);
    let first = store
        .link(session, &[e[0], e[1], e[0]], t0())
        .await
        .unwrap();
    assert_eq!(first.linked, e);
    assert!(first.already_linked.is_empty() && first.already_linked_elsewhere.is_empty());
    let again = store.link(session, &e, at(5)).await.unwrap();
    assert!(again.linked.is_empty());
    assert_eq!(again.already_linked, e);
    let links = store.session_summary(session).await.unwrap().links;
    assert_eq!(links.len(), 2);
    assert!(links
        .iter()
        .all(|l| l.created_at == t0() && l.state() == LinkState::Pending));
}

pub async fn first_link_wins(store: Store) {
    let (s1, s2) = (Uuid::new_v4(), Uuid::new_v4());
    let e = ids(2);
    store.link(s1, &e[..1], t0()).await.unwrap();
    let out = store.link(s2, &e, at(1)).await.unwrap();
    assert_eq!(out.linked, vec![e[1]]);
    assert_eq!(out.already_linked_elsewhere, vec![(e[0], s1)]);
    let one = store.session_summary(s1).await.unwrap().links;
    let two = store.session_summary(s2).await.unwrap().links;
    assert_eq!(
        one.iter().map(|l| l.execution_id).collect::<Vec<_>>(),
        vec![e[0]]
    );
    assert_eq!(
        two.iter().map(|l| l.execution_id).collect::<Vec<_>>(),
        vec![e[1]]
    );
}

pub async fn pending_links_page_with_cursor(store: Store) {
    let session = Uuid::new_v4();
    store
        .approve(session, Route::Button, t0(), Duration::minutes(30))
        .await
        .unwrap();
    let e = ids(7);
    for (i, id) in e.iter().enumerate() {
        store.link(session, &[*id], at(i as i64)).await.unwrap();
    }
    for id in &e[..6] {
        store
            .upsert_execution_status(*id, "running", "", at(10), false)
            .await
            .unwrap();
    }
    // e0: planned (excluded); e5: dropped (excluded); e6: never reported (excluded).
    planned(&store, session, &e[..1], at(11)).await;
    let dropped = store
        .drop_links_seen(session, &e[5..6], "test", None, at(11), None)
        .await
        .unwrap();
    assert_eq!(dropped.dropped, vec![e[5]]);

    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .pending_links_ready(after, 2, NO_REVISION)
            .await
            .unwrap();
        assert!(page.len() <= 2);
        seen.extend(page.iter().map(|r| r.execution_id));
        match page.last() {
            Some(last) if page.len() == 2 => after = Some(last.cursor()),
            _ => break,
        }
    }
    assert_eq!(seen, e[1..5].to_vec());
    let first = &store
        .pending_links_ready(None, 1, NO_REVISION)
        .await
        .unwrap()[0];
    assert_eq!(
        (first.session_id, first.linked_at, first.status.as_str()),
        (session, at(1), "running")
    );
    assert_eq!(first.finished_at, None);
}

/// The poll leaves out links whose status the active revision classified
/// as running, so any number of them cannot starve a finished one behind
/// them; a status it has not classified, or classified terminal, is read.
pub async fn links_classified_running_are_not_polled(store: Store) {
    let session = Uuid::new_v4();
    let e = ids(4);
    for (i, id) in e.iter().enumerate() {
        store.link(session, &[*id], at(i as i64)).await.unwrap();
    }
    for (id, status) in e.iter().zip(["running", "running", "failed", "queued"]) {
        store
            .upsert_execution_status(*id, status, "", at(10), status == "failed")
            .await
            .unwrap();
    }
    let classes = [
        StoredClass {
            status: "running".into(),
            outcome: None,
            person: None,
        },
        StoredClass {
            status: "failed".into(),
            outcome: Some("failed".into()),
            person: None,
        },
    ];
    store
        .save_status_classes("rev-a", &classes, at(10))
        .await
        .unwrap();
    let polled = |revision: &'static str| {
        let store = store.clone();
        async move {
            store
                .pending_links_ready(None, 1, revision)
                .await
                .unwrap()
                .iter()
                .map(|r| r.execution_id)
                .collect::<Vec<_>>()
        }
    };
    // A page of one: the running links ahead no longer fill it.
    assert_eq!(polled("rev-a").await, vec![e[2]]);
    let all = store.pending_links_ready(None, 10, "rev-a").await.unwrap();
    assert_eq!(
        all.iter().map(|r| r.execution_id).collect::<Vec<_>>(),
        vec![e[2], e[3]],
        "the unclassified status is read"
    );
    // Another revision classified nothing: everything is read again.
    assert_eq!(polled("rev-b").await, vec![e[0]]);
}

/// The backlog gauges' source: finished executions whose links are not
/// settled, planned ones included, and when the oldest of them finished.
pub async fn backlog_counts_finished_unsettled_links(store: Store) {
    assert_eq!(store.backlog().await.unwrap(), Backlog::default());
    let (session, e) = ready_session(&store, 3).await; // finished at at(1)
    let running = Uuid::new_v4();
    store.link(session, &[running], t0()).await.unwrap();
    store
        .upsert_execution_status(running, "running", "", at(2), false)
        .await
        .unwrap();
    let late = Uuid::new_v4();
    store.link(Uuid::new_v4(), &[late], t0()).await.unwrap();
    store
        .upsert_execution_status(late, "failed", "", at(5), true)
        .await
        .unwrap();
    let backlog = store.backlog().await.unwrap();
    assert_eq!(
        (backlog.finished, backlog.oldest_finished_at),
        (4, Some(at(1)))
    );
    // Planned is still waiting; settled is not.
    planned(&store, session, &e[..1], at(6)).await;
    assert_eq!(store.backlog().await.unwrap().finished, 4);
    store
        .drop_links_seen(session, &e, "test", None, at(7), None)
        .await
        .unwrap();
    let backlog = store.backlog().await.unwrap();
    assert!(backlog.finished < 4, "{backlog:?}");
}

pub async fn session_snapshot_lists_still_running(store: Store) {
    let session = Uuid::new_v4();
    store
        .approve(session, Route::Chat, t0(), Duration::minutes(10))
        .await
        .unwrap();
    let e = ids(3);
    for (i, id) in e.iter().enumerate() {
        store.link(session, &[*id], at(i as i64)).await.unwrap();
    }
    store
        .upsert_execution_status(e[0], "completed", "ok", at(5), true)
        .await
        .unwrap();
    store
        .upsert_execution_status(e[1], "running", "", at(5), false)
        .await
        .unwrap();
    let terminal = |s: &str| s == "completed";
    let snap = store.session_snapshot(session, at(6)).await.unwrap();
    assert!(snap.window_open);
    assert_eq!(snap.continuations_in_window, 0);
    assert_eq!(still_running(&snap, terminal), vec![e[1], e[2]]);
    let statuses: Vec<_> = snap
        .unsettled
        .iter()
        .map(|l| (l.execution_id, l.execution_status.as_deref()))
        .collect();
    assert_eq!(
        statuses,
        [
            (e[0], Some("completed")),
            (e[1], Some("running")),
            (e[2], None)
        ]
    );
    let later = store
        .session_snapshot(session, t0() + Duration::minutes(10))
        .await
        .unwrap();
    assert!(!later.window_open, "expires_at is exclusive");
    assert!(later.window.is_some());
}

pub async fn drop_links_records_notice_once(store: Store) {
    let (session, e) = ready_session(&store, 3).await;
    let notice = Notice {
        idempotency_key: "notice-1",
        message: "execution finished outside the assent window",
        policy_revision: "rev",
    };
    let out = store
        .drop_links_seen(
            session,
            &e[..1],
            "assent window closed",
            Some(notice),
            at(5),
            None,
        )
        .await
        .unwrap();
    assert_eq!(out.dropped, vec![e[0]]);
    let notice_id = out.notice.expect("notice written");
    let again = store
        .drop_links_seen(
            session,
            &e[..1],
            "assent window closed",
            Some(notice),
            at(6),
            None,
        )
        .await
        .unwrap();
    assert!(
        again.dropped.is_empty() && again.notice.is_none(),
        "repeat writes nothing"
    );

    // A planned link is not dropped; another session's links are not touched.
    planned(&store, session, &e[1..2], at(7)).await;
    let other = store
        .drop_links_seen(Uuid::new_v4(), &e[2..], "x", None, at(8), None)
        .await
        .unwrap();
    assert!(other.dropped.is_empty());
    let planned_drop = store
        .drop_links_seen(session, &e[1..2], "x", None, at(8), None)
        .await
        .unwrap();
    assert!(planned_drop.dropped.is_empty());

    let d = store
        .delivery(notice_id)
        .await
        .unwrap()
        .expect("notice row");
    assert_eq!(
        (d.kind, d.state, d.session_id),
        (DeliveryKind::Notice, DeliveryState::Pending, session)
    );
    assert_eq!(d.execution_ids, vec![e[0]]);
    assert_eq!(d.note, notice.message);
    let summary = store.session_summary(session).await.unwrap();
    let states: Vec<LinkState> = summary.links.iter().map(|l| l.state()).collect();
    let by_id = |id: Uuid| {
        summary
            .links
            .iter()
            .position(|l| l.execution_id == id)
            .unwrap()
    };
    assert_eq!(states[by_id(e[0])], LinkState::Dropped);
    assert_eq!(
        summary.links[by_id(e[0])].reason.as_deref(),
        Some("assent window closed")
    );
    assert_eq!(summary.links[by_id(e[0])].continued_at, Some(at(5)));
    assert_eq!(states[by_id(e[1])], LinkState::Planned);
    assert_eq!(states[by_id(e[2])], LinkState::Pending);
    let notices = summary
        .deliveries
        .iter()
        .filter(|d| d.kind == DeliveryKind::Notice)
        .count();
    assert_eq!(notices, 1);
}
