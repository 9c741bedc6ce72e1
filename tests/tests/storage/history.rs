//! The retention of settled history on both backends, through the
//! retention task on an injected clock: settled ledger rows, ended windows
//! of idle sessions, late reports and sessions left with nothing go past
//! `--history-retention`; settled links past `--link-retention`, which is
//! also the horizon before which a finished execution is never linked
//! again. What is still in flight is kept whatever its age, and what a
//! purge forgets never continues an execution a second time.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use nomos_continue::clock::ManualClock;
use nomos_continue::maintenance::{HistoryPurged, HistoryRetention, Retention};
use nomos_continue::metrics::Metrics;
use nomos_continue::store::testing::count_rows;
use nomos_continue::store::{Poll, Route, Store};
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    settled_history_goes_and_what_is_in_flight_stays,
    a_forgotten_execution_is_never_continued_again,
    with_a_runtimes_executions_nothing_of_them_is_written,
);

fn t0() -> DateTime<Utc> {
    "2026-10-01T04:00:00Z".parse().expect("a valid time")
}

const DAY: StdDuration = StdDuration::from_secs(24 * 3600);

/// A retention task keeping `history` of history and `links` of links.
fn retention_task(
    store: &Store,
    now: DateTime<Utc>,
    history: Option<StdDuration>,
    links: Option<StdDuration>,
) -> (Retention, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(now));
    let retention = Retention::new(store.clone(), clock.clone(), Arc::new(Metrics::new()), None)
        .with_history(HistoryRetention { history, links });
    (retention, clock)
}

async fn count(store: &Store, table: &str) -> i64 {
    count_rows(store, table).await.expect("count")
}

/// A notice about `session` recorded at `at`, its delivery ended
/// (`settled`) with its operator copy, or left pending.
async fn notice(store: &Store, session: Uuid, at: DateTime<Utc>, settled: bool) -> Uuid {
    let id = super::retention::notice_in(store, session, at, "the window closed").await;
    if settled {
        for sql in [
            format!(
                "UPDATE nomos_deliveries SET state = 'delivered', delivered_at = updated_at \
                 WHERE id = '{id}'"
            ),
            format!(
                "UPDATE nomos_operator_notices SET state = 'delivered', \
                 delivered_at = updated_at WHERE notice_id = '{id}'"
            ),
        ] {
            store.execute_raw(&sql).await.expect("settle");
        }
    }
    id
}

