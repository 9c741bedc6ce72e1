//! Fault tests on PostgreSQL with real `nomos-continue serve` processes: no
//! mocks, only the binary, a real database and a recording webhook on
//! loopback. Every case ends by checking, through the webhook's recording
//! and the ledger, that every execution was delivered and none was lost;
//! deliveries are counted per idempotency key, and a redelivery must carry
//! the key of the first attempt.
//!
//! No case waits a fixed time: each waits on a signal (a request reaching
//! the webhook, a row in the ledger, a backend in `pg_stat_activity`) by
//! bounded polling. The cases run one at a time (each starts several
//! processes on a 2-core machine).

use std::collections::{BTreeMap, BTreeSet};

use nomos_continue::agent::ContinuationEvent;
use nomos_continue::store::{DeliveryKind, DeliveryState, LinkState, Store};
use nomos_continue_tests::db::{self, PgTestDb};
use nomos_continue_tests::http::{RecordedRequest, RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::until;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

mod disk_full;
mod duplicate_worker;
mod exhaustion;
mod failover;
mod outage;
mod partition;
mod standby;

/// One case at a time: each runs several processes and many connections.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Sessions, each with an open window and its executions linked.
struct Work {
    sessions: Vec<(Uuid, Vec<Uuid>)>,
}

impl Work {
    /// `sessions` sessions of `per_session` executions, approved and linked
    /// through the replicas' APIs in turn.
    async fn create(replicas: &[&Replica], sessions: usize, per_session: usize) -> Work {
        let mut out = Vec::new();
        for i in 0..sessions {
            let api = replicas[i % replicas.len()];
            let session = Uuid::new_v4();
            let executions: Vec<Uuid> = (0..per_session).map(|_| Uuid::new_v4()).collect();
            api.approve(session).await;
            api.link(session, &executions).await;
            out.push((session, executions));
        }
        Work { sessions: out }
    }

    fn executions(&self) -> Vec<Uuid> {
        self.sessions
            .iter()
            .flat_map(|(_, e)| e.iter().copied())
            .collect()
    }

    /// Pushes a terminal status for each execution through the replicas'
    /// APIs in turn (alternating completed and failed).
    async fn finish(replicas: &[&Replica], executions: &[Uuid]) {
        for (i, id) in executions.iter().enumerate() {
            let (status, result) = if i % 2 == 0 {
                ("completed", "ok")
            } else {
                ("failed", "ssh: connection refused")
            };
            replicas[i % replicas.len()]
                .put_status(*id, status, result)
                .await;
        }
    }

    /// Waits until the ledger shows every link settled and nothing pending.
    async fn wait_settled(&self, store: &Store) {
        let total = self.executions().len() as i64;
        until("every link settled", || async {
            let o = store.overview().await.ok()?;
            let settled = o.continued_links + o.dropped_links + o.failed_links;
            (o.pending_links == 0 && o.deliveries_pending == 0 && settled >= total).then_some(())
        })
        .await;
    }
}

/// What the webhook received, by idempotency key: the execution sets of
/// every request carrying that key.
fn by_key(requests: &[RecordedRequest]) -> BTreeMap<String, Vec<BTreeSet<Uuid>>> {
    let mut out: BTreeMap<String, Vec<BTreeSet<Uuid>>> = BTreeMap::new();
    for request in requests {
        let event: ContinuationEvent = serde_json::from_slice(&request.body)
            .unwrap_or_else(|e| panic!("not a continuation ({e}): {}", request.text()));
        let key = event.data.idempotency_key;
        assert_eq!(
            request.header("idempotency-key"),
            Some(key.as_str()),
            "header and body keys differ"
        );
        let ids = event.data.executions.iter().map(|e| e.id).collect();
        out.entry(key).or_default().push(ids);
    }
    out
}

/// The invariants every case ends with. `max_per_key` is 1 where nothing
/// can have interrupted a delivery between the call and the mark.
async fn assert_all_delivered(
    store: &Store,
    work: &Work,
    requests: &[RecordedRequest],
    max_per_key: usize,
) {
    let received = by_key(requests);
    let mut delivered: BTreeMap<Uuid, String> = BTreeMap::new();
    for (key, attempts) in &received {
        assert!(
            attempts.len() <= max_per_key,
            "key {key} delivered {} times",
            attempts.len()
        );
        assert!(
            attempts.windows(2).all(|w| w[0] == w[1]),
            "a redelivery of {key} changed its executions"
        );
        for id in &attempts[0] {
            if let Some(other) = delivered.insert(*id, key.clone()) {
                panic!("execution {id} delivered under two keys: {other} and {key}");
            }
        }
    }
    let all: BTreeSet<Uuid> = work.executions().into_iter().collect();
    let seen: BTreeSet<Uuid> = delivered.keys().copied().collect();
    assert_eq!(
        seen, all,
        "the webhook did not receive exactly the linked executions"
    );

    let mut ledger_keys = BTreeSet::new();
    for (session, executions) in &work.sessions {
        let summary = store
            .session_summary(*session)
            .await
            .expect("session summary");
        for link in &summary.links {
            assert_eq!(
                link.state(),
                LinkState::Continued,
                "link {} of {session}: {link:?}",
                link.execution_id
            );
        }
        assert_eq!(summary.links.len(), executions.len());
        for delivery in &summary.deliveries {
            assert_eq!(
                delivery.kind,
                DeliveryKind::Continuation,
                "unexpected notice: {}",
                delivery.note
            );
            assert_eq!(delivery.state, DeliveryState::Delivered, "{delivery:?}");
            assert!(
                delivery.lease_owner.is_none(),
                "a delivered row keeps a lease: {delivery:?}"
            );
            let sent = received.get(&delivery.idempotency_key);
            let sent = sent.unwrap_or_else(|| {
                panic!(
                    "ledger key {} never reached the webhook",
                    delivery.idempotency_key
                )
            });
            let ids: BTreeSet<Uuid> = delivery.execution_ids.iter().copied().collect();
            assert_eq!(
                sent[0], ids,
                "the webhook got other executions than the ledger row"
            );
            ledger_keys.insert(delivery.idempotency_key.clone());
        }
    }
    let sent_keys: BTreeSet<String> = received.keys().cloned().collect();
    assert_eq!(
        sent_keys, ledger_keys,
        "the webhook and the ledger disagree on the keys"
    );
}

/// A migrated database, or `None` when PostgreSQL is unreachable outside CI.
async fn database() -> Option<PgTestDb> {
    db::fresh_postgres_db().await
}

/// The ledger rows of one session.
async fn ledger(store: &Store, session: Uuid) -> Vec<nomos_continue::store::Delivery> {
    store.deliveries_for_session(session).await.expect("ledger")
}

/// Connections of the database that are LISTENing (their last statement).
async fn listeners(db: &PgTestDb) -> Vec<i32> {
    let mut admin = PgConnection::connect(&db::admin_url())
        .await
        .expect("admin connection");
    sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN %' ORDER BY pid",
    )
    .bind(&db.name)
    .fetch_all(&mut admin)
    .await
    .expect("pg_stat_activity")
}

