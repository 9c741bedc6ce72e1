//! The operator's first screen on both backends: the overview strip's
//! numbers (`Store::pulse`) read from a ledger whose every time is known,
//! the pickup percentiles against a known set of pickups, and each
//! session status with its precedence, its filter, last reason and last
//! activity.

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::testing::set_operator_state;
use nomos_continue::store::{
    ContinuationPlan, FailedCall, Judged, Notice, PlanOutcome, Route, SessionFilter, SessionStatus,
    Store, StoredClass,
};
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    the_overview_counts_the_ledger_at_the_time_given,
    pickup_percentiles_are_the_nearest_ranks_of_the_last_hour,
    each_status_holds_alone_and_the_most_urgent_wins,
);

fn now() -> DateTime<Utc> {
    "2026-12-01T03:00:00Z"
        .parse::<DateTime<Utc>>()
        .expect("a valid time")
}

fn mins(n: i64) -> Duration {
    Duration::minutes(n)
}

const STUCK_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// A session approved and linked at `linked`, its execution finished with
/// `status` at `finished` (if given).
async fn linked(
    store: &Store,
    linked: DateTime<Utc>,
    finished: Option<(DateTime<Utc>, &str)>,
) -> (Uuid, Uuid) {
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    store
        .approve(session, Route::Api, linked, mins(30))
        .await
        .expect("approve");
    store
        .link(session, &[execution], linked)
        .await
        .expect("link");
    if let Some((at, status)) = finished {
        store
            .upsert_execution_status(execution, status, "out", at, true)
            .await
            .expect("report");
    }
    (session, execution)
}

/// Plans the execution's continuation at `at` and claims it then.
async fn planned(store: &Store, session: Uuid, execution: Uuid, at: DateTime<Utc>) -> Uuid {
    let ids = [execution];
    let key = format!("k-{execution}");
    let plan = ContinuationPlan {
        session_id: session,
        execution_ids: &ids,
        note: "note",
        policy_revision: "rev",
        idempotency_key: &key,
        hard_cap: 50,
    };
    let out = store.plan_continuations(&[plan], at).await.expect("plan");
    let Some(PlanOutcome::Planned(delivery)) = out.first() else {
        panic!("not planned: {out:?}");
    };
    delivery.id
}

/// Claims delivery `id` at `at` (and whatever else is due, which is left
/// leased and pending).
async fn claim(store: &Store, id: Uuid, at: DateTime<Utc>) -> nomos_continue::store::Claim {
    let claimed = store
        .claim_deliveries("w", at, Duration::seconds(1), 100)
        .await
        .expect("claim");
    claimed
        .iter()
        .find(|d| d.id == id)
        .and_then(|d| d.claim())
        .expect("claimed")
}

/// A continuation of an execution that finished at `finished` (status
/// `status`), delivered at `delivered`.
async fn continued(
    store: &Store,
    finished: DateTime<Utc>,
    delivered: DateTime<Utc>,
    status: &str,
) -> Uuid {
    let (session, execution) = linked(store, finished - mins(1), Some((finished, status))).await;
    let id = planned(store, session, execution, finished).await;
    let held = claim(store, id, delivered).await;
    let done = store
        .complete_deliveries(&[held], delivered)
        .await
        .expect("complete");
    assert_eq!(done, [id]);
    session
}

/// A continuation that gives up at `at` with `error` (and writes its
/// notice, pending); returns the session and the notice's id.
async fn gave_up(store: &Store, at: DateTime<Utc>, error: &str) -> (Uuid, Uuid) {
    let (session, execution) = linked(store, at - mins(2), Some((at - mins(1), "done"))).await;
    let id = planned(store, session, execution, at - mins(1)).await;
    let held = claim(store, id, at).await;
    let call = FailedCall {
        error,
        next_attempt_at: at,
        shortage: false,
        give_up: true,
        notice: Some("the continuation failed"),
    };
    store
        .fail_delivery_attempt(held, &call, at)
        .await
        .expect("fail");
    let notice = store
        .deliveries_for_session(session)
        .await
        .expect("ledger")
        .into_iter()
        .find(|d| d.kind.as_str() == "notice")
        .expect("its notice")
        .id;
    (session, notice)
}

/// Drops the execution of a new session at `at`, with a notice.
async fn dropped(store: &Store, at: DateTime<Utc>, reason: &str) -> (Uuid, Uuid) {
    let (session, execution) = linked(store, at - mins(2), Some((at - mins(1), "done"))).await;
    let key = format!("drop-{execution}");
    let notice = Notice {
        idempotency_key: &key,
        message: "dropped",
        policy_revision: "rev",
    };
    let out = store
        .drop_links_seen(session, &[execution], reason, Some(notice), at, None)
        .await
        .expect("drop");
    (session, out.notice.expect("a notice"))
}

