//! Failover to a promoted standby (issue 28): PostgreSQL clusters of the
//! test's own (`nomos_continue_tests::cluster`), a primary and one standby,
//! the primary stopped as a crash stops it and the standby promoted, with
//! real `serve` replicas given both servers.
//!
//! - `promoted`: the flow through a failover, with a synchronous standby
//!   (nothing lost: every execution continued exactly once) and with an
//!   asynchronous one (no execution ever sent under two keys);
//! - `hole`: the lost plan whose key went out, made deterministic with a
//!   standby that is connected but receives nothing, with the standby
//!   fence on (one key per execution) and off (an execution under two
//!   keys: the test can fail);
//! - `denied`: a deny while the fence waits;
//! - `switched`: a confirmation that comes after the store switched
//!   primaries proves nothing, and the call waits.

mod denied;
mod hole;
mod promoted;
mod switched;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::Utc;
use nomos_continue::agent::{ContinuationEvent, WebhookEvent};
use nomos_continue::store::{Route, Store};
use nomos_continue_tests::cluster::{Cluster, Replication, Stop};
use nomos_continue_tests::cut::CutProxy;
use nomos_continue_tests::http::RecordedRequest;
use nomos_continue_tests::replica::Replica;
use nomos_continue_tests::wait::until;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::SERIAL;

/// The database every cluster here holds.
const DB: &str = "nomos";

/// A primary with `settings` and the database migrated, and the test's
/// store on it.
async fn primary(name: &str, settings: &[(&str, &str)]) -> Option<(Cluster, Store)> {
    let primary = Cluster::primary(name, settings).await?;
    primary.create_database(DB).await;
    let store = Store::connect(&primary.url(DB))
        .await
        .expect("connect to the primary");
    store.migrate().await.expect("migrate");
    Some((primary, store))
}

/// A primary (the database migrated, the test's store on it) and an
/// asynchronous standby streaming through a proxy the test can pause:
/// paused, the standby stays connected (so the primary counts it and the
/// fence waits for it) but receives nothing.
struct Paused {
    primary: Cluster,
    store: Store,
    replication: CutProxy,
    standby: Cluster,
}

/// [`Paused`] clusters named `{name}-p` and `{name}_s`, streaming (not
/// paused yet). The WAL sender and receiver time-outs are off: a standby
/// that receives nothing stays connected however long the test takes (the
/// defaults drop it after 60 s, and a disconnected standby is not waited
/// for).
async fn pausable(name: &str) -> Option<Paused> {
    let quiet = [("wal_sender_timeout", "0"), ("wal_receiver_timeout", "0")];
    let (primary, store) = primary(&format!("{name}-p"), &quiet).await?;
    let replication = CutProxy::start(([127, 0, 0, 1], primary.port()).into()).await;
    let standby = primary
        .standby_through(
            &format!("{name}_s"),
            Replication::Asynchronous,
            replication.addr().port(),
        )
        .await;
    Some(Paused {
        primary,
        store,
        replication,
        standby,
    })
}

/// Opens `session`'s window and links `executions` to it, on `store`.
async fn approve_and_link(store: &Store, session: Uuid, executions: &[Uuid]) {
    let now = Utc::now();
    store
        .approve(session, Route::Button, now, chrono::Duration::minutes(30))
        .await
        .expect("approve");
    store.link(session, executions, now).await.expect("link");
}

/// Records a terminal status straight in `store` (as a runtime writing
/// its own `executions` table would).
async fn finish(store: &Store, execution: Uuid, status: &str) {
    store
        .upsert_execution_status(execution, status, "done", Utc::now(), true)
        .await
        .expect("status");
}

/// `PUT /v1/executions/{id}` on `replica`, again and again until it
/// answers 2xx (during a failover a request may answer 503).
async fn report(replica: &Replica, execution: Uuid, status: &str) {
    let client = reqwest::Client::new();
    let url = format!("http://{}/v1/executions/{execution}", replica.addr);
    let body = serde_json::json!({"status": status, "result": "done"});
    until(
        &format!("{} to take a status", replica.worker_id),
        || async {
            let answer = client.put(&url).json(&body).send().await.ok()?;
            answer.status().is_success().then_some(())
        },
    )
    .await;
}

/// The keys each execution was sent under (continuations; notices name
/// no execution), and how many times each key was sent.
fn keys(
    requests: &[RecordedRequest],
) -> (BTreeMap<Uuid, BTreeSet<String>>, BTreeMap<String, usize>) {
    let mut by_execution: BTreeMap<Uuid, BTreeSet<String>> = BTreeMap::new();
    let mut sent: BTreeMap<String, usize> = BTreeMap::new();
    for request in requests {
        let event: WebhookEvent = serde_json::from_slice(&request.body)
            .unwrap_or_else(|e| panic!("not a webhook event ({e}): {}", request.text()));
        if let WebhookEvent::Continuation(ContinuationEvent { data, .. }) = event {
            *sent.entry(data.idempotency_key.clone()).or_default() += 1;
            for execution in data.executions {
                by_execution
                    .entry(execution.id)
                    .or_default()
                    .insert(data.idempotency_key.clone());
            }
        }
    }
    (by_execution, sent)
}

/// Panics if an execution was sent under more than one key.
fn assert_one_key_each(by_execution: &BTreeMap<Uuid, BTreeSet<String>>) {
    for (execution, keys) in by_execution {
        assert_eq!(
            keys.len(),
            1,
            "execution {execution} was sent under {} keys: {keys:?}",
            keys.len()
        );
    }
}

/// What `cluster.rs` promises, and what the store does with two servers:
/// a write on the primary is on the asynchronous standby once replayed;
/// the primary crashes, the standby is promoted, and a store given both
/// servers (its watch running) writes on the promoted standby, where the
/// first write is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_given_both_servers_writes_on_the_promoted_standby() {
    let _serial = SERIAL.lock().await;
    let Some((primary, direct)) = primary("smoke-p", &[]).await else {
        return;
    };
    let standby = primary.standby("smoke_s", Replication::Asynchronous).await;
    assert!(standby.in_recovery().await);
    let urls = [primary.url(DB), standby.url(DB)];
    let store = Store::connect_any(&[urls[0].as_str(), urls[1].as_str()])
        .await
        .expect("connect to the two servers");
    let stop = CancellationToken::new();
    let following = store.clone();
    let watch = tokio::spawn({
        let stop = stop.clone();
        async move { following.follow_primary(stop).await }
    });

    let (session, before) = (Uuid::new_v4(), Uuid::new_v4());
    approve_and_link(&store, session, &[before]).await;
    primary.wait_replayed(&standby).await;
    direct.close().await;
    primary.stop(Stop::Immediate).await;
    standby.promote().await;
    assert!(!standby.in_recovery().await, "the standby was not promoted");

    let after = Uuid::new_v4();
    until(
        "a write through the store on the promoted standby",
        || async { store.link(session, &[after], Utc::now()).await.ok() },
    )
    .await;
    let on_standby = Store::connect(&standby.url(DB)).await.expect("connect");
    let summary = on_standby.session_summary(session).await.expect("summary");
    let linked: BTreeSet<Uuid> = summary.links.iter().map(|l| l.execution_id).collect();
    assert_eq!(linked, BTreeSet::from([before, after]));
    stop.cancel();
    watch.await.expect("the watch task");
    store.close().await;
    on_standby.close().await;
}

/// How long a replica may take to find the promoted standby: the watch
/// probes every second, and a pool that waited for the dead primary
/// retries with a backoff of up to a fifth of its acquire time-out.
const FIND_BOUND: Duration = Duration::from_secs(15);
