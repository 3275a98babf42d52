//! The `lro_extract` tool the layer adds, through a real rmcp client.

mod support;

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use lro_core::{OffloadConfig, ScriptAware, TokenEstimator};
use lro_extract::Job;
use lro_tower::{EXTRACT_TOOL, LroLayer};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
        ListToolsResult, PaginatedRequestParams, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use support::*;

/// The test server behind the layer at `threshold`, offloading to `dir`;
/// queries run in-process (a test binary cannot be a worker process).
async fn served(dir: &std::path::Path, threshold: u32) -> Client {
    connect(
        LroLayer::new(config(dir, threshold))
            .extract_isolation(())
            .wrap(TestServer::default()),
    )
    .await
}

#[tokio::test]
async fn extraction_is_offered_and_answers_from_the_offloaded_file() {
    let dir = tempfile::tempdir().unwrap();
    let client = served(dir.path(), 500).await;
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name == EXTRACT_TOOL)
        .expect("lro_extract listed");
    assert!(tool.input_schema.get("properties").is_some());

    let d = first_json(&call(&client, "items", json!({"n": 300, "size": 10})).await);
    assert!(d["guidance"].as_str().unwrap().contains("lro_extract"));
    assert_eq!(
        d["jq_recipes"].as_array().unwrap().len(),
        10,
        "recipes stay in the descriptor"
    );
    let path = d["file_path"].as_str().unwrap();

    // Several conditions at once, counted in one call.
    let counted = call(
        &client,
        EXTRACT_TOOL,
        json!({"file_path": path, "where": [
            {"field": "kind", "op": "eq", "value": "beta"},
            {"field": "rank", "op": "gte", "value": 3}
        ], "count": true}),
    )
    .await;
    assert_ne!(counted.is_error, Some(true), "{counted:?}");
    let expected = (0..300).filter(|i| i % 3 == 1 && i % 7 >= 3).count();
    let text = &counted.content[0].as_text().unwrap().text;
    let got: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(got, json!({"count": expected}), "{text}");

    // A custom jq query.
    let q = call(
        &client,
        EXTRACT_TOOL,
        json!({"file_path": path, "query": "select(.id == \"item-00042\") | .rank"}),
    )
    .await;
    assert_eq!(q.content[0].as_text().unwrap().text.trim(), "0");
}

#[tokio::test]
async fn bad_input_and_escapes_are_clear_tool_errors() {
    let dir = tempfile::tempdir().unwrap();
    let client = served(dir.path(), 500).await;
    for args in [
        json!({"file_path": "/etc/passwd", "recipe": 1}),
        json!({"file_path": "../../etc/passwd", "query": "."}),
        json!({"file_path": "x", "recipe": 1, "query": "."}),
        json!({"nonsense": true}),
    ] {
        let r = call(&client, EXTRACT_TOOL, args.clone()).await;
        assert_eq!(r.is_error, Some(true), "{args}");
        assert!(!r.content[0].as_text().unwrap().text.is_empty());
    }
}

/// `lro_extract` of `query` on the file a call of `tool` with `args` was
/// offloaded to.
async fn offload_and_query(
    client: &Client,
    tool: &str,
    args: Value,
    query: &str,
) -> CallToolResult {
    let d = first_json(&call(client, tool, args).await);
    call(
        client,
        EXTRACT_TOOL,
        json!({"file_path": d["file_path"], "query": query}),
    )
    .await
}

/// What `lro_extract` answers to `count` on the file at `path`, trimmed.
async fn counted(client: &Client, path: &str) -> String {
    let r = call(
        client,
        EXTRACT_TOOL,
        json!({"file_path": path, "count": true}),
    )
    .await;
    r.content[0].as_text().unwrap().text.trim().to_owned()
}