async fn the_overview_counts_the_ledger_at_the_time_given(store: Store) {
    let t = now();
    // Nothing yet: zeros, 24 empty hours, no percentiles.
    let empty = store.pulse(t).await.expect("pulse");
    assert_eq!(empty.continuations_by_hour, vec![0; 24]);
    assert_eq!((empty.in_flight, empty.pickup_p50_ms), (0, None));

    // Delivered 10 minutes, 90 minutes and 23.5 hours ago, and 25 hours ago
    // (out of the chart).
    for ago in [mins(10), mins(90), mins(23 * 60 + 30), mins(25 * 60)] {
        continued(&store, t - ago - Duration::seconds(3), t - ago, "done").await;
    }
    // A failure and a drop in the last 24 hours, and one of each before.
    let (_, failed_notice) = gave_up(&store, t - mins(30), "HTTP 500").await;
    gave_up(&store, t - mins(30 * 60), "HTTP 500").await;
    let (_, dropped_notice) = dropped(&store, t - mins(60), "the window closed").await;
    dropped(&store, t - mins(26 * 60), "the window closed").await;
    // Two executions running, linked 40 and 5 minutes ago.
    linked(&store, t - mins(40), None).await;
    let (s, e) = linked(&store, t - mins(5), None).await;
    store
        .upsert_execution_status(e, "running", "", t - mins(4), false)
        .await
        .expect("running");
    let _ = s;
    // One finished execution's continuation planned and pending.
    let (s, e) = linked(&store, t - mins(3), Some((t - mins(2), "done"))).await;
    planned(&store, s, e, t - mins(2)).await;

    // The notices: the agent's side failed for one and was dropped for
    // the other; the operator's channel gave up on the first (reached no
    // one) and is still trying the second.
    for (notice, at) in [
        (failed_notice, t - mins(20)),
        (dropped_notice, t - mins(18)),
    ] {
        let held = claim(&store, notice, at).await;
        let call = FailedCall {
            error: "HTTP 410",
            next_attempt_at: at,
            shortage: false,
            give_up: true,
            notice: None,
        };
        store
            .fail_delivery_attempt(held, &call, at)
            .await
            .expect("fail the notice");
    }
    set_operator_state(&store, failed_notice, "failed", t - mins(19))
        .await
        .expect("operator");

    let p = store.pulse(t).await.expect("pulse");
    assert_eq!(p.at, t);
    assert_eq!(p.in_flight, 2);
    assert_eq!(p.oldest_in_flight_since, Some(t - mins(40)));
    // The planned continuation, and the notices of the failure 30 hours
    // ago and of the drop 26 hours ago.
    assert_eq!(p.pending_deliveries, 3, "{p:?}");
    // The continuation 30 minutes ago and the two notices since.
    assert_eq!(p.failed_deliveries, 3, "{p:?}");
    assert_eq!(p.dropped, 1);
    assert_eq!(p.undelivered_notices, 1);
    let mut hours = vec![0; 24];
    hours[23] = 1; // 10 minutes ago
    hours[22] = 1; // 90 minutes ago
    hours[0] = 1; // 23.5 hours ago
    assert_eq!(p.continuations_by_hour, hours);
    assert_eq!(p.continuations_last_hour(), 1);
    // One pickup in the last hour: three seconds.
    assert_eq!(
        (p.pickups, p.pickup_p50_ms, p.pickup_p99_ms),
        (1, Some(3000), Some(3000))
    );
    // Read an hour later, the newest delivery is in the hour before.
    let later = store.pulse(t + mins(60)).await.expect("pulse");
    assert_eq!(later.continuations_by_hour[22], 1);
    assert_eq!(later.continuations_last_hour(), 0);
    assert_eq!(later.pickups, 0);
}

async fn pickup_percentiles_are_the_nearest_ranks_of_the_last_hour(store: Store) {
    let t = now();
    // Pickups of 1 to 10 seconds, delivered in the last hour, in no order;
    // one of 100 seconds delivered 61 minutes ago is out of the window.
    for (n, secs) in [7, 2, 9, 4, 1, 10, 3, 8, 5, 6].into_iter().enumerate() {
        let delivered = t - mins(50) + mins(n as i64);
        continued(
            &store,
            delivered - Duration::seconds(secs),
            delivered,
            "done",
        )
        .await;
    }
    continued(
        &store,
        t - mins(61) - Duration::seconds(100),
        t - mins(61),
        "done",
    )
    .await;
    let p = store.pulse(t).await.expect("pulse");
    // Nearest rank: the 5th of 10 for p50, the 10th for p99.
    assert_eq!(
        (p.pickups, p.pickup_p50_ms, p.pickup_p99_ms),
        (10, Some(5000), Some(10_000))
    );
    assert_eq!(p.continuations_last_hour(), 10);
}

