//! Executions stuck in `running` must not starve a finished one behind
//! them: the poll leaves out links whose status the active revision has
//! classified as running, so a new failure is read in the next pass however
//! many are stuck ahead of it (there used to be a cap of 10,000 rows a pass,
//! all of them running).

use chrono::Duration;
use nomos_continue::clock::Clock;
use nomos_continue::store::{Poll, Settlement, Store};
use nomos_continue::worker::WorkerConfig;
use uuid::Uuid;

use super::Rig;

/// More than a pass reads at the default settings (20 pages of 500).
const STUCK: usize = 10_001;

nomos_continue_tests::on_both_stores!(
    a_new_failure_behind_ten_thousand_stuck_running_executions_is_continued_next_pass,
    running_links_are_parked_until_a_new_status_or_a_sweep,
    a_pass_reads_result_texts_within_its_budget
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

/// The frequent pass does not read what it found running; a status the
/// store records unparks its link at once, and one written behind the
/// store's back (a runtime's own `executions`) is read by the next sweep.
async fn running_links_are_parked_until_a_new_status_or_a_sweep(store: Store) {
    let rig = Rig::new(store);
    rig.approve().await;
    let ids: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    rig.link(&ids).await;
    for id in &ids {
        rig.report(*id, "running", "").await;
    }
    let sweep = rig.worker.run_once().await.expect("sweep");
    assert_eq!((sweep.plan.examined, sweep.plan.waiting), (3, 3));
    let fast = rig.worker.run_pass(Poll::Unparked).await.expect("fast");
    assert_eq!(fast.plan.examined, 0, "parked links are not read");
    // The same status again keeps the park; a new one lifts it.
    rig.report(ids[0], "running", "still going").await;
    let fast = rig.worker.run_pass(Poll::Unparked).await.expect("fast");
    assert_eq!(fast.plan.examined, 0);
    rig.report(ids[0], "failed", "exit 1").await;
    let fast = rig.worker.run_pass(Poll::Unparked).await.expect("fast");
    assert_eq!((fast.plan.examined, fast.plan.planned), (1, 1));
    assert_eq!(fast.deliver.delivered, 1);

    // Behind the store's back: no unpark, so only a sweep finds it.
    let sql = format!(
        "UPDATE executions SET status = 'failed', result = 'oom' WHERE id = '{}'",
        ids[1]
    );
    assert_eq!(rig.store.execute_raw(&sql).await.expect("raw report"), 1);
    let fast = rig.worker.run_pass(Poll::Unparked).await.expect("fast");
    assert_eq!(fast.plan.examined, 0);
    let sweep = rig.worker.run_once().await.expect("sweep");
    assert_eq!(sweep.plan.planned, 1, "{sweep:?}");
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].executions[0].id, ids[1]);
}

/// Result texts are read for what a pass decides, oldest first, until the
/// budget is spent; the rest is left to the next pass, and all of it is
/// continued in the end.
async fn a_pass_reads_result_texts_within_its_budget(store: Store) {
    let mut rig = Rig::new(store);
    rig.worker = rig.worker(
        WorkerConfig::default()
            .with_worker_id("budget".into())
            .with_pass_result_bytes(1_500),
    );
    let mut sessions = Vec::new();
    for i in 0..4 {
        rig.session = Uuid::new_v4();
        rig.approve().await;
        let id = Uuid::new_v4();
        rig.link(&[id]).await;
        rig.clock.advance(Duration::milliseconds(1));
        rig.report(id, "failed", &format!("{i}{}", "x".repeat(999)))
            .await;
        sessions.push(id);
    }
    let first = rig.worker.run_once().await.expect("first");
    assert_eq!((first.plan.planned, first.plan.over_budget), (1, 3));
    let mut planned = first.plan.planned;
    for _ in 0..3 {
        planned += rig.worker.run_once().await.expect("next").plan.planned;
    }
    assert_eq!(planned, 4);
    let called: Vec<Uuid> = rig
        .agent
        .continuations()
        .iter()
        .map(|c| c.executions[0].id)
        .collect();
    assert_eq!(called, sessions, "oldest first, each once");
}
