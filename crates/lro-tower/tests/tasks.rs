//! Completed task results (`tasks/get`) get the same offload treatment as
//! direct tool results, repeated polls return the same file, and a caller
//! polling another's task id gets nothing of the other's from the layer.

mod support;

use std::{path::Path, time::Duration};

use lro_core::principal::Principal;
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
use tokio_util::sync::CancellationToken;

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

fn task_client() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("task-client", "0"),
    )
}

/// Starts the server's task; returns its id.
async fn start(client: &Client) -> String {
    let started = client
        .call_tool_once(CallToolRequestParams::new("slow_query"))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = started else {
        panic!("expected a task, got {started:?}")
    };
    created.task.task_id
}

/// Polls task `id` once; returns the offloaded file's path and the whole
/// answer as JSON text.
async fn poll(client: &Client, id: &str) -> (String, String) {
    let got = client
        .get_task(GetTaskParams::new(id.to_owned()))
        .await
        .unwrap();
    let answer = serde_json::to_string(&got).unwrap();
    let TaskPayload::Completed { result } = got.task.payload else {
        panic!("expected a completed task, got {answer}")
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result)).unwrap();
    let d = first_json(&result);
    assert_eq!(d["offloaded"], true, "{answer}");
    (d["file_path"].as_str().unwrap().to_owned(), answer)
}

#[tokio::test]
async fn a_completed_task_result_is_offloaded_once() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect_with(
        LroLayer::new(config(dir.path(), 500)).wrap(TaskServer),
        task_client(),
    )
    .await;
    let id = start(&client).await;
    let mut paths = Vec::new();
    for _ in 0..2 {
        let (path, _) = poll(&client, &id).await;
        assert!(path.contains("atlatl-slow_query-"), "{path}");
        paths.push(path);
    }
    assert_eq!(paths[0], paths[1], "repeated polls reuse the file");
    assert_eq!(check_file(std::path::Path::new(&paths[0])).len(), 300);
    assert_eq!(offload_files(dir.path()).len(), 1);
}

/// Every test over HTTP is over in a few seconds; a hang fails it.
const PATIENCE: Duration = Duration::from_secs(60);

/// Two principals over streamable HTTP on one server whose handler is
/// cloned for every session, so that the sessions share one task book. The
/// inner server answers any caller's `tasks/get` (authorizing tasks is its
/// business): bob, polling alice's task id, gets the task from it, offloaded
/// anew into his own folder, never alice's cached file or her tool's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_polling_anothers_task_gets_nothing_of_the_others() {
    tokio::time::timeout(PATIENCE, async {
        let dir = tempfile::tempdir().unwrap();
        let ct = CancellationToken::new();
        let lro = LroLayer::new(config(dir.path(), 500)).wrap(TaskServer);
        let addr = serve_http_as(move || lro.clone(), true, &ct).await;
        let alice = connect_http_as(addr, "alice@example.test", task_client()).await;
        let bob = connect_http_as(addr, "bob@example.test", task_client()).await;

        let id = start(&alice).await;
        let (a, _) = poll(&alice, &id).await;
        let a_dir = Principal::new("alice@example.test").dir(dir.path());
        assert_eq!(Path::new(&a).parent(), Some(a_dir.as_path()));
        assert!(a.contains("atlatl-slow_query-"), "{a}");

        let (b, answer) = poll(&bob, &id).await;
        let a_name = Path::new(&a).file_name().unwrap().to_str().unwrap();
        assert!(
            !answer.contains(a_name),
            "bob's answer names alice's file {a_name}"
        );
        let b_dir = Principal::new("bob@example.test").dir(dir.path());
        assert_eq!(Path::new(&b).parent(), Some(b_dir.as_path()));
        assert!(
            b.contains("atlatl-task-"),
            "bob did not start the task here, so its tool is unknown to him: {b}"
        );
        // Each keeps the file of their own first poll.
        assert_eq!(poll(&bob, &id).await.0, b);
        assert_eq!(poll(&alice, &id).await.0, a);
        ct.cancel();
    })
    .await
    .expect("bounded");
}
