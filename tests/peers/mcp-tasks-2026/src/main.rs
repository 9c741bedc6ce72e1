//! An MCP server whose tools run as tasks of the 2026 extension
//! (`io.modelcontextprotocol/tasks`: `resultType: "task"`, `ttlMs`,
//! `tasks/get` answering the task with its `result` or `error` inline), and
//! a client declaring the extension, both from the rmcp crate, meeting over
//! an in-memory pipe.
//!
//!     nomos-peer-mcp-tasks-2026 <fail|raise|complete>
//!
//! prints one JSON line per answer the client got, in order:
//! `{"kind": "created", "body": <the tools/call answer>}`, then
//! `{"kind": "polled", "body": <each tasks/get answer>}` until the task is
//! terminal. A runtime forwards each `body` to `POST /v1/mcp/tasks`. The
//! work waits until the client has polled once, so a `working` answer
//! always comes first.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, CreateTaskResult, GetTaskParams, GetTaskResult, Implementation,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::json;
use tokio::sync::Notify;

const FAILURE: &str = "the export failed: the warehouse refused the credentials";
const PARTIAL: &str = "exported 17 of 42 rows before the error";
const DONE: &str = "exported 42 rows to report.csv";

#[derive(Clone)]
struct Tools {
    tasks: TaskManager,
    polled: Arc<Notify>,
}

impl ServerHandler for Tools {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let polled = Arc::clone(&self.polled);
        let options = TaskOptions::new()
            .with_poll_interval_ms(10)
            .with_ttl_ms(60_000);
        let task = self.tasks.spawn(options, move |_context| {
            Box::pin(async move {
                polled.notified().await;
                match name.as_str() {
                    "fail" => Ok(CallToolResult::error(vec![
                        ContentBlock::text(FAILURE),
                        ContentBlock::text(PARTIAL),
                    ])),
                    "raise" => Err(TaskExit::Error(McpError::internal_error(FAILURE, None))),
                    _ => {
                        let mut result = CallToolResult::success(vec![ContentBlock::text(DONE)]);
                        result.structured_content = Some(json!({"rows": 42, "file": "report.csv"}));
                        Ok(result)
                    }
                }
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let answer = GetTaskResult::new(self.tasks.get_task(&request.task_id)?);
        self.polled.notify_one();
        Ok(answer)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }
}

fn say(kind: &str, body: &impl serde::Serialize) {
    let body = serde_json::to_value(body).expect("an answer serialises");
    println!("{}", json!({"kind": kind, "body": body}));
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tool = std::env::args()
        .nth(1)
        .ok_or("usage: nomos-peer-mcp-tasks-2026 <fail|raise|complete>")?;
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let tools = Tools {
        tasks: TaskManager::new(),
        polled: Arc::new(Notify::new()),
    };
    let server = tokio::spawn(async move {
        if let Ok(service) = tools.serve(server_end).await {
            let _ = service.waiting().await;
        }
    });
    let capabilities = ClientCapabilities::builder().enable_tasks().build();
    let client = ClientConfig::new(capabilities, Implementation::from_build_env())
        .serve(client_end)
        .await?;
    let created = match client
        .call_tool_once(CallToolRequestParams::new(tool))
        .await?
    {
        CallToolResponse::Task(created) => created,
        other => return Err(format!("no task: {other:?}").into()),
    };
    say("created", &created);
    loop {
        let answer = client
            .peer()
            .get_task(GetTaskParams::new(created.task.task_id.clone()))
            .await?;
        say("polled", &answer);
        if answer.task.status().is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    client.cancel().await?;
    server.abort();
    Ok(())
}