async fn settled_history_goes_and_what_is_in_flight_stays(store: Store) {
    let (idle, busy, recent) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    for session in [idle, busy] {
        store
            .approve(session, Route::Api, t0(), Duration::minutes(30))
            .await
            .expect("approve");
    }
    store
        .approve(
            recent,
            Route::Api,
            t0() + Duration::days(20),
            Duration::minutes(30),
        )
        .await
        .expect("approve");
    // A link still running keeps its session's window.
    store
        .link(busy, &[Uuid::new_v4()], t0())
        .await
        .expect("link");
    let old_settled = notice(&store, idle, t0(), true).await;
    // Ended for the agent, still pending on the operator's channel.
    let old_operator_pending = notice(&store, idle, t0(), true).await;
    store
        .execute_raw(&format!(
            "UPDATE nomos_operator_notices SET state = 'pending', delivered_at = NULL \
             WHERE notice_id = '{old_operator_pending}'"
        ))
        .await
        .expect("operator copy pending");
    let old_pending = notice(&store, idle, t0(), false).await;
    let recent_settled = notice(&store, recent, t0() + Duration::days(20), true).await;
    // A report after the terminal one is kept as a late report.
    let (late_old, late_recent) = (Uuid::new_v4(), Uuid::new_v4());
    for (id, at) in [(late_old, t0()), (late_recent, t0() + Duration::days(20))] {
        store
            .upsert_execution_status(id, "completed", "ok", at, true)
            .await
            .expect("terminal");
        let late = store
            .upsert_execution_status(id, "running", "", at, false)
            .await
            .expect("late");
        assert!(!late.applied);
    }

    // A session push configuration that stopped linking a month ago goes;
    // one that stopped linking yesterday stays.
    let pushing = Uuid::new_v4();
    let (stale, fresh) = ("a".repeat(64), "b".repeat(64));
    for (token, until) in [(&stale, t0()), (&fresh, t0() + Duration::days(30))] {
        (store.mint_session_push(pushing, token, until, t0()))
            .await
            .expect("mint");
    }

    let now = t0() + Duration::days(31);
    let (retention, _clock) = retention_task(&store, now, Some(30 * DAY), None);
    let purged = retention.purge_history().await.expect("purge");
    assert_eq!(
        purged,
        HistoryPurged {
            ledger: 1,
            windows: 1,
            late_reports: 1,
            // The idle session still has its pending notice.
            sessions: 0,
            links: 0,
            session_push: 1,
        }
    );
    let kept = |token| store.session_push(pushing, token);
    assert_eq!(kept(&stale).await.expect("read"), None);
    assert!(kept(&fresh).await.expect("read").is_some());
    assert_eq!(store.delivery(old_settled).await.expect("read"), None);
    for kept in [old_pending, old_operator_pending, recent_settled] {
        assert!(
            store.delivery(kept).await.expect("read").is_some(),
            "{kept}"
        );
    }
    assert_eq!(store.window(idle).await.expect("window"), None);
    for kept in [busy, recent] {
        assert!(
            store.window(kept).await.expect("window").is_some(),
            "{kept}"
        );
    }
    assert!(store.late_reports(late_old).await.expect("late").is_empty());
    assert_eq!(
        store.late_reports(late_recent).await.expect("late").len(),
        1
    );
    // The settled notice's operator copy went with it; the others stayed.
    assert_eq!(count(&store, "nomos_operator_notices").await, 3);

    // Once the pending notice has ended too, the idle session has nothing
    // left, and its row leaves the session list.
    store
        .execute_raw(&format!(
            "UPDATE nomos_deliveries SET state = 'failed' WHERE id = '{old_pending}'"
        ))
        .await
        .expect("end");
    store
        .execute_raw("UPDATE nomos_operator_notices SET state = 'failed' WHERE state = 'pending'")
        .await
        .expect("end");
    let purged = retention.purge_history().await.expect("again");
    // The session list is kept where links are (no link retention here).
    assert_eq!((purged.ledger, purged.sessions), (2, 0), "{purged:?}");
    let (with_links, _) = retention_task(&store, now, Some(30 * DAY), Some(30 * DAY));
    assert_eq!(
        with_links
            .purge_history()
            .await
            .expect("links too")
            .sessions,
        1
    );
    assert_eq!(
        retention.purge_history().await.expect("a third time"),
        HistoryPurged::default()
    );
    assert!(store.window(busy).await.expect("window").is_some());

    // Retention off keeps everything.
    let (off, _) = retention_task(&store, now + Duration::days(365), None, None);
    assert_eq!(
        off.purge_history().await.expect("off"),
        HistoryPurged::default()
    );
}

/// Links `execution` to a new session at t0, reports it `completed` and
/// settles the link (dropped); returns the session.
async fn settled(store: &Store, execution: Uuid) -> Uuid {
    let session = Uuid::new_v4();
    store.link(session, &[execution], t0()).await.expect("link");
    store
        .upsert_execution_status(execution, "completed", "ok", t0(), true)
        .await
        .expect("report");
    let dropped = store
        .drop_links_seen(session, &[execution], "done", None, t0(), None)
        .await
        .expect("settle");
    assert_eq!(dropped.dropped, [execution]);
    session
}

/// Ready links of any session: what the worker's next poll would plan.
async fn ready(store: &Store) -> Vec<Uuid> {
    store
        .poll_links(Poll::Sweep, None, 100, "no-revision")
        .await
        .expect("poll")
        .into_iter()
        .map(|l| l.execution_id)
        .collect()
}

