//! A tool result naming protocol tasks (contract 0.2.0's `extract-links`):
//! each task is linked under its name-based execution id, the task is kept
//! beside the link, and the answer lists it; on both stores.

use nomos_continue::store::{task_execution_id, Store, TaskSource};
use nomos_continue_tests::api::ServedApi;
use serde_json::json;
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(a_tool_result_links_the_tasks_it_names);

async fn a_tool_result_links_the_tasks_it_names(store: Store) {
    let api = ServedApi::start(store.clone(), None).await;
    let session = Uuid::new_v4();
    let execution = Uuid::new_v4();
    let a2a = serde_json::to_string(&json!({
        "kind": "task", "id": "a2a-1", "contextId": "c", "status": {"state": "working"}
    }))
    .expect("json");
    let text = json!({
        "content": [
            {"type": "text", "text": format!("started execution {execution}")},
            {"type": "text", "text": a2a},
        ],
        "structuredContent": {"task": {"taskId": "mcp-1", "status": "working"}},
    })
    .to_string();
    let path = format!("/v1/sessions/{session}/tool-results");
    let answer = api.json("POST", &path, &json!({ "text": text })).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let a2a_id = task_execution_id(TaskSource::A2a, "a2a-1");
    let mcp_id = task_execution_id(TaskSource::Mcp, "mcp-1");
    let body = answer.json();
    assert_eq!(body["linked"], json!([a2a_id, mcp_id, execution]), "{body}");
    assert_eq!(
        body["tasks"],
        json!([
            {"execution_id": a2a_id, "protocol": "a2a", "task_id": "a2a-1"},
            {"execution_id": mcp_id, "protocol": "mcp", "task_id": "mcp-1"},
        ])
    );
    let kept = store
        .link_tasks(&[a2a_id, mcp_id, execution])
        .await
        .expect("tasks");
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(kept[&mcp_id].task_id, "mcp-1");
    assert_eq!(kept[&a2a_id].source, TaskSource::A2a);

    // Again: nothing new is linked, and the tasks are still named.
    let again = api.json("POST", &path, &json!({ "text": text })).await;
    assert_eq!(again.json()["linked"], json!([]));
    assert_eq!(
        again.json()["already_linked"],
        json!([a2a_id, mcp_id, execution])
    );
    assert_eq!(again.json()["tasks"], body["tasks"]);

    // Prose without JSON links only its execution ids; `tasks` is empty.
    let prose = format!("execution {}", Uuid::new_v4());
    let plain = api.json("POST", &path, &json!({ "text": prose })).await;
    assert_eq!(plain.json()["tasks"], json!([]));
}
