//! The hole the standby fence closes, step by step. An asynchronous
//! standby is connected to the primary through a proxy the test pauses:
//! it streams (so the primary counts it) but receives nothing. A session's
//! executions A and B are finished and replayed on the standby; then the
//! replicas plan and claim A and B on the primary alone. The primary
//! crashes and the standby, which lacks that plan, is promoted; execution
//! C of the same session finishes there before any replica reaches it
//! (the replicas reach it through a second proxy, cut until then). The
//! replicas plan again, folding A, B and C.
//!
//! - Fenced: the agent gets no call while the standby lacks the plan, so
//!   the only key A, B and C are ever sent under is the second plan's.
//! - Unfenced (`--standby-fence-timeout 0`): A and B go out under the
//!   first plan's key before the crash, and again under the second's:
//!   the double continuation the agent cannot recognise.

use std::collections::BTreeSet;

use nomos_continue::store::{DeliveryState, LinkState, Store};
use nomos_continue_tests::cluster::Stop;
use nomos_continue_tests::cut::CutProxy;
use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::until;
use uuid::Uuid;

use super::{approve_and_link, finish, keys, pausable, Paused, DB, SERIAL};

/// What the agent received, per execution: the keys it was sent under.
struct Sent {
    a: BTreeSet<String>,
    b: BTreeSet<String>,
    c: BTreeSet<String>,
}

/// Runs the scenario with the fence's time-out (`"0"`: off).
async fn lost_plan(name: &str, fence: &str) -> Option<Sent> {
    let Paused {
        primary,
        store: direct,
        replication,
        standby,
    } = pausable(name).await?;
    let to_standby = CutProxy::start(([127, 0, 0, 1], standby.port()).into()).await;
    to_standby.cut();

    let session = Uuid::new_v4();
    let [a, b, c] = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    approve_and_link(&direct, session, &[a, b, c]).await;
    finish(&direct, a, "completed").await;
    finish(&direct, b, "failed").await;
    primary.wait_replayed(&standby).await;
    replication.pause();

    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");
    let standby_url = format!("postgres://postgres@{}/{DB}", to_standby.addr());
    let mut replicas = Vec::new();
    for n in 1..=2 {
        let mut options =
            ReplicaOptions::new(&primary.url(DB), &server.url("/hook"), &format!("w{n}"));
        options.extra_args = vec![
            "--database-url".into(),
            standby_url.clone(),
            "--standby-fence-timeout".into(),
            fence.into(),
        ];
        replicas.push(Replica::start(&options).await);
    }
    let first = until("A and B planned on the primary", || async {
        let rows = direct.deliveries_for_session(session).await.ok()?;
        rows.into_iter().find(|d| {
            d.execution_ids.iter().copied().collect::<BTreeSet<_>>() == BTreeSet::from([a, b])
        })
    })
    .await;
    if fence == "0" {
        server.wait_for_requests(1).await;
    } else {
        until("a replica's fence to hold its calls back", || async {
            for replica in &replicas {
                if held(replica).await > 0 {
                    return Some(());
                }
            }
            None
        })
        .await;
        assert!(
            server.requests().is_empty(),
            "the agent was called while the standby lacked the plan"
        );
    }

    direct.close().await;
    primary.stop(Stop::Immediate).await;
    standby.promote().await;
    let promoted = Store::connect(&standby.url(DB)).await.expect("connect");
    assert!(
        promoted
            .deliveries_for_session(session)
            .await
            .expect("ledger")
            .is_empty(),
        "the standby has the plan the pause kept from it"
    );
    finish(&promoted, c, "completed").await;
    to_standby.mend().await;
    until("A, B and C continued on the promoted standby", || async {
        let summary = promoted.session_summary(session).await.ok()?;
        let done = summary.links.len() == 3
            && summary
                .links
                .iter()
                .all(|l| l.state() == LinkState::Continued)
            && summary
                .deliveries
                .iter()
                .all(|d| d.state == DeliveryState::Delivered);
        done.then_some(())
    })
    .await;
    let (mut by_execution, _) = keys(&server.requests());
    if fence != "0" {
        assert!(
            !by_execution
                .values()
                .flatten()
                .any(|k| *k == first.idempotency_key),
            "the first plan's key went out"
        );
    }
    drop(replicas);
    promoted.close().await;
    let mut take = |id| by_execution.remove(&id).unwrap_or_default();
    Some(Sent {
        a: take(a),
        b: take(b),
        c: take(c),
    })
}

/// `nomos_continue_standby_fence_held_total` on `replica`'s `/metrics`.
async fn held(replica: &Replica) -> u64 {
    replica
        .get_text("/metrics")
        .await
        .lines()
        .find_map(|l| l.strip_prefix("nomos_continue_standby_fence_held_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Fenced: each execution is sent under exactly one key, the second
/// plan's, which folds all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_fence_a_plan_lost_in_a_failover_was_never_sent() {
    let _serial = SERIAL.lock().await;
    let Some(sent) = lost_plan("fenced", "1s").await else {
        return;
    };
    assert_eq!(sent.a.len(), 1, "A under {:?}", sent.a);
    assert_eq!(sent.a, sent.b);
    assert_eq!(sent.a, sent.c, "A, B and C were not folded into one plan");
}

/// Unfenced: A goes out under two keys. This is what the fenced case
/// guards against, and proves the scenario can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_fence_a_lost_plan_sends_an_execution_under_two_keys() {
    let _serial = SERIAL.lock().await;
    let Some(sent) = lost_plan("unfenced", "0").await else {
        return;
    };
    assert_eq!(sent.a.len(), 2, "A under {:?}", sent.a);
    assert_eq!(sent.b, sent.a);
    assert_eq!(sent.c.len(), 1);
    assert!(sent.a.is_superset(&sent.c));
}
