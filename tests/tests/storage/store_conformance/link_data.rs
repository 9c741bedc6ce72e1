//! The per-link side table (`nomos_link_data`): which trace context wins,
//! and that it is read for many executions at once.

use std::collections::HashMap;

use nomos_continue::store::{
    task_execution_id, LinkTask, LinkTrace, Store, TaskSource, TraceSource,
};
use uuid::Uuid;

use super::{at, ready_session};

const REPORT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const REPORT_LATER: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
const TOOL: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TOOL_AGAIN: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-53995c3f42cd8ad8-00";

fn trace(traceparent: &str, tracestate: Option<&str>, source: TraceSource) -> LinkTrace {
    LinkTrace {
        traceparent: traceparent.to_string(),
        tracestate: tracestate.map(str::to_string),
        source,
    }
}

async fn kept(store: &Store, ids: &[Uuid]) -> HashMap<Uuid, LinkTrace> {
    store.link_traces(ids).await.expect("read traces")
}

/// A status report's context fills only an empty row; a tool result's is
/// written over whatever was kept, for every id it names, once each.
pub async fn a_tool_results_trace_wins_and_a_reports_only_fills(store: Store) {
    let (a, b, never) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let report = |ids: Vec<Uuid>, traceparent: &'static str, n: i64| {
        let store = store.clone();
        async move {
            let source = TraceSource::StatusReport;
            let kept = store.keep_trace(&ids, traceparent, Some("r=1"), source, at(n));
            kept.await.expect("keep a report's trace")
        }
    };
    // A runtime may report before it links: the report's context is kept.
    assert_eq!(report(vec![a], REPORT, 1).await, 1);
    // A second report does not replace it.
    assert_eq!(report(vec![a], REPORT_LATER, 2).await, 0);
    let expected_a = trace(REPORT, Some("r=1"), TraceSource::StatusReport);
    assert_eq!(
        kept(&store, &[a, b, never]).await,
        HashMap::from([(a, expected_a)])
    );

    // The tool result's replaces it, tracestate included, and is kept for
    // an id named twice once.
    let written = store
        .keep_trace(&[a, b, a], TOOL, None, TraceSource::ToolResult, at(3))
        .await
        .expect("keep a tool result's trace");
    assert_eq!(written, 2);
    let tool = trace(TOOL, None, TraceSource::ToolResult);
    let both = HashMap::from([(a, tool.clone()), (b, tool.clone())]);
    assert_eq!(kept(&store, &[a, b, never]).await, both);

    // A later report leaves it alone; a later tool result replaces it.
    assert_eq!(report(vec![b], REPORT_LATER, 4).await, 0);
    assert_eq!(kept(&store, &[b]).await[&b], tool);
    let again = store
        .keep_trace(
            &[b],
            TOOL_AGAIN,
            Some("t=2"),
            TraceSource::ToolResult,
            at(5),
        )
        .await
        .expect("keep a tool result's trace");
    assert_eq!(again, 1);
    assert_eq!(
        kept(&store, &[b]).await[&b],
        trace(TOOL_AGAIN, Some("t=2"), TraceSource::ToolResult)
    );

    // Nothing asked, nothing done.
    let none = store
        .keep_trace(&[], TOOL, None, TraceSource::ToolResult, at(6))
        .await
        .expect("keep nothing");
    assert_eq!(none, 0);
    assert!(kept(&store, &[]).await.is_empty());
}

/// The side table is keyed by execution alone: it leaves the seed's link
/// table as it was, and a kept trace does not change what the worker reads.
pub async fn a_kept_trace_changes_no_link(store: Store) {
    let (session, execs) = ready_session(&store, 2).await;
    let before = store
        .pending_links_for_session(session)
        .await
        .expect("links");
    store
        .keep_trace(&execs, TOOL, None, TraceSource::ToolResult, at(2))
        .await
        .expect("keep");
    assert_eq!(
        store
            .pending_links_for_session(session)
            .await
            .expect("links"),
        before
    );
    assert_eq!(kept(&store, &execs).await.len(), 2);
}

/// The task an execution id stands for is kept once, beside a trace kept
/// before or after it, and read back for many executions at once.
pub async fn a_linked_task_is_kept_once_beside_its_trace(store: Store) {
    let task = |source, id: &str| LinkTask {
        source,
        task_id: id.to_string(),
    };
    let mcp = task(TaskSource::Mcp, "5e1f0c2a9b7d4e3f8a6b1c0d2e4f6a8b:1c9e");
    let a2a = task(TaskSource::A2a, "task-7");
    let (m, a) = (
        task_execution_id(TaskSource::Mcp, &mcp.task_id),
        task_execution_id(TaskSource::A2a, &a2a.task_id),
    );
    store
        .keep_trace(&[a], TOOL, None, TraceSource::ToolResult, at(1))
        .await
        .expect("keep a trace first");
    let written = store
        .keep_tasks(&[(m, mcp.clone()), (a, a2a.clone())], at(2))
        .await
        .expect("keep tasks");
    assert_eq!(written, 2);
    // Written again (the same tool result posted twice): nothing changes.
    let again = store
        .keep_tasks(&[(m, mcp.clone())], at(3))
        .await
        .expect("keep a task again");
    assert_eq!(again, 0);
    let never = Uuid::new_v4();
    assert_eq!(
        store.link_tasks(&[m, a, never]).await.expect("read tasks"),
        HashMap::from([(m, mcp), (a, a2a)])
    );
    // The trace kept before the task is still there.
    assert_eq!(
        kept(&store, &[a]).await,
        HashMap::from([(a, trace(TOOL, None, TraceSource::ToolResult))])
    );
    assert!(store.keep_tasks(&[], at(4)).await.expect("none") == 0);
}