async fn each_status_holds_alone_and_the_most_urgent_wins(store: Store) {
    let t = now();
    let classes =
        [("failed", "failed"), ("done", "completed")].map(|(status, outcome)| StoredClass {
            status: status.into(),
            outcome: Some(outcome.into()),
            person: None,
        });
    store
        .save_status_classes("rev", &classes, t - mins(120))
        .await
        .expect("classes");

    let ok = continued(&store, t - mins(50), t - mins(49), "done").await;
    let execution_failed = continued(&store, t - mins(48), t - mins(47), "failed").await;
    let (delivery_failed, _) = gave_up(&store, t - mins(46), "HTTP 500 from the runtime").await;
    let (drop, _) = dropped(&store, t - mins(44), "the window closed").await;
    let (waiting, _) = linked(&store, t - mins(9), Some((t - mins(7), "done"))).await;
    // Linked 11 minutes ago in an open window, never finished.
    let (stuck, _) = linked(&store, t - mins(11), None).await;
    // Running for 5 minutes only: not stuck yet, and nothing else holds.
    let (running, _) = linked(&store, t - mins(5), None).await;
    // Stuck and with a drop: stuck wins. A failed delivery beside a failed
    // execution: the delivery wins.
    let (both, _) = dropped(&store, t - mins(20), "a loop guard").await;
    let late = Uuid::new_v4();
    store.link(both, &[late], t - mins(15)).await.expect("link");
    let (failures, _) = gave_up(&store, t - mins(3), "HTTP 502").await;
    let failed_execution = Uuid::new_v4();
    store
        .link(failures, &[failed_execution], t - mins(3))
        .await
        .expect("link");
    store
        .upsert_execution_status(failed_execution, "failed", "boom", t - mins(2), true)
        .await
        .expect("report");

    let judged = Judged::at(t, STUCK_AFTER);
    let status = async |session: Uuid| {
        store
            .session_row(session, judged)
            .await
            .expect("read")
            .expect("listed")
    };
    let expect = [
        (ok, SessionStatus::Ok),
        (execution_failed, SessionStatus::ExecutionFailed),
        (delivery_failed, SessionStatus::DeliveryFailed),
        (drop, SessionStatus::Dropped),
        (waiting, SessionStatus::Waiting),
        (stuck, SessionStatus::Stuck),
        (running, SessionStatus::Ok),
        (both, SessionStatus::Stuck),
        (failures, SessionStatus::DeliveryFailed),
    ];
    for (session, want) in expect {
        let row = status(session).await;
        assert_eq!(row.status, want, "session {session}: {row:?}");
    }
    // The filter lists by the status shown, newest first.
    for want in SessionStatus::PRECEDENCE {
        let page = store
            .sessions_page(SessionFilter::All, Some(want), None, 50, judged)
            .await
            .expect("page");
        let mut listed: Vec<Uuid> = page.items.iter().map(|r| r.session_id).collect();
        let mut named: Vec<Uuid> = expect
            .iter()
            .filter(|(_, s)| *s == want)
            .map(|(id, _)| *id)
            .collect();
        listed.sort();
        named.sort();
        assert_eq!(listed, named, "status {want}");
    }
    // A stuck session is no longer stuck once the window closes.
    store.deny(stuck, t - mins(1)).await.expect("deny");
    assert_eq!(status(stuck).await.status, SessionStatus::Ok);
    // ... and the same session judged with a longer patience is not stuck.
    let patient = Judged::at(t, std::time::Duration::from_secs(3600));
    let row = store
        .session_row(both, patient)
        .await
        .expect("read")
        .expect("listed");
    assert_eq!(row.status, SessionStatus::Dropped);

    // The last reason is the newest written, a drop's or a delivery's.
    let row = status(failures).await;
    assert_eq!(row.last_reason.as_deref(), Some("HTTP 502"));
    assert_eq!(row.failed, 1);
    assert_eq!(row.failed_executions, 1);
    assert_eq!(row.notices, 1, "the failure's notice is a delivery");
    assert_eq!(row.last_activity, t - mins(2), "the execution's report");
    assert_eq!(
        status(drop).await.last_reason.as_deref(),
        Some("the window closed")
    );
    let row = status(waiting).await;
    assert_eq!(row.waiting_since, Some(t - mins(7)));
    assert_eq!(row.last_reason, None);
    assert!("stalled".parse::<SessionStatus>().is_err());
}
