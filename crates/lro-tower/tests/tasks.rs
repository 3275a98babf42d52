//! Completed task results (`tasks/get`) get the same offload treatment as
//! direct tool results, and repeated polls return the same file.

mod support;

use lro_tower::LroLayer;
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
        ContentBlock, CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, Implementation,
        ServerCapabilities, ServerConfig, Task, TaskPayload, TaskStatus,
    },
    service::RequestContext,
};
use serde_json::Value;
use support::*;

const NOW: &str = "2026-01-01T00:00:00Z";

/// A server whose only tool runs as a task and completes with 300 records.
#[derive(Clone)]
struct TaskServer;

impl ServerHandler for TaskServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        Ok(CallToolResponse::Task(CreateTaskResult::new(Task::new(
            "task-1",
            TaskStatus::Working,
            NOW,
            NOW,
        ))))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let items: Vec<Value> = (0..300).map(|i| item(i, 30)).collect();
        let result = CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string(&items).unwrap(),
        )]);
        let Value::Object(result) = serde_json::to_value(result).unwrap() else {
            unreachable!()
        };
        Ok(GetTaskResult::new(DetailedTask::new(
            Task::new(request.task_id, TaskStatus::Completed, NOW, NOW),
            TaskPayload::Completed { result },
        )))
    }
}

#[tokio::test]
async fn a_completed_task_result_is_offloaded_once() {
    let dir = tempfile::tempdir().unwrap();
    let client_cfg = ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("task-client", "0"),
    );
    let client = connect_with(
        LroLayer::new(config(dir.path(), 500)).wrap(TaskServer),
        client_cfg,
    )
    .await;
    let started = client
        .call_tool_once(CallToolRequestParams::new("slow_query"))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = started else {
        panic!("expected a task, got {started:?}")
    };
    let mut paths = Vec::new();
    for _ in 0..2 {
        let got = client
            .get_task(GetTaskParams::new(created.task.task_id.clone()))
            .await
            .unwrap();
        let TaskPayload::Completed { result } = got.task.payload else {
            panic!("expected a completed task")
        };
        let result: CallToolResult = serde_json::from_value(Value::Object(result)).unwrap();
        let d = first_json(&result);
        assert_eq!(d["offloaded"], true);
        assert!(
            d["file_path"]
                .as_str()
                .unwrap()
                .contains("atlatl-slow_query-")
        );
        paths.push(d["file_path"].as_str().unwrap().to_owned());
    }
    assert_eq!(paths[0], paths[1], "repeated polls reuse the file");
    assert_eq!(check_file(std::path::Path::new(&paths[0])).len(), 300);
    assert_eq!(offload_files(dir.path()).len(), 1);
}
