//! The operator's channel through the real binary: with the agent's
//! endpoint answering 500 to everything, the notice that its continuation
//! failed reaches a person at `--notify-webhook`, signed (checked by the
//! `standardwebhooks` package) and in the chosen format; without a channel
//! the same notice is counted as reaching no one; and the channel never
//! carries a continuation.

use nomos_continue::agent::OperatorNoticeEvent;
use nomos_continue::store::{OperatorState, Store};
use nomos_continue_tests::http::{RecordedRequest, RecordingServer, Reply, Script};
use nomos_continue_tests::python;
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::{until, until_true, PATIENCE};
use serde_json::{json, Value};
use uuid::Uuid;

const SECRET: &str = "whsec_MQWoEeNzSSQ/F3iIMAL6LmACwOpENY7xQHKvSLhFaSE=";

/// An agent endpoint that is down for good: 500, with a body that tries to
/// mention everyone in a chat channel.
async fn dead_agent() -> RecordingServer {
    let reply = Reply::text(500, "<!channel> upstream exploded & burned");
    RecordingServer::start(Script::always(reply))
        .await
        .expect("agent")
        .1
}

/// A replica whose continuations give up after a one-second budget.
fn options(db: &str, agent: &RecordingServer, extra: &[&str]) -> ReplicaOptions {
    let mut options = ReplicaOptions::new(db, &agent.url("/hook"), "operator-1");
    options.extra_args = ["--retry-budget", "1s"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect();
    options
}

/// The notice the operator was told, waiting for the continuation to fail
/// (a first notice of another kind would do too; none is expected).
async fn first_told(operator: &RecordingServer, replica: &Replica) -> RecordedRequest {
    match tokio::time::timeout(PATIENCE, operator.wait_for_requests(1)).await {
        Ok(mut requests) => requests.remove(0),
        Err(_) => panic!(
            "the operator was told nothing; serve said:\n{}",
            replica.stderr()
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_the_dead_agent_cannot_hear_reaches_the_operator_signed() {
    let Some(python) = python::python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("sqlite:{}", dir.path().join("operator.db").display());
    let agent = dead_agent().await;
    let (_, operator) = RecordingServer::start(Script::statuses([503]))
        .await
        .expect("operator");
    let hook = operator.url("/page");
    let replica = Replica::start(&options(
        &db,
        &agent,
        &["--notify-webhook", &hook, "--notify-secret", SECRET],
    ))
    .await;
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    replica
        .fail_in_open_window(session, execution, "ssh: connection refused")
        .await;
    // The first attempt answered 503; the channel tried again.
    let requests = tokio::time::timeout(PATIENCE, operator.wait_for_requests(2))
        .await
        .unwrap_or_else(|_| panic!("no retry; serve said:\n{}", replica.stderr()));
    let told = &requests[1];
    assert_eq!(told.header("webhook-id"), requests[0].header("webhook-id"));
    let event: OperatorNoticeEvent =
        serde_json::from_slice(&told.body).expect("operator_notice.v1");
    assert_eq!(event.data.session_id, session);
    assert_eq!(event.data.execution_ids, vec![execution]);
    assert!(
        event
            .data
            .notice
            .contains("could not deliver the continuation"),
        "{}",
        event.data.notice
    );
    assert_eq!(
        told.header("webhook-id"),
        Some(event.data.idempotency_key.as_str())
    );

    // Verified as a receiver verifies it, by the reference package.
    let headers: serde_json::Map<String, Value> = told
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), Value::from(value.as_str())))
        .collect();
    let body = String::from_utf8(told.body.clone()).expect("UTF-8");
    let check = json!({"verify": [{"secret": SECRET, "headers": headers, "body": body}]});
    let output = python::run(&python, "verify_webhooks.py", check.to_string().as_bytes());
    let verdict: Value = serde_json::from_slice(&output).expect("JSON");
    assert_eq!(verdict["verify"][0]["ok"], true, "{verdict}");

    // The agent's copy of the same notice fails too; the operator's copy is
    // delivered, so the notice reached someone.
    let store = Store::connect(&db).await.expect("open the database");
    let notice = event.data.notice_id;
    until_true("the agent's copy of the notice to fail", async || {
        store
            .delivery(notice)
            .await
            .ok()
            .flatten()
            .is_some_and(|d| d.state == nomos_continue::store::DeliveryState::Failed)
    })
    .await;
    let copy = store
        .operator_copy(notice)
        .await
        .expect("read")
        .expect("a copy");
    assert_eq!(copy.state, OperatorState::Delivered);
    assert_eq!(store.undelivered_notices().await.expect("count"), 0);
    // Nothing but notices on the operator's channel.
    for request in operator.requests() {
        let value = request.json().expect("JSON");
        assert_eq!(value["type"], "operator_notice.v1", "{value}");
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_slack_format_is_a_message_that_mentions_no_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("sqlite:{}", dir.path().join("slack.db").display());
    let agent = dead_agent().await;
    let (_, operator) = RecordingServer::start(Script::statuses([]))
        .await
        .expect("operator");
    let hook = operator.url("/services/T000/B000/XXXX");
    let replica = Replica::start(&options(
        &db,
        &agent,
        &["--notify-webhook", &hook, "--notify-format", "slack"],
    ))
    .await;
    let session = Uuid::new_v4();
    replica
        .fail_in_open_window(session, Uuid::new_v4(), "exit 1")
        .await;
    let told = first_told(&operator, &replica).await.json().expect("JSON");
    let text = told["text"].as_str().expect("a text");
    assert!(text.contains(&session.to_string()), "{text}");
    let section = &told["blocks"][0];
    assert_eq!(section["type"], "section");
    assert_eq!(section["text"]["type"], "mrkdwn");
    let shown = section["text"]["text"].as_str().expect("mrkdwn");
    // The agent's error (its 500 body) is escaped, wherever it appears.
    for part in [text, shown] {
        assert!(!part.contains("<!channel>"), "{part}");
    }
    assert!(
        text.contains("&lt;!channel&gt;") || shown.contains("&lt;!channel&gt;"),
        "the agent's error is shown, escaped: {told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_channel_a_notice_the_agent_cannot_take_reaches_no_one_and_is_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("sqlite:{}", dir.path().join("none.db").display());
    let agent = dead_agent().await;
    let replica = Replica::start(&options(&db, &agent, &[])).await;
    replica
        .fail_in_open_window(Uuid::new_v4(), Uuid::new_v4(), "exit 1")
        .await;
    let store = Store::connect(&db).await.expect("open the database");
    let counted = until("the notice to be counted as reaching no one", async || {
        let n = store.undelivered_notices().await.ok()?;
        (n > 0).then_some(n)
    })
    .await;
    assert_eq!(counted, 1);
    assert!(
        replica.stderr().contains("no --notify-webhook"),
        "start-up says where notices will not go:\n{}",
        replica.stderr()
    );
    store.close().await;
}