#[tokio::test]
async fn extraction_output_over_the_threshold_is_truncated_not_offloaded_again() {
    let dir = tempfile::tempdir().unwrap();
    let client = served(dir.path(), 300).await;
    let all = offload_and_query(&client, "items", json!({"n": 400, "size": 30}), ".").await;
    let text = &all.content[0].as_text().unwrap().text;
    assert!(text.len() <= 300 * 4);
    // Whole results only, each valid JSON.
    for line in text.lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
    let notice = &all.content[1].as_text().unwrap().text;
    assert!(notice.contains("output cut at"), "{notice}");
    // The notice names the exact call for the next part, and it works.
    let (_, next) = notice.split_once("next part: ").expect("a next part");
    let next: Value = serde_json::from_str(next).unwrap();
    let shown = text.lines().count();
    assert_eq!(next["offset"], shown);
    let more = call(&client, EXTRACT_TOOL, next).await;
    let first_next: Value = serde_json::from_str(
        more.content[0]
            .as_text()
            .unwrap()
            .text
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first_next["id"], format!("item-{shown:05}"));
    assert_eq!(offload_files(dir.path()).len(), 1, "no second file");
}

#[tokio::test]
async fn cjk_extraction_output_is_cut_by_the_estimator_not_by_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let client = served(dir.path(), 300).await;
    let all = offload_and_query(&client, "cjk", json!({"n": 200, "size": 3}), ".text").await;
    let text = &all.content[0].as_text().unwrap().text;
    // Cutting at 4 bytes a token would have let through about 1.33x the threshold.
    let tokens = ScriptAware.estimate(text);
    assert!(tokens <= 300, "{tokens} tokens shown");
    assert!(tokens > 200, "cut no earlier than it must: {tokens}");
    for line in text.lines() {
        assert!(serde_json::from_str::<Value>(line).unwrap().is_string());
    }
    assert!(
        all.content[1]
            .as_text()
            .unwrap()
            .text
            .contains("output cut at")
    );
}

#[tokio::test]
async fn turning_extraction_off_removes_the_tool_and_uses_shell_guidance() {
    let dir = tempfile::tempdir().unwrap();
    let client =
        connect(LroLayer::new(config(dir.path(), 500).extract(false)).wrap(TestServer::default()))
            .await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().all(|t| t.name != EXTRACT_TOOL));
    let d = first_json(&call(&client, "items", json!({"n": 300})).await);
    assert!(
        d["guidance"]
            .as_str()
            .unwrap()
            .contains("Use the jq recipes above")
    );
}

/// A server's own `lro_extract`, while `own` is set: a proxied upstream may
/// have one, and may drop it and send `tools/list_changed`.
const OWN: &str = "the server's own lro_extract";

#[derive(Clone, Default)]
struct Shadowing {
    inner: TestServer,
    own: Arc<AtomicBool>,
}

impl ServerHandler for Shadowing {
    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut list = self.inner.list_tools(request, cx).await?;
        if self.own.load(Ordering::Relaxed) {
            list.tools
                .push(Tool::new(EXTRACT_TOOL, OWN, JsonObject::default()));
        }
        Ok(list)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name == EXTRACT_TOOL && self.own.load(Ordering::Relaxed) {
            let own = CallToolResult::success(vec![ContentBlock::text(OWN)]);
            return Ok(CallToolResponse::Complete(own));
        }
        self.inner.call_tool(request, cx).await
    }
}

/// A [`Shadowing`] server, its own `lro_extract` on, behind the layer
/// (whose own tools win when `own_tools_win`), and a client of it.
async fn shadowed(dir: &std::path::Path, own_tools_win: bool) -> (Shadowing, Client) {
    let server = Shadowing::default();
    server.own.store(true, Ordering::Relaxed);
    let client = connect(
        LroLayer::new(config(dir, 500))
            .extract_isolation(())
            .own_tools_win(own_tools_win)
            .wrap(server.clone()),
    )
    .await;
    (server, client)
}

