//! Executions stuck in `running` must not starve a finished one behind
//! them: the poll leaves out links whose status the active revision has
//! classified as running, so a new failure is read in the next pass however
//! many are stuck ahead of it (there used to be a cap of 10,000 rows a pass,
//! all of them running).

use chrono::Duration;
use nomos_continue::clock::Clock;
use nomos_continue::store::{Settlement, Store};
use uuid::Uuid;

use super::Rig;

/// More than a pass reads at the default settings (20 pages of 500).
const STUCK: usize = 10_001;

nomos_continue_tests::on_both_stores!(
    a_new_failure_behind_ten_thousand_stuck_running_executions_is_continued_next_pass
);

async fn a_new_failure_behind_ten_thousand_stuck_running_executions_is_continued_next_pass(
    store: Store,
) {
    let rig = Rig::new(store);
    // Another session's executions, linked first and stuck in `running`.
    let stuck: Vec<Uuid> = (0..STUCK).map(|_| Uuid::new_v4()).collect();
    rig.store
        .link(Uuid::new_v4(), &stuck, rig.clock.now())
        .await
        .expect("link the stuck executions");
    // One statement for all their reports (the same rows the API writes for
    // a non-terminal status), instead of ten thousand round trips.
    let reported = rig
        .store
        .execute_raw(
            "INSERT INTO executions (id, status, result, updated_at) \
             SELECT execution_id, 'running', '', created_at FROM nomos_plan_executions \
             WHERE execution_id NOT IN (SELECT id FROM executions)",
        )
        .await
        .expect("report them running");
    assert_eq!(reported, STUCK as u64);
    // A pass sees them running (and keeps that classification).
    let first = rig.worker.run_once().await.expect("first pass");
    assert_eq!(first.plan.planned, 0);
    assert!(first.plan.waiting > 0);

    rig.clock.advance(Duration::seconds(5));
    rig.approve().await;
    let failed = Uuid::new_v4();
    rig.link(&[failed]).await;
    rig.report(failed, "failed", "exit 1: disk full").await;
    let next = rig.worker.run_once().await.expect("next pass");
    assert_eq!((next.plan.planned, next.deliver.delivered), (1, 1));
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].executions[0].id, failed);
    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    assert_eq!(summary.links[0].outcome, Some(Settlement::Continued));
}
