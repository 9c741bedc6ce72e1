//! `PUT /v1/executions/{id}`: what a runtime may send and what it is told.

use nomos_continue::store::{Execution, Store};
use serde_json::json;
use uuid::Uuid;

use super::sqlite_api;

/// P4: a report after the first terminal one is answered 200 with
/// `"applied": false` and a note, and changes nothing the worker reads.
#[tokio::test]
async fn a_late_report_is_recorded_not_applied() {
    let (api, _dir) = sqlite_api(None).await;
    let id = Uuid::new_v4();
    let path = format!("/v1/executions/{id}");
    let first = api
        .json(
            "PUT",
            &path,
            &json!({"status": "failed", "result": "ssh: connection refused"}),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.json()["applied"], true);
    assert_eq!(first.json()["execution"]["terminal"], true);
    let stored = first.json()["execution"].clone();

    let late = api.json("PUT", &path, &json!({"status": "running"})).await;
    assert_eq!(late.status, 200, "{}", late.text);
    let body = late.json();
    assert_eq!(body["applied"], false, "{body}");
    assert_eq!(body["execution"]["terminal"], true, "as stored: {body}");
    assert_eq!(body["execution"], stored);
    let note = body["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("terminal is final") && note.contains(&id.to_string()),
        "{body}"
    );
    let now = read_execution(&api.store, id).await;
    assert_eq!(
        (now.status.as_str(), now.finished_at.is_some()),
        ("failed", true)
    );
}

/// `"result": null` (an execution with no output yet) is the empty result.
#[tokio::test]
async fn a_null_result_is_the_empty_result() {
    let (api, _dir) = sqlite_api(None).await;
    let id = Uuid::new_v4();
    let answer = api
        .json(
            "PUT",
            &format!("/v1/executions/{id}"),
            &json!({"status": "running", "result": null}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["execution"]["result"], "");
    let stored = read_execution(&api.store, id).await;
    assert_eq!(stored.result, "");
}

/// The execution as the store keeps it (it has reported).
async fn read_execution(store: &Store, id: Uuid) -> Execution {
    let found = store.executions(&[id]).await.expect("read");
    found.into_iter().next().expect("row")
}

/// The API classifies through the one in-process copy of the status
/// classes the assembly shares: once a status is classified, a report of
/// it reads no table. (Checked by taking the table away: a fresh copy per
/// request would read it, and fail.)
#[tokio::test]
async fn a_report_of_a_classified_status_reads_no_table() {
    let (api, _dir) = sqlite_api(None).await;
    let report = |id: Uuid| {
        let api = &api;
        async move {
            api.json(
                "PUT",
                &format!("/v1/executions/{id}"),
                &json!({"status": "failed", "result": "exit 1"}),
            )
            .await
        }
    };
    let first = report(Uuid::new_v4()).await;
    assert_eq!(first.status, 200, "{}", first.text);
    api.store
        .execute_raw("ALTER TABLE nomos_status_classes RENAME TO nomos_status_classes_away")
        .await
        .expect("rename the table");
    let second = report(Uuid::new_v4()).await;
    assert_eq!(second.status, 200, "read the table again: {}", second.text);
    assert_eq!(
        second.json()["execution"]["terminal"],
        true,
        "{}",
        second.text
    );
}