/// Three replicas over 60 executions in 20 sessions, statuses pushed through
/// every replica: each execution delivered once, each key once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_deliver_sixty_executions_exactly_once() {
    let _serial = SERIAL.lock().await;
    let Some(db) = database().await else { return };
    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");
    let hook = server.url("/hook");
    let mut replicas = Vec::new();
    for n in 1..=3 {
        replicas.push(Replica::start(&ReplicaOptions::new(&db.url, &hook, &format!("w{n}"))).await);
    }
    let apis: Vec<&Replica> = replicas.iter().collect();
    let work = Work::create(&apis, 20, 3).await;
    Work::finish(&apis, &work.executions()).await;
    work.wait_settled(&db.store).await;

    let requests = server.requests();
    assert_all_delivered(&db.store, &work, &requests, 1).await;
    let overview = db.store.overview().await.expect("overview");
    assert_eq!(overview.continued_links, 60);
    assert_eq!(overview.continuations_delivered as usize, requests.len());
    drop(replicas);
    db.cleanup().await;
}

/// Killed after the claim, before the runtime got the request (the webhook
/// accepts the connection and never reads it): a replica started after the
/// kill takes the lease over once it expires and delivers with the key the
/// ledger gave the continuation before the kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_after_the_claim_is_redelivered_with_the_same_key() {
    let _serial = SERIAL.lock().await;
    let Some(db) = database().await else { return };
    // Accepts TCP connections (the kernel completes them) but never answers.
    let black_hole = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let black_hole_url = format!("http://{}/hook", black_hole.local_addr().expect("addr"));
    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");

    let mut w1 = Replica::start(&ReplicaOptions::new(&db.url, &black_hole_url, "w1")).await;
    let work = Work::create(&[&w1], 1, 1).await;
    let session = work.sessions[0].0;
    Work::finish(&[&w1], &work.executions()).await;
    let claimed = until("w1 to claim the continuation", || async {
        let rows = ledger(&db.store, session).await;
        rows.into_iter()
            .find(|d| d.lease_owner.as_deref() == Some("w1") && d.state == DeliveryState::Pending)
    })
    .await;
    w1.kill().await;

    let _w2 = Replica::start(&ReplicaOptions::new(&db.url, &server.url("/hook"), "w2")).await;
    let requests = server.wait_for_requests(1).await;
    work.wait_settled(&db.store).await;
    let received = by_key(&server.requests());
    assert_eq!(
        received.keys().collect::<Vec<_>>(),
        vec![&claimed.idempotency_key]
    );
    assert_all_delivered(&db.store, &work, &requests, 1).await;
    let row = &ledger(&db.store, session).await[0];
    assert_eq!(row.attempts, 0, "a crash is not a failed attempt");
    drop(black_hole);
    db.cleanup().await;
}

