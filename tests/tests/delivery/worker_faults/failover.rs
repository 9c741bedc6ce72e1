//! Item 10 of the delivery issue, measured (not asserted): three replicas
//! with the default lease (6 s, renewed every 2 s while a call runs) and
//! poll (2 s); one is killed with `-9` while it holds claims; how long after
//! the kill until every execution is delivered. Run by hand:
//!
//! ```sh
//! cargo test -p nomos-continue-tests --test delivery -- --ignored --nocapture failover
//! ```

use std::time::{Duration, Instant};

use nomos_continue::store::DeliveryState;
use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};

use nomos_continue_tests::wait::until;

use super::{database, Work, SERIAL};

/// Executions per run, one session each.
const EXECUTIONS: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by hand, figures in BENCHMARKS.md"]
async fn failover_after_kill_9() {
    let _serial = SERIAL.lock().await;
    let Some(db) = database().await else { return };
    // Each call takes 300 ms, so every replica has claims in flight.
    let (_, server) =
        RecordingServer::start(Script::always(Reply::SlowOk(Duration::from_millis(300))))
            .await
            .expect("webhook");
    let hook = server.url("/hook");
    let mut replicas = Vec::new();
    for n in 1..=3 {
        let mut options = ReplicaOptions::new(&db.url, &hook, &format!("w{n}"));
        options.lease_secs = 6;
        options.poll_ms = 2000;
        replicas.push(Replica::start(&options).await);
    }
    let apis: Vec<&Replica> = replicas.iter().collect();
    let work = Work::create(&apis, EXECUTIONS, 1).await;
    Work::finish(&apis, &work.executions()).await;
    let store = &db.store;
    until("w1 holding claims", || async {
        let mut held = 0;
        for (session, _) in &work.sessions {
            let ledger = store.deliveries_for_session(*session).await.ok()?;
            held += ledger
                .iter()
                .filter(|d| {
                    d.state == DeliveryState::Pending && d.lease_owner.as_deref() == Some("w1")
                })
                .count();
        }
        (held > 0).then_some(())
    })
    .await;
    let mut w1 = replicas.remove(0);
    let killed = Instant::now();
    w1.kill().await;
    work.wait_settled(store).await;
    let after = killed.elapsed();
    let overview = store.overview().await.expect("overview");
    println!(
        "failover: {} of {EXECUTIONS} executions continued; the last one {:.1} s after kill -9 of a replica holding claims (lease 6 s, poll 2 s)",
        overview.continued_links,
        after.as_secs_f64()
    );
    drop(replicas);
    db.cleanup().await;
}
