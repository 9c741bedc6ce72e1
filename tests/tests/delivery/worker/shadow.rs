//! A revision in shadow beside the worker's active one: it decides every
//! batch the active revision decides, its differences are recorded, and
//! nothing it does (deciding otherwise, trapping, spinning to its deadline,
//! finding its slot busy) changes what the active path does or counts.
//!
//! The shadow runs off the pass; `ShadowPolicy::idle` waits until the
//! batch a pass handed it is recorded, so no test sleeps.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use nomos_continue::clock::Clock;
use nomos_continue::deploy::PolicyDeployment;
use nomos_continue::policy::{Limits, PolicyRuntime, Revision, ShadowStats};
use nomos_continue::store::Store;
use nomos_continue::worker::{Worker, WorkerConfig, MAX_RECORDED_PER_BATCH};
use nomos_continue_tests::policies::variant;
use uuid::Uuid;

use super::Rig;

nomos_continue_tests::on_both_stores!(
    a_shadow_that_decides_otherwise_is_recorded_while_the_active_acts,
    a_failing_shadow_leaves_the_active_path_alone,
    a_busy_shadow_slot_skips_the_batch_and_counts_it,
    a_batch_records_a_bounded_number_of_disagreements_and_counts_them_all,
    every_replica_converges_on_the_database_shadow
);

/// The contrary test policy: drops what the default policy continues,
/// traps on a result saying `shadow-trap`, spins on `shadow-loop`.
fn contrary() -> Vec<u8> {
    std::fs::read(env!("CONTRARY_WASM")).expect("contrary policy built by tests/build.rs")
}

/// A rig whose worker runs a policy runtime of its own (a shadow on the
/// shared one would reach the other tests), with `runtime` set up first.
fn shadow_rig(
    store: Store,
    setup: impl FnOnce(&mut PolicyRuntime),
) -> (Rig, Worker, Arc<PolicyRuntime>) {
    let rig = Rig::new(store);
    let mut runtime = PolicyRuntime::new(Limits::default()).expect("built-in policy loads");
    setup(&mut runtime);
    let runtime = Arc::new(runtime);
    let worker = Worker::builder(rig.store.clone(), runtime.clone(), rig.agent.clone())
        .clock(rig.clock.clone())
        .config(WorkerConfig::default())
        .build();
    (rig, worker, runtime)
}

fn deployment(rig: &Rig, runtime: &Arc<PolicyRuntime>) -> PolicyDeployment {
    PolicyDeployment::new(runtime.clone(), rig.store.clone(), rig.clock.clone(), None)
}

/// Two executions the active (default) policy continues and the contrary
/// shadow drops: the agent gets the one continuation the active revision
/// planned, and both differences are recorded in the golden-file JSON.
async fn a_shadow_that_decides_otherwise_is_recorded_while_the_active_acts(store: Store) {
    let (rig, worker, runtime) = shadow_rig(store, |_| {});
    let (shadow, _) = deployment(&rig, &runtime)
        .upload_shadow(contrary(), None)
        .await
        .expect("contrary passes vetting");
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    rig.approve().await;
    rig.link(&[a, b]).await;
    rig.report(a, "failed", "ssh: connection refused").await;
    rig.report(b, "completed", "container 101 created").await;

    let tick = worker.run_once().await.expect("pass");
    assert_eq!(
        (tick.plan.planned, tick.deliver.delivered),
        (1, 1),
        "{tick:?}"
    );
    runtime.shadow().idle().await;
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].executions.len(), 2);
    assert!(
        rig.agent.notices().is_empty(),
        "the shadow's drops never act"
    );

    assert_eq!(
        runtime.shadow().stats(),
        ShadowStats {
            decisions: 2,
            disagreements: 2,
            ..ShadowStats::default()
        }
    );
    assert_eq!(
        rig.store
            .count_disagreements(&shadow.0)
            .await
            .expect("count"),
        2
    );
    let mut rows = rig.store.disagreements(&shadow.0, 10).await.expect("rows");
    rows.sort_by_key(|r| r.execution_id != a);
    assert_eq!(rows[0].execution_id, a);
    for row in &rows {
        assert_eq!(row.session_id, rig.session);
        assert_eq!(row.active_revision, runtime.active_revision().0);
        assert_eq!(row.at, rig.clock.now());
        let input: serde_json::Value = serde_json::from_str(&row.input).expect("input JSON");
        assert_eq!(input["execution"]["id"], row.execution_id.to_string());
        assert_eq!(input["session"]["window"]["route"], "button");
        assert!(
            input["now"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{input}"
        );
        assert!(
            row.active_output
                .starts_with(r#"{"decision":"continue","note":"execution "#),
            "{}",
            row.active_output
        );
        assert_eq!(
            row.shadow_output,
            r#"{"decision":"drop","reason":"contrary: no automatic continuation"}"#
        );
    }
    // The recorded input is the policy's own input form: it reads back.
    let read: Result<nomos_continue::policy::types::DecisionInput, _> =
        serde_json::from_str(&rows[0].input);
    assert!(read.is_ok(), "{read:?}");
}

/// A shadow that traps, then one that spins to its deadline: the active
/// path continues both executions, and its failure and fall-back counters
/// (set to fall back on the first fault, with a revision to fall back to)
/// never move. The shadow counts its own failures.
async fn a_failing_shadow_leaves_the_active_path_alone(store: Store) {
    let active = variant("shadow-fallback");
    let (rig, worker, runtime) = shadow_rig(store, |runtime| {
        runtime.set_fallback_after(1);
        runtime.activate(&active).expect("variant activates");
    });
    runtime
        .set_shadow(&contrary())
        .expect("contrary passes vetting");
    rig.approve().await;
    for (n, result) in ["shadow-trap", "shadow-loop"].into_iter().enumerate() {
        let id = Uuid::new_v4();
        rig.link(&[id]).await;
        rig.report(id, "failed", result).await;
        let tick = worker.run_once().await.expect("pass");
        assert_eq!(tick.deliver.delivered, 1, "{result}: {tick:?}");
        runtime.shadow().idle().await;
        assert_eq!(runtime.shadow().stats().failures, n as u64 + 1, "{result}");
    }
    assert_eq!(rig.agent.continuations().len(), 2);
    let stats = runtime.stats();
    assert_eq!(stats.fallbacks, 0);
    assert!(stats.failures.is_empty(), "{:?}", stats.failures);
    assert_eq!(runtime.active_revision(), Revision::of(&active));
    assert_eq!(runtime.shadow().stats().decisions, 0);
}

/// A batch that finds the shadow's slot busy is not queued: it is skipped
/// and counted, and the active path acts as always.
async fn a_busy_shadow_slot_skips_the_batch_and_counts_it(store: Store) {
    let (rig, worker, runtime) = shadow_rig(store, |_| {});
    let (shadow, _) = runtime
        .set_shadow(&contrary())
        .expect("contrary passes vetting");
    let held = runtime.shadow().try_begin().expect("the slot is free");
    rig.approve().await;
    let a = Uuid::new_v4();
    rig.link(&[a]).await;
    rig.report(a, "failed", "boom").await;
    let tick = worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 1, "{tick:?}");
    drop(held);
    runtime.shadow().idle().await;
    assert_eq!(
        runtime.shadow().stats(),
        ShadowStats {
            skipped_batches: 1,
            ..ShadowStats::default()
        }
    );
    assert_eq!(
        rig.store
            .count_disagreements(&shadow.0)
            .await
            .expect("count"),
        0
    );
}

