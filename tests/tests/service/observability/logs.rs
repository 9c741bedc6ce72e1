//! `serve --log-format json --access-log`, held against the real binary:
//! every line it writes on stderr is one JSON object with the documented
//! keys; the access log has a line per request, with the trace id of a
//! request that carried a `traceparent`; a delivery the agent refused is
//! logged without the webhook's path (which here holds its credential).

use nomos_continue_tests::http::{RecordingServer, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use serde_json::Value;
use uuid::Uuid;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const HOOK_SECRET: &str = "hook-path-s3cret-5d1e";

/// The lines of `stderr` as JSON; panics on one that is not an object
/// with every documented key.
fn json_lines(stderr: &str) -> Vec<Value> {
    (stderr.lines())
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            for key in ["timestamp", "level", "target", "message", "fields"] {
                assert!(value.get(key).is_some(), "no {key}: {line}");
            }
            assert!(value["fields"].is_object(), "{line}");
            value
        })
        .collect()
}

#[tokio::test]
async fn json_lines_carry_the_trace_and_no_webhook_path() {
    // The agent refuses the first call, so a failure is logged.
    let (_, hook) = RecordingServer::start(Script::statuses([500]))
        .await
        .expect("webhook server");
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite:{}", dir.path().join("logs.db").display());
    let mut options =
        ReplicaOptions::new(&database_url, &hook.url(&format!("/{HOOK_SECRET}")), "logs");
    options.extra_args = ["--log-format", "json", "--access-log"]
        .map(String::from)
        .to_vec();
    options.env = vec![("NOMOS_CONTINUE_LOG".into(), "info".into())];
    let mut replica = Replica::start(&options).await;

    let traced = reqwest::Client::new()
        .get(format!("http://{}/v1/sessions", replica.addr))
        .header("traceparent", format!("00-{TRACE_ID}-00f067aa0ba902b7-01"))
        .send()
        .await
        .expect("request");
    assert_eq!(traced.status(), 200);
    replica
        .fail_in_open_window(Uuid::new_v4(), Uuid::new_v4(), "exit 1")
        .await;
    // The refused call, then its retry: the failure was handled.
    hook.wait_for_requests(2).await;

    let status = replica.terminate().await;
    assert!(status.success(), "{status}");
    let stderr = replica.stderr();
    let lines = json_lines(&stderr);
    assert!(lines.len() > 3, "too little logged:\n{stderr}");
    let access: Vec<&Value> = (lines.iter())
        .filter(|l| l["target"] == "nomos_continue::access")
        .collect();
    let request = access
        .iter()
        .find(|l| l["fields"]["path"] == "/v1/sessions")
        .unwrap_or_else(|| panic!("no access line for GET /v1/sessions:\n{stderr}"));
    assert_eq!(request["trace_id"], TRACE_ID, "{request}");
    assert_eq!(request["fields"]["status"], 200, "{request}");
    assert!(request["fields"]["request_id"]
        .as_str()
        .is_some_and(|id| !id.is_empty()));
    assert!(
        access.iter().any(|l| l["fields"]["method"] == "PUT"),
        "the status report's line:\n{stderr}"
    );
    assert!(
        !stderr.contains(HOOK_SECRET),
        "the webhook's path is in the log:\n{stderr}"
    );
    assert!(
        lines.iter().any(|l| l["level"] == "INFO"),
        "info is the default level:\n{stderr}"
    );
}