async fn a_forgotten_execution_is_never_continued_again(store: Store) {
    let (old, young, running) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    settled(&store, old).await;
    // Settled too, but its execution finished later, after the horizon.
    let session = Uuid::new_v4();
    store.link(session, &[young], t0()).await.expect("link");
    store
        .upsert_execution_status(young, "completed", "ok", t0() + Duration::hours(2), true)
        .await
        .expect("report");
    store
        .drop_links_seen(session, &[young], "done", None, t0(), None)
        .await
        .expect("settle");
    // Settled before it finished: a link its execution's row cannot refuse.
    store.link(session, &[running], t0()).await.expect("link");
    store
        .drop_links_seen(session, &[running], "done", None, t0(), None)
        .await
        .expect("settle");

    // The first pass only records the horizon (an hour before now); the
    // next one purges behind it.
    let now = t0() + Duration::hours(3);
    let (retention, clock) = retention_task(&store, now, None, Some(StdDuration::from_secs(7200)));
    assert_eq!(retention.purge_history().await.expect("purge").links, 0);
    clock.advance(Duration::seconds(15));
    assert_eq!(retention.purge_history().await.expect("purge").links, 1);
    assert_eq!(count(&store, "nomos_plan_executions").await, 2);
    // The execution's row stays, its result emptied (the file and the
    // table are nomos-continue's own here).
    assert!(store.executions_are_ours().await.expect("ours"));
    assert_eq!(count(&store, "executions").await, 2);
    let kept = store.executions(&[old]).await.expect("read");
    assert_eq!(kept[0].result, "", "{kept:?}");

    // A tool result naming it again, from any replica: not linked,
    // reported as linked before.
    let again = Uuid::new_v4();
    let outcome = store.link(again, &[old], now).await.expect("link again");
    assert!(outcome.linked.is_empty(), "{outcome:?}");
    assert_eq!(outcome.already_linked, [old]);
    // A late report: terminal is final, so it is recorded and not applied.
    let late = store
        .upsert_execution_status(old, "completed", "again", now, true)
        .await
        .expect("late report");
    assert!(!late.applied);
    assert!(ready(&store).await.is_empty(), "something is ready again");
    // The links the horizon cannot vouch for are kept: first link wins.
    let kept = store
        .link(again, &[young, running], now)
        .await
        .expect("link the kept ones");
    assert_eq!(kept.already_linked_elsewhere.len(), 2, "{kept:?}");
}

async fn with_a_runtimes_executions_nothing_of_them_is_written(store: Store) {
    let old = Uuid::new_v4();
    settled(&store, old).await;
    let horizon = t0() + Duration::hours(1);
    assert_eq!(
        store.advance_link_horizon(horizon).await.expect("advance"),
        None
    );
    // The horizon only moves forward.
    assert_eq!(
        store.advance_link_horizon(t0()).await.expect("advance"),
        Some(horizon)
    );
    let purged = store.purge_links(horizon, 100, false).await.expect("purge");
    assert_eq!(purged, 1);
    assert_eq!(count(&store, "nomos_plan_executions").await, 0);
    let kept = store.executions(&[old]).await.expect("read");
    assert_eq!(kept[0].result, "ok", "a runtime's result was written");
    let outcome = store
        .link(Uuid::new_v4(), &[old], t0() + Duration::hours(3))
        .await
        .expect("link again");
    assert_eq!(outcome.already_linked, [old], "{outcome:?}");
}

/// A new SQLite file gives the pages a purge freed back, beyond a tenth
/// kept for the next inserts.
#[tokio::test]
async fn an_sqlite_file_gives_freed_pages_back() {
    let (store, dir) = nomos_continue_tests::db::fresh_sqlite().await;
    let file = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "db"))
        .expect("the database file");
    let session = Uuid::new_v4();
    for chunk in 0..20 {
        let ids: Vec<Uuid> = (0..500).map(|_| Uuid::new_v4()).collect();
        store
            .link(session, &ids, t0() + Duration::seconds(chunk))
            .await
            .expect("link");
    }
    store
        .execute_raw("DELETE FROM nomos_plan_executions")
        .await
        .expect("delete");
    store
        .execute_raw("PRAGMA wal_checkpoint(TRUNCATE)")
        .await
        .expect("checkpoint");
    let before = std::fs::metadata(&file).expect("size").len();
    let freed = store.give_back_space().await.expect("give back");
    assert!(freed > 0, "nothing freed");
    store
        .execute_raw("PRAGMA wal_checkpoint(TRUNCATE)")
        .await
        .expect("checkpoint");
    let after = std::fs::metadata(&file).expect("size").len();
    assert!(after < before / 2, "{before} -> {after} bytes");
    assert_eq!(store.give_back_space().await.expect("again"), 0);
}
