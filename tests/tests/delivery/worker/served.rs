//! The whole system as `serve` assembles it ([`Server`]), in process, with
//! the recording agent injected: a failure reported over the API as a
//! runtime reports it is continued once, a second process under the same
//! worker id is refused, and shutdown frees the id.

use std::sync::Arc;

use nomos_continue::server::{ServeConfig, Server};
use nomos_continue::store::{Database, Registration, Store};
use nomos_continue_tests::agents::RecordingAgent;
use nomos_continue_tests::wait::until_true;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(the_served_system_continues_a_failure_and_frees_its_id);

async fn loopback() -> TcpListener {
    TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback")
}

/// The system over `store`, as configured, calling `agent`.
fn server(store: &Store, config: &ServeConfig, agent: &Arc<RecordingAgent>) -> Server {
    Server::new(config.clone(), Database::over(store.clone()))
        .with_agent(agent.clone())
        .with_policy(super::policy())
}

async fn the_served_system_continues_a_failure_and_frees_its_id(store: Store) {
    let agent = Arc::new(RecordingAgent::default());
    let config = super::served_config("served-test");
    let shutdown = CancellationToken::new();
    let running = server(&store, &config, &agent)
        .start(loopback().await, shutdown.clone())
        .await
        .expect("the system starts");
    match server(&store, &config, &agent)
        .start(loopback().await, shutdown.clone())
        .await
    {
        Ok(_) => panic!("a second process under a live worker id started"),
        Err(e) => assert!(
            format!("{e:#}").contains("in use by another live process"),
            "{e:#}"
        ),
    }

    let base = format!("http://{}", running.addr().expect("served over HTTP"));
    let client = reqwest::Client::new();
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    for (method, path, body) in [
        (
            reqwest::Method::POST,
            format!("/v1/sessions/{session}/approvals"),
            json!({"decision": "approve", "route": "button"}),
        ),
        (
            reqwest::Method::POST,
            format!("/v1/sessions/{session}/tool-results"),
            json!({"text": format!("started, execution {execution}")}),
        ),
        (
            reqwest::Method::PUT,
            format!("/v1/executions/{execution}"),
            json!({"status": "failed", "result": "ssh: connection refused"}),
        ),
    ] {
        let answer = client
            .request(method, format!("{base}{path}"))
            .json(&body)
            .send()
            .await
            .expect("request sent");
        assert!(answer.status().is_success(), "{path}: {}", answer.status());
    }

    until_true("the continuation", async || {
        !agent.continuations().is_empty()
    })
    .await;
    let calls = agent.continuations();
    assert_eq!(calls.len(), 1, "one continuation: {calls:?}");
    assert_eq!(calls[0].session_id, session);
    assert_eq!(calls[0].executions[0].id, execution);

    shutdown.cancel();
    running.wait().await.expect("a clean shutdown");
    let again = store
        .register_worker(
            "served-test",
            Uuid::new_v4(),
            chrono::Utc::now(),
            chrono::Duration::minutes(1),
        )
        .await
        .expect("register");
    assert_eq!(again, Registration::Registered, "shutdown frees the id");
}
