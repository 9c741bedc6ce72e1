//! Status classes: each distinct status is classified once per active
//! policy revision and kept in the store, and a swap reclassifies.

use std::sync::Arc;

use nomos_continue::classes::{Class, StatusClasses};
use nomos_continue::deploy::PolicyDeployment;
use nomos_continue::policy::types::PersonNeed;
use nomos_continue::policy::{Limits, PolicyHandle, PolicyRuntime};
use nomos_continue::store::{Store, StoredClass};
use nomos_continue::worker::{PlanReport, Worker, WorkerConfig};
use uuid::Uuid;

use super::Rig;

nomos_continue_tests::on_both_stores!(
    a_status_is_classified_once_across_passes_and_workers,
    a_person_state_is_kept_and_read_back_as_one,
    a_swap_reclassifies_pending_statuses_under_the_new_revision,
);

/// A runtime of its own (the tests' shared one is used concurrently), so
/// its counters count this test's calls alone.
fn own_runtime() -> Arc<PolicyRuntime> {
    Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy loads"))
}

fn worker_on(rig: &Rig, runtime: &Arc<PolicyRuntime>) -> Worker {
    Worker::builder(rig.store.clone(), runtime.clone(), rig.agent.clone())
        .clock(rig.clock.clone())
        .config(WorkerConfig::default())
        .build()
}

fn statuses(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// A status the policy says waits for a person (contract 0.2.0) is kept
/// as such (migration 030) and read back by another replica's classes
/// without asking the policy again; it is not terminal.
async fn a_person_state_is_kept_and_read_back_as_one(store: Store) {
    let rig = Rig::new(store);
    let runtime = own_runtime();
    let classes = || {
        StatusClasses::new(
            rig.store.clone(),
            PolicyHandle::from(&runtime),
            rig.clock.clone(),
        )
    };
    let input = Class::AwaitingPerson(PersonNeed::Input);
    let class = classes().class("input-required").await.expect("class");
    assert_eq!(class, input);
    assert!(!class.is_terminal());
    assert_eq!(class.awaiting_person(), Some(PersonNeed::Input));
    let asked = runtime.stats().evaluations;
    let auth = classes()
        .classes(statuses(&["input-required", "TASK_STATE_AUTH_REQUIRED"]))
        .await
        .expect("classes");
    assert_eq!(auth.get("input-required"), Some(&input));
    assert_eq!(
        auth.get("TASK_STATE_AUTH_REQUIRED"),
        Some(&Class::AwaitingPerson(PersonNeed::Authorization))
    );
    assert_eq!(
        runtime.stats().evaluations,
        asked + 1,
        "only the new status was asked about"
    );
    let kept = rig
        .store
        .status_classes(&runtime.active_revision().0, &statuses(&["input-required"]))
        .await
        .expect("kept");
    assert_eq!(
        kept,
        [StoredClass {
            status: "input-required".into(),
            outcome: None,
            person: Some("input".into()),
        }]
    );
}

/// Item 6 of issue 11: the plan pass asks the policy about a status the
/// first time only; later passes, and another worker on the same database
/// (a replica, or this one restarted), use the kept class: links kept as
/// running are not even read (so they cannot starve finished ones).
async fn a_status_is_classified_once_across_passes_and_workers(store: Store) {
    let rig = Rig::new(store);
    rig.approve().await;
    let runtime = own_runtime();
    let worker = worker_on(&rig, &runtime);
    let ids: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    rig.link(&ids).await;
    for (id, status) in ids.iter().zip(["running", "queued", "running"]) {
        rig.report(*id, status, "").await;
    }
    let first = worker.plan_once().await.expect("pass");
    assert_eq!(first.waiting, 3, "{first:?}");
    let asked = runtime.stats().evaluations;
    assert_eq!(asked, 2, "one call per distinct status");
    let idle = PlanReport::default();
    for _ in 0..4 {
        let report = worker.plan_once().await.expect("pass");
        assert_eq!(report, idle, "links known to be running are not read");
    }
    assert_eq!(
        runtime.stats().evaluations,
        asked,
        "no call after the first pass"
    );

    let revision = runtime.active_revision().0;
    let kept = rig
        .store
        .status_classes(&revision, &statuses(&["queued", "running"]))
        .await
        .expect("classes");
    let running = |status: &str| StoredClass {
        status: status.into(),
        outcome: None,
        person: None,
    };
    assert_eq!(kept, [running("queued"), running("running")]);

    let other = own_runtime();
    let replica = worker_on(&rig, &other);
    assert_eq!(replica.plan_once().await.expect("pass"), idle);
    assert_eq!(
        other.stats().evaluations,
        0,
        "the replica read the kept classes"
    );
}

/// A swap to a revision that classifies a status differently: the pending
/// status is classified under the new revision when it becomes active, and
/// the first pass after the swap uses that class (not the old revision's)
/// without asking the policy to classify anything.
async fn a_swap_reclassifies_pending_statuses_under_the_new_revision(store: Store) {
    let rig = Rig::new(store);
    rig.approve().await;
    let runtime = own_runtime();
    let worker = worker_on(&rig, &runtime);
    let a = Uuid::new_v4();
    rig.link(&[a]).await;
    // The built-in policy does not know "trap": still running. The hostile
    // one classifies it as failed (and then traps deciding it).
    rig.report(a, "trap", "").await;
    let before = worker.plan_once().await.expect("pass");
    assert_eq!(
        (before.waiting, before.policy_failures),
        (1, 0),
        "{before:?}"
    );
    let builtin = runtime.active_revision().0;

    let deployment =
        PolicyDeployment::new(runtime.clone(), rig.store.clone(), rig.clock.clone(), None);
    let hostile = std::fs::read(env!("HOSTILE_WASM")).expect("hostile policy built");
    let (revision, _) = deployment.upload(hostile, None).await.expect("upload");
    assert_ne!(revision.0, builtin);
    let trap = statuses(&["trap"]);
    let kept = rig
        .store
        .status_classes(&revision.0, &trap)
        .await
        .expect("classes");
    let failed = StoredClass {
        status: "trap".into(),
        outcome: Some("failed".into()),
        person: None,
    };
    assert_eq!(kept, [failed], "classified when the revision became active");
    let old = rig
        .store
        .status_classes(&builtin, &trap)
        .await
        .expect("classes");
    assert_eq!(old[0].outcome, None, "the old revision's class is its own");

    let asked = runtime.stats().evaluations;
    let after = worker.plan_once().await.expect("pass");
    assert_eq!((after.waiting, after.policy_failures), (0, 1), "{after:?}");
    assert_eq!(
        runtime.stats().evaluations,
        asked + 1,
        "one decision, no classification"
    );
}