/// Killed after the agent call reached the runtime but before the mark (the
/// webhook records the request and holds its answer): the redelivery carries
/// the same key, so the runtime sees that key twice and can drop the repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_after_the_agent_call_redelivers_the_same_key() {
    let _serial = SERIAL.lock().await;
    let Some(db) = database().await else { return };
    let script = Script::from_fn(|_, index| {
        if index == 0 {
            Reply::hang()
        } else {
            Reply::status(200)
        }
    });
    let (_, server) = RecordingServer::start(script).await.expect("webhook");
    let hook = server.url("/hook");

    let mut w1 = Replica::start(&ReplicaOptions::new(&db.url, &hook, "w1")).await;
    let work = Work::create(&[&w1], 1, 2).await;
    Work::finish(&[&w1], &work.executions()).await;
    server.wait_for_requests(1).await;
    w1.kill().await;
    let session = work.sessions[0].0;
    let pending = ledger(&db.store, session).await;
    assert!(
        pending.iter().all(|d| d.state == DeliveryState::Pending),
        "marked before the call returned"
    );

    let _w2 = Replica::start(&ReplicaOptions::new(&db.url, &hook, "w2")).await;
    work.wait_settled(&db.store).await;
    let requests = server.requests();
    let first = by_key(&requests[..1]);
    let (key, _) = first.iter().next().expect("one key");
    let repeats = requests
        .iter()
        .filter(|r| r.header("idempotency-key") == Some(key.as_str()))
        .count();
    assert!(
        repeats >= 2,
        "the interrupted delivery was not redelivered with its key"
    );
    assert_all_delivered(&db.store, &work, &requests, 2).await;
    db.cleanup().await;
}

