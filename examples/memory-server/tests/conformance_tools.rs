//! `--conformance-tools`, through a real rmcp client speaking 2026-07-28
//! (`server/discover`) to the built binary over stdio, behind the LRO layer:
//! the three diagnostic tools are listed only with the flag, a missing
//! client capability is -32021 naming it as an object, the elicitation is an
//! `InputRequiredResult`, and a log message is sent only to a request whose
//! `_meta` asked for a log level it passes.

// Logging is deprecated by SEP-2577; the per-request logLevel is under test.
#![allow(deprecated)]

use std::time::Duration;

use memory_server::conformance::TOOLS;
use rmcp::{
    ClientHandler, RoleClient,
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, Implementation,
        LoggingLevel, LoggingMessageNotificationParam, ProtocolVersion, RequestMetaObject,
    },
    service::{
        ClientLifecycleMode, ClientServiceExt as _, NotificationContext, RunningService,
        ServiceError,
    },
};
use serde_json::json;
use tokio::sync::mpsc;

mod support;

/// A client declaring `capabilities` that hands every log message it hears to
/// a channel.
struct Logs {
    capabilities: ClientCapabilities,
    heard: mpsc::UnboundedSender<LoggingMessageNotificationParam>,
}

impl ClientHandler for Logs {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.heard.send(params);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.capabilities.clone(),
            Implementation::new("conformance-tools-test", "1"),
        )
    }
}

type Client = RunningService<RoleClient, Logs>;

/// memory-server over stdio with `args`, and a 2026-07-28 client declaring
/// `capabilities`; the receiver of the log messages it hears.
async fn connect(
    args: &[&str],
    capabilities: ClientCapabilities,
) -> (
    Client,
    mpsc::UnboundedReceiver<LoggingMessageNotificationParam>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let transport = support::stdio_binary(args, dir.path());
    let (heard, logs) = mpsc::unbounded_channel();
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = Logs {
        capabilities,
        heard,
    }
    .serve_with_lifecycle(transport, lifecycle)
    .await
    .unwrap();
    (client, logs, dir)
}

async fn tool_names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name.into_owned()).collect()
}

/// `test_logging_tool`, its `_meta` asking for `level` if any.
async fn call_logging_tool(client: &Client, level: Option<LoggingLevel>) {
    let mut params = CallToolRequestParams::new("test_logging_tool");
    if let Some(level) = level {
        let mut meta = RequestMetaObject::new();
        meta.set_log_level(level);
        params.meta = Some(meta);
    }
    let result = client.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

#[tokio::test]
async fn the_diagnostic_tools_are_listed_only_with_the_flag() {
    let (client, _, _dir) = connect(&[], ClientCapabilities::default()).await;
    let names = tool_names(&client).await;
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(TOOLS.iter().all(|t| !names.iter().any(|n| n == t)));
    client.cancel().await.unwrap();

    let (client, _, _dir) = connect(&["--conformance-tools"], Default::default()).await;
    let names = tool_names(&client).await;
    assert_eq!(names.len(), 8, "{names:?}");
    assert!(TOOLS.iter().all(|t| names.iter().any(|n| n == t)));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_undeclared_capability_is_32021_naming_it_as_an_object() {
    let (client, _, _dir) = connect(&["--conformance-tools"], Default::default()).await;
    for (tool, capability) in [
        ("test_missing_capability", "sampling"),
        ("test_streaming_elicitation", "elicitation"),
    ] {
        let err = client
            .call_tool(CallToolRequestParams::new(tool))
            .await
            .expect_err(tool);
        let ServiceError::McpError(err) = err else {
            panic!("{tool}: {err:?}");
        };
        assert_eq!(err.code.0, -32021, "{tool}: {err:?}");
        let data = err.data.expect("data");
        assert_eq!(
            data["requiredCapabilities"],
            json!({capability: {}}),
            "{tool}"
        );
    }
    client.cancel().await.unwrap();

    let declared = ClientCapabilities::builder()
        .enable_sampling()
        .enable_elicitation()
        .build();
    let (client, _, _dir) = connect(&["--conformance-tools"], declared).await;
    let result = client
        .call_tool(CallToolRequestParams::new("test_missing_capability"))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    // The elicitation is asked for in the result, not by a request of the
    // server's own.
    let response = client
        .call_tool_once(CallToolRequestParams::new("test_streaming_elicitation"))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(input) = response else {
        panic!("{response:?}");
    };
    let requests = input.input_requests.expect("input requests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["confirm"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_log_message_needs_a_log_level_it_passes() {
    let (client, mut logs, _dir) = connect(&["--conformance-tools"], Default::default()).await;
    call_logging_tool(&client, None).await;
    call_logging_tool(&client, Some(LoggingLevel::Error)).await;
    call_logging_tool(&client, Some(LoggingLevel::Info)).await;
    // stdio is ordered: a message the first two calls had wrongly sent
    // would arrive before the third call's.
    let heard = tokio::time::timeout(Duration::from_secs(10), logs.recv())
        .await
        .expect("the info call logs")
        .unwrap();
    assert_eq!(heard.level, LoggingLevel::Info);
    assert_eq!(heard.data, json!("test_logging_tool ran"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(logs.try_recv().is_err(), "one message only");
    client.cancel().await.unwrap();
}