#[tokio::test]
async fn a_server_that_drops_its_own_lro_extract_gets_the_layers_after_a_new_listing() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = shadowed(dir.path(), false).await;
    let extract_descriptions = || async {
        let tools = client.list_all_tools().await.unwrap();
        tools
            .into_iter()
            .filter(|t| t.name == EXTRACT_TOOL)
            .map(|t| t.description.unwrap_or_default().into_owned())
            .collect::<Vec<_>>()
    };
    let offload = || async {
        let d = first_json(&call(&client, "items", json!({"n": 300})).await);
        let guidance = d["guidance"].as_str().unwrap().to_owned();
        (d["file_path"].as_str().unwrap().to_owned(), guidance)
    };
    let extract = |path: String| {
        let client = &client;
        async move { counted(client, &path).await }
    };

    assert_eq!(extract_descriptions().await, [OWN]);
    let (path, guidance) = offload().await;
    assert!(guidance.contains("Use the jq recipes above"), "{guidance}");
    assert_eq!(extract(path).await, OWN);

    // The server drops its tool; the client lists again, as it would on
    // `tools/list_changed`, and the layer's tool is back.
    server.own.store(false, Ordering::Relaxed);
    let ours = extract_descriptions().await;
    assert!(ours.len() == 1 && ours[0] != OWN, "{ours:?}");
    let (path, guidance) = offload().await;
    assert!(guidance.contains(EXTRACT_TOOL), "{guidance}");
    assert_eq!(extract(path.clone()).await, r#"{"count":300}"#);

    // And the server's own wins again as soon as it is listed.
    server.own.store(true, Ordering::Relaxed);
    assert_eq!(extract_descriptions().await, [OWN]);
    assert_eq!(extract(path).await, OWN);
}

/// Behind `lro proxy` (`own_tools_win`), the layer's `lro_extract` answers,
/// with the caller's principal, and the server's of the same name is never
/// listed or called: it would read without a principal.
#[tokio::test]
async fn when_the_layers_tools_win_the_servers_own_lro_extract_is_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, client) = shadowed(dir.path(), true).await;
    let tools = client.list_all_tools().await.unwrap();
    let extracts: Vec<_> = tools.iter().filter(|t| t.name == EXTRACT_TOOL).collect();
    assert_eq!(extracts.len(), 1, "{tools:?}");
    assert_ne!(extracts[0].description.as_deref(), Some(OWN));
    let d = first_json(&call(&client, "items", json!({"n": 300})).await);
    assert!(
        d["guidance"].as_str().unwrap().contains(EXTRACT_TOOL),
        "{d}"
    );
    let path = d["file_path"].as_str().unwrap();
    assert_eq!(counted(&client, path).await, r#"{"count":300}"#);
}