/// A shadow that disagrees with a whole large batch costs one bounded
/// write: every difference is counted, at most
/// [`MAX_RECORDED_PER_BATCH`] are recorded.
async fn a_batch_records_a_bounded_number_of_disagreements_and_counts_them_all(store: Store) {
    let (rig, worker, runtime) = shadow_rig(store, |_| {});
    let (shadow, _) = runtime
        .set_shadow(&contrary())
        .expect("contrary passes vetting");
    let n = MAX_RECORDED_PER_BATCH + 8;
    let ids: Vec<Uuid> = (0..n).map(|_| Uuid::new_v4()).collect();
    rig.approve().await;
    rig.link(&ids).await;
    for id in &ids {
        rig.report(*id, "failed", "boom").await;
    }
    let tick = worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 1, "{tick:?}");
    runtime.shadow().idle().await;
    let stats = runtime.shadow().stats();
    assert_eq!((stats.decisions, stats.disagreements), (n as u64, n as u64));
    let recorded = rig
        .store
        .count_disagreements(&shadow.0)
        .await
        .expect("count");
    assert_eq!(recorded, MAX_RECORDED_PER_BATCH as i64);
}

/// The database names the shadow for every replica: another replica's
/// watcher puts it in shadow, clears it when it is dropped, and after a
/// promotion runs it as the active revision with no shadow.
async fn every_replica_converges_on_the_database_shadow(store: Store) {
    let (rig, _, here) = shadow_rig(store, |_| {});
    let there = Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy loads"));
    let mut watcher = deployment(&rig, &there).watch_database(StdDuration::from_secs(3600));
    let shadow = |r: &Arc<PolicyRuntime>| r.shadow().revision();
    let deploy = deployment(&rig, &here);

    let (candidate, _) = deploy
        .upload_shadow(contrary(), None)
        .await
        .expect("shadow");
    watcher.run_once().await;
    assert_eq!(shadow(&there), Some(candidate.clone()));

    assert!(deploy.drop_shadow().await.expect("drop"));
    watcher.run_once().await;
    assert_eq!(shadow(&there), None);

    deploy
        .upload_shadow(contrary(), None)
        .await
        .expect("shadow again");
    watcher.run_once().await;
    let (from, to) = deploy.promote_shadow().await.expect("promote");
    assert_eq!(
        (from, &to),
        (
            Revision::of(nomos_continue::policy::BUILTIN_POLICY_WASM),
            &candidate
        )
    );
    assert_eq!(
        (here.active_revision(), shadow(&here)),
        (candidate.clone(), None)
    );
    watcher.run_once().await;
    assert_eq!((there.active_revision(), shadow(&there)), (candidate, None));
}
