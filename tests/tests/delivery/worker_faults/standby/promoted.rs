//! The flow through a failover: two replicas given the primary and its
//! standby in libpq's multi-host URL, a slow agent (0.2 s a call), thirty
//! executions over ten sessions; the primary crashes mid-flow (`pg_ctl
//! stop -m immediate`) and the standby is promoted.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use nomos_continue::store::{DeliveryKind, LinkState, Store};
use nomos_continue_tests::cluster::{Cluster, Replication, Stop};
use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::within;
use uuid::Uuid;

use super::{
    approve_and_link, assert_one_key_each, finish, keys, primary, report, DB, FIND_BOUND, SERIAL,
};

const SESSIONS: usize = 10;
const PER_SESSION: usize = 3;

/// What one run through a failover left.
struct Run {
    replicas: Vec<Replica>,
    server: RecordingServer,
    /// The promoted standby, as a store.
    promoted: Store,
    sessions: Vec<(Uuid, Vec<Uuid>)>,
    /// The clusters, which stop when dropped.
    _clusters: (Cluster, Cluster),
}

/// Starts the replicas on both servers, links the work, finishes half of
/// it, crashes the primary once calls are going out, promotes the standby
/// and reports the other half (with `again`, every status is reported
/// again after the promotion, as a runtime whose reports may have been
/// lost does); waits until every link is settled on the promoted standby.
/// Prints how long after the promotion each replica first wrote there.
async fn through_a_failover(name: &str, replication: Replication, again: bool) -> Option<Run> {
    let (primary, direct) = primary(&format!("{name}-p"), &[]).await?;
    let standby = primary.standby(&format!("{name}_s"), replication).await;
    let url = format!(
        "postgresql://postgres@127.0.0.1:{},127.0.0.1:{}/{DB}?target_session_attrs=read-write",
        primary.port(),
        standby.port()
    );
    let (_, server) =
        RecordingServer::start(Script::always(Reply::SlowOk(Duration::from_millis(200))))
            .await
            .expect("webhook");
    let mut replicas = Vec::new();
    for n in 1..=2 {
        let mut options = ReplicaOptions::new(&url, &server.url("/hook"), &format!("w{n}"));
        // Longer than the failover: a call whose record the crash
        // interrupted is recorded by its own replica, not sent again.
        options.lease_secs = 10;
        replicas.push(Replica::start(&options).await);
    }
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        let session = Uuid::new_v4();
        let executions: Vec<Uuid> = (0..PER_SESSION).map(|_| Uuid::new_v4()).collect();
        approve_and_link(&direct, session, &executions).await;
        sessions.push((session, executions));
    }
    primary.wait_replayed(&standby).await;
    let all: Vec<Uuid> = sessions.iter().flat_map(|(_, e)| e.clone()).collect();
    let (first, rest) = all.split_at(all.len() / 2);
    for (i, id) in first.iter().enumerate() {
        finish(
            &direct,
            *id,
            if i % 2 == 0 { "completed" } else { "failed" },
        )
        .await;
    }
    server.wait_for_requests(3).await;
    direct.close().await;
    primary.stop(Stop::Immediate).await;
    standby.promote().await;
    let promoted_at = Instant::now();

    // Each replica's first write on the promoted standby, through its API.
    let (a, b) = tokio::join!(
        first_write(&replicas[0], rest[0], promoted_at),
        first_write(&replicas[1], rest[1], promoted_at)
    );
    for (replica, after) in [a, b] {
        println!(
            "{name}: {replica} wrote on the promoted standby {:.2} s after the promotion",
            after.as_secs_f64()
        );
        assert!(after < FIND_BOUND, "{replica} took {after:?}");
    }
    let reports: &[Uuid] = if again { &all } else { &rest[2..] };
    for (i, id) in reports.iter().enumerate() {
        report(&replicas[i % 2], *id, "completed").await;
    }
    let promoted = Store::connect(&standby.url(DB)).await.expect("connect");
    let total = all.len() as i64;
    within(
        FIND_BOUND * 4,
        "every link settled on the promoted standby",
        async || {
            let o = promoted.overview().await.ok()?;
            let settled = o.continued_links + o.dropped_links + o.failed_links;
            (o.pending_links == 0 && o.deliveries_pending == 0 && settled >= total).then_some(())
        },
    )
    .await;
    println!(
        "{name}: every execution settled {:.2} s after the promotion",
        promoted_at.elapsed().as_secs_f64()
    );
    for replica in &replicas {
        let (sum, count) = fence_waits(replica).await;
        println!(
            "{name}: {}'s standby fence waited {:.2} ms a step on average over {count} steps",
            replica.worker_id,
            sum * 1000.0 / count.max(1.0)
        );
        let stderr = replica.stderr();
        assert!(
            !stderr.contains("25006") && !stderr.contains("read-only transaction"),
            "{} wrote to a server in recovery:\n{stderr}",
            replica.worker_id
        );
    }
    Some(Run {
        replicas,
        server,
        promoted,
        sessions,
        _clusters: (primary, standby),
    })
}