/// Killed after the mark: nothing is redelivered. A later execution that a
/// new replica delivers proves the new replica has looked at the ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_after_the_mark_does_not_redeliver() {
    let _serial = SERIAL.lock().await;
    let Some(db) = database().await else { return };
    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");
    let hook = server.url("/hook");

    let mut w1 = Replica::start(&ReplicaOptions::new(&db.url, &hook, "w1")).await;
    let mut work = Work::create(&[&w1], 1, 1).await;
    Work::finish(&[&w1], &work.executions()).await;
    work.wait_settled(&db.store).await;
    let before = ledger(&db.store, work.sessions[0].0).await;
    w1.kill().await;

    let w2 = Replica::start(&ReplicaOptions::new(&db.url, &hook, "w2")).await;
    let marker = Work::create(&[&w2], 1, 1).await;
    Work::finish(&[&w2], &marker.executions()).await;
    work.sessions.extend(marker.sessions);
    work.wait_settled(&db.store).await;

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "a delivered continuation was sent again");
    assert_all_delivered(&db.store, &work, &requests, 1).await;
    assert_eq!(
        ledger(&db.store, work.sessions[0].0).await,
        before,
        "the delivered row changed"
    );
    db.cleanup().await;
}

/// Every backend of the database terminated while deliveries are under way:
/// the pools reconnect, the LISTEN connections come back, all work completes
/// (a delivery interrupted between the call and the mark is redelivered with
/// its key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_backends_reconnect_and_complete_the_work() {
    let _serial = SERIAL.lock().await;
    let Some(db) = database().await else { return };
    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");
    let hook = server.url("/hook");
    let w1 = Replica::start(&ReplicaOptions::new(&db.url, &hook, "w1")).await;
    let w2 = Replica::start(&ReplicaOptions::new(&db.url, &hook, "w2")).await;
    let apis = [&w1, &w2];
    let work = Work::create(&apis, 10, 3).await;
    let executions = work.executions();
    let (first, rest) = executions.split_at(executions.len() / 2);
    let old_listeners = until("both replicas to LISTEN", || async {
        let pids = listeners(&db).await;
        (pids.len() == 2).then_some(pids)
    })
    .await;

    Work::finish(&apis, first).await;
    server.wait_for_requests(3).await;
    let mut admin = PgConnection::connect(&db::admin_url())
        .await
        .expect("admin connection");
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
    )
    .bind(&db.name)
    .fetch_all(&mut admin)
    .await
    .expect("terminate backends");
    assert!(
        killed.len() >= 2,
        "expected the replicas' connections, terminated {}",
        killed.len()
    );

    until("both LISTEN connections to come back", || async {
        let pids = listeners(&db).await;
        (pids.len() == 2 && pids.iter().all(|p| !old_listeners.contains(p))).then_some(())
    })
    .await;
    Work::finish(&apis, rest).await;
    work.wait_settled(&db.store).await;
    assert_all_delivered(&db.store, &work, &server.requests(), 2).await;
    db.cleanup().await;
}

/// With `--no-wake-listener` and statuses written straight to the database
/// (its NOTIFY reaches nobody, and no API call signals the process), the
/// poll alone finds and delivers all the work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_wake_listener_the_poll_completes_the_work() {
    let _serial = SERIAL.lock().await;
    let Some(db) = database().await else { return };
    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");
    let mut options = ReplicaOptions::new(&db.url, &server.url("/hook"), "w1");
    options.wake_listener = false;
    let w1 = Replica::start(&options).await;
    let work = Work::create(&[&w1], 5, 2).await;
    assert!(
        listeners(&db).await.is_empty(),
        "a LISTEN connection exists despite --no-wake-listener"
    );
    let now = chrono::Utc::now();
    for id in work.executions() {
        db.store
            .upsert_execution_status(id, "completed", "ok", now, true)
            .await
            .expect("status");
    }
    work.wait_settled(&db.store).await;
    assert_all_delivered(&db.store, &work, &server.requests(), 1).await;
    drop(w1);
    db.cleanup().await;
}
