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