/// Reports `execution` through `replica` until it is taken; the replica's
/// id and how long after `since` that was.
async fn first_write(replica: &Replica, execution: Uuid, since: Instant) -> (String, Duration) {
    report(replica, execution, "completed").await;
    (replica.worker_id.clone(), since.elapsed())
}

/// The sum and count of `replica`'s `nomos_continue_standby_fence_wait_seconds`.
async fn fence_waits(replica: &Replica) -> (f64, f64) {
    let text = replica.get_text("/metrics").await;
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    (
        value("nomos_continue_standby_fence_wait_seconds_sum "),
        value("nomos_continue_standby_fence_wait_seconds_count "),
    )
}

/// Synchronous replication loses nothing: every execution continued
/// exactly once, under one key sent once, nothing failed or dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synchronous_standby_takes_over_and_every_execution_is_continued_once() {
    let _serial = SERIAL.lock().await;
    let Some(run) = through_a_failover("sync", Replication::Synchronous, false).await else {
        return;
    };
    let (by_execution, sent) = keys(&run.server.requests());
    assert_one_key_each(&by_execution);
    for (key, times) in &sent {
        assert_eq!(*times, 1, "key {key} was sent {times} times");
    }
    let all: BTreeSet<Uuid> = run.sessions.iter().flat_map(|(_, e)| e.clone()).collect();
    let seen: BTreeSet<Uuid> = by_execution.keys().copied().collect();
    assert_eq!(seen, all, "not every execution was continued");
    for (session, _) in &run.sessions {
        let summary = run
            .promoted
            .session_summary(*session)
            .await
            .expect("summary");
        for link in &summary.links {
            assert_eq!(link.state(), LinkState::Continued, "{link:?}");
        }
        assert!(
            summary
                .deliveries
                .iter()
                .all(|d| d.kind == DeliveryKind::Continuation),
            "a notice in {session}: {:?}",
            summary.deliveries
        );
    }
    drop(run.replicas);
    run.promoted.close().await;
}

/// Asynchronous replication may lose the last commits, and the runtime
/// reports its statuses again: no execution is ever sent under two keys,
/// and every one is continued or its session has a notice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asynchronous_standby_takes_over_and_no_execution_gets_a_second_key() {
    let _serial = SERIAL.lock().await;
    let Some(run) = through_a_failover("async", Replication::Asynchronous, true).await else {
        return;
    };
    let (by_execution, _) = keys(&run.server.requests());
    assert_one_key_each(&by_execution);
    for (session, _) in &run.sessions {
        let summary = run
            .promoted
            .session_summary(*session)
            .await
            .expect("summary");
        let noticed = summary
            .deliveries
            .iter()
            .any(|d| d.kind == DeliveryKind::Notice);
        for link in &summary.links {
            match link.state() {
                LinkState::Continued => assert!(
                    by_execution.contains_key(&link.execution_id),
                    "{} is continued in the ledger but never reached the agent",
                    link.execution_id
                ),
                LinkState::Dropped | LinkState::Failed => {
                    assert!(noticed, "{link:?} ended without a notice")
                }
                other => panic!("{} not settled: {other:?}", link.execution_id),
            }
        }
    }
    drop(run.replicas);
    run.promoted.close().await;
}
