//! Two replicas started with the same `--worker-id` would hold each other's
//! leases as their own; the second must refuse to start, and say why.

use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Refusal, Replica, ReplicaOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_replica_with_the_same_worker_id_refuses_to_start() {
    let _serial = super::SERIAL.lock().await;
    let Some(db) = super::database().await else {
        return;
    };
    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");
    let hook = server.url("/hook");
    let first = Replica::start(&ReplicaOptions::new(&db.url, &hook, "w1")).await;

    let refused = Refusal::expect(&ReplicaOptions::new(&db.url, &hook, "w1")).await;
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        refused.stderr.contains("worker id \"w1\"") && refused.stderr.contains("stale"),
        "the refusal names the id and when a dead holder's claim lapses: {}",
        refused.stderr
    );

    // The first replica is unaffected, and another id starts beside it.
    first.approve(uuid::Uuid::new_v4()).await;
    let _second = Replica::start(&ReplicaOptions::new(&db.url, &hook, "w2")).await;
    drop(first);
    db.cleanup().await;
}