/// Every definition goes to the model on every turn: each tool the layer
/// adds keeps its description within what clients keep (Claude Code cuts
/// at 2,048 characters) and its whole definition within 3,000.
#[cfg(feature = "context")]
#[tokio::test]
async fn every_tool_the_layer_adds_is_short() {
    const MAX_DESCRIPTION: usize = 2048;
    const MAX_DEFINITION: usize = 3000;
    let dir = tempfile::tempdir().unwrap();
    let client = connect(
        LroLayer::new(config(dir.path(), 500))
            .extract_isolation(())
            .context_tools(lro_context::ContextOffloader::new())
            .wrap(TestServer::default()),
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    let added: Vec<&Tool> = tools
        .iter()
        .filter(|t| t.name == EXTRACT_TOOL || lro_tower::CONTEXT_TOOLS.contains(&&*t.name))
        .collect();
    assert_eq!(added.len(), 4, "lro_extract and the three context tools");
    for tool in added {
        let description = tool
            .description
            .as_deref()
            .unwrap_or_default()
            .chars()
            .count();
        let definition = tool.name.chars().count()
            + description
            + serde_json::to_string(&tool.input_schema)
                .unwrap()
                .chars()
                .count();
        println!(
            "{}: description {description}, definition {definition} characters",
            tool.name
        );
        assert!(
            description <= MAX_DESCRIPTION,
            "{}: {description}",
            tool.name
        );
        assert!(definition <= MAX_DEFINITION, "{}: {definition}", tool.name);
    }
}

#[tokio::test]
async fn grep_takes_a_plain_pattern_through_the_tool() {
    let got = extract_from_300_items(json!({"grep": "item-00007\""})).await;
    assert_ne!(got.is_error, Some(true), "{got:?}");
    let text = got.content[0].as_text().unwrap().text.clone();
    assert!(text.starts_with("8:"), "{text}");
}

#[tokio::test]
async fn the_configured_limits_hold_a_second_call_of_one_principal_and_time_the_first_out() {
    let dir = tempfile::tempdir().unwrap();
    // As an operator writes it: one extraction per principal, a 1 s wait
    // for a slot and a 3 s timeout; `lro proxy` loads the same table.
    let cfg = OffloadConfig::from_toml_str(
        "[prompt.offload.extraction]
         max_per_principal = 1
         queue_timeout_seconds = 1
         timeout_seconds = 3",
    )
    .unwrap()
    .output_dir(dir.path())
    .threshold_tokens(500);
    // In-process, but saying when a query has its slot and starts.
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let isolation = move |job: Job<'_>| {
        let _ = started_tx.send(job.request.query.clone());
        job.run_in_process()
    };
    let client = connect(
        LroLayer::new(cfg)
            .extract_isolation(isolation)
            .wrap(TestServer::default()),
    )
    .await;
    let d = first_json(&call(&client, "items", json!({"n": 300})).await);
    let path = d["file_path"].as_str().unwrap();

    // Every caller here is the anonymous principal: the second call waits
    // for the one slot the endless first holds, and gives up after 1 s.
    let endless = call(
        &client,
        EXTRACT_TOOL,
        json!({"file_path": path, "query": "last(range(infinite))"}),
    );
    let second = async {
        assert_eq!(
            started.recv().await.flatten().as_deref(),
            Some("last(range(infinite))")
        );
        call(
            &client,
            EXTRACT_TOOL,
            json!({"file_path": path, "query": ".id"}),
        )
        .await
    };
    let (endless, second) = tokio::join!(endless, second);
    assert_eq!(second.is_error, Some(true), "{second:?}");
    let text = &second.content[0].as_text().unwrap().text;
    assert!(
        text.contains("busy") && text.contains("at most 1 at once"),
        "{text}"
    );
    assert_eq!(endless.is_error, Some(true), "{endless:?}");
    let text = &endless.content[0].as_text().unwrap().text;
    assert!(text.contains("stopped after 3000ms"), "{text}");
    // With its slot free again, the same caller's query runs.
    assert_eq!(counted(&client, path).await, r#"{"count":300}"#);
}

#[tokio::test]
async fn an_empty_answer_says_which_condition_was_wrong_and_how_to_fix_it() {
    let got = extract_from_300_items(json!({"count": true, "where": [
        {"field": "rank", "op": "gte", "value": "3"},
        {"field": "knd", "op": "eq", "value": "beta"}
    ]}))
    .await;
    assert_ne!(got.is_error, Some(true), "{got:?}");
    assert_eq!(
        got.content[0].as_text().unwrap().text.trim(),
        r#"{"count":0}"#
    );
    let notice = &got.content[1].as_text().unwrap().text;
    assert!(
        notice.contains("\"rank\" holds numbers: write the value as a number (3)"),
        "{notice}"
    );
    assert!(
        notice.contains("no record has the field \"knd\"; did you mean \"kind\"?"),
        "{notice}"
    );
}

/// One `lro_extract` call with `args` on an offloaded result of 300 items.
async fn extract_from_300_items(mut args: Value) -> CallToolResult {
    let dir = tempfile::tempdir().unwrap();
    let client = served(dir.path(), 500).await;
    let d = first_json(&call(&client, "items", json!({"n": 300, "size": 10})).await);
    args["file_path"] = d["file_path"].clone();
    call(&client, EXTRACT_TOOL, args).await
}
