//! Results whose records are not one JSON array, through the layer and a
//! real rmcp client: an object holding several arrays (server-memory's
//! `read_graph`, recorded from the real server) and a top-level array in
//! structured content (which 2026-07-28 allows).
//!
//! `fixtures/server-memory-read_graph.json` is the `CallToolResult` that
//! `@modelcontextprotocol/server-memory` 2026.8.31 answered to `read_graph`
//! after `create_entities` (40 entities: `person-{i}`, type
//! person/project/team by `i % 3`) and `create_relations` (30 relations):
//! its text block (the graph pretty-printed) and its structured content.

mod support;

use std::{path::Path, process::Command};

use lro_tower::{EXTRACT_TOOL, LroLayer};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use support::{Client, call, check_file, config, connect, first_json};

const READ_GRAPH: &str = include_str!("fixtures/server-memory-read_graph.json");
const ENTITIES: usize = 40;
const RELATIONS: usize = 30;
/// Far below the graph's ~2,300 tokens.
const THRESHOLD: u32 = 500;

/// Answers `read_graph` with the recorded result, or part of it, and
/// `rows` with a top-level array as structured content.
#[derive(Clone, Copy)]
enum Graph {
    /// Text and structured content, as recorded.
    Both,
    /// The text block only (a server without an output schema).
    TextOnly,
}

impl ServerHandler for Graph {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let empty = std::sync::Arc::new(serde_json::Map::new());
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("read_graph", "the knowledge graph", empty.clone()),
            Tool::new("rows", "rows as a top-level array", empty),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut result: CallToolResult = serde_json::from_str(READ_GRAPH).unwrap();
        if request.name == "rows" {
            let rows: Vec<Value> = (0..200)
                .map(|i| json!({"id": i, "title": format!("row {i}"), "kind": (["a", "b"][i % 2])}))
                .collect();
            result = CallToolResult::success(vec![ContentBlock::text("200 rows")]);
            result.structured_content = Some(Value::Array(rows));
        } else if let Graph::TextOnly = self {
            result.structured_content = None;
        }
        Ok(CallToolResponse::Complete(result))
    }
}

async fn served(dir: &Path, graph: Graph) -> Client {
    connect(
        LroLayer::new(config(dir, THRESHOLD))
            .extract_isolation(())
            .wrap(graph),
    )
    .await
}

fn recorded() -> Value {
    serde_json::from_str::<Value>(READ_GRAPH).unwrap()["structuredContent"].clone()
}

/// Runs a descriptor's recipe command as a user would, with the real jq.
fn run_recipe(command: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(command).output().unwrap();
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `lro_extract` over `path` with `args`, answered as JSON text.
async fn extract(client: &Client, path: &str, args: Value) -> Value {
    let mut all = json!({"file_path": path});
    all.as_object_mut()
        .unwrap()
        .extend(args.as_object().unwrap().clone());
    let result = call(client, EXTRACT_TOOL, all).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    serde_json::from_str(result.content[0].as_text().unwrap().text.trim()).unwrap()
}

#[tokio::test]
async fn read_graph_becomes_records_of_each_array_tagged_with_its_name() {
    for graph in [Graph::Both, Graph::TextOnly] {
        let dir = tempfile::tempdir().unwrap();
        let client = served(dir.path(), graph).await;
        let d = first_json(&call(&client, "read_graph", json!({})).await);
        assert_eq!(d["offloaded"], true);
        assert_eq!(d["summary"]["records"], "entities and relations");
        assert_eq!(d["summary"]["count"], ENTITIES + RELATIONS);
        // The schema describes both arrays' fields, and the tag.
        let props = &d["line_schema"]["properties"];
        for field in ["array", "entityType", "relationType"] {
            assert!(props.get(field).is_some(), "{field} in {props}");
        }
        let guidance = d["guidance"].as_str().unwrap();
        assert!(
            guidance
                .contains("Field \"array\" names each one's array: entities (40), relations (30)."),
            "{guidance}"
        );

        // Every entity and relation, whole, tagged with its array's name.
        let path = d["file_path"].as_str().unwrap();
        let records = check_file(Path::new(path));
        let source = recorded();
        let mut expected = Vec::new();
        for name in ["entities", "relations"] {
            for item in source[name].as_array().unwrap() {
                let mut tagged = json!({"array": name});
                tagged
                    .as_object_mut()
                    .unwrap()
                    .extend(item.as_object().unwrap().clone());
                expected.push(tagged);
            }
        }
        assert_eq!(records, expected);
        let first_line = std::fs::read_to_string(path).unwrap();
        let first_record = first_line.lines().nth(1).unwrap();
        assert!(
            first_record.starts_with(r#"{"array":"entities","#),
            "{first_record}"
        );

        // `where entityType eq person` finds the people, and the tag
        // selects an array.
        let people = (0..ENTITIES).filter(|i| i % 3 == 0).count();
        let where_count = |field: &str, value: &str| json!({"where": [{"field": field, "op": "eq", "value": value}], "count": true});
        assert_eq!(
            extract(&client, path, where_count("entityType", "person")).await,
            json!({"count": people})
        );
        assert_eq!(
            extract(&client, path, where_count("array", "relations")).await,
            json!({"count": RELATIONS})
        );

        // Every recipe runs with the real jq and prints something, the
        // count per array among them; lro_extract derives the same recipes.
        let recipes = d["jq_recipes"].as_array().unwrap();
        let outputs: Vec<String> = recipes
            .iter()
            .map(|r| run_recipe(r["command"].as_str().unwrap()))
            .collect();
        for (r, out) in recipes.iter().zip(&outputs) {
            assert!(!out.trim().is_empty(), "{r} printed nothing");
        }
        let per_array = recipes
            .iter()
            .position(|r| r["description"] == "Count records in each array")
            .expect("a recipe counts each array");
        assert_eq!(
            outputs[per_array].trim(),
            r#"[{"array":"entities","count":40},{"array":"relations","count":30}]"#
        );
        let native = extract(&client, path, json!({"recipe": per_array + 1})).await;
        assert_eq!(native.to_string(), outputs[per_array].trim());
    }
}

#[tokio::test]
async fn a_truncated_graph_keeps_the_shape_of_its_arrays() {
    let root = tempfile::tempdir().unwrap();
    let blocker = root.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let client = served(&blocker.join("out"), Graph::TextOnly).await;
    let result = call(&client, "read_graph", json!({})).await;
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| Some(c.as_text()?.text.as_str()))
        .collect();
    assert!(texts[0].contains("truncated"), "{texts:?}");
    // The kept records in the tool's own shape: the entities from the
    // front, untagged, and the relations' array (empty: the entities came
    // first and filled the budget).
    let kept: Value = serde_json::from_str(texts[1]).unwrap();
    let entities = kept["entities"].as_array().unwrap();
    assert!(!entities.is_empty() && entities.len() < ENTITIES, "{kept}");
    assert_eq!(
        entities[..],
        recorded()["entities"].as_array().unwrap()[..entities.len()]
    );
    assert_eq!(kept["relations"], json!([]));
}

#[tokio::test]
async fn a_top_level_array_in_structured_content_is_a_record_set() {
    let dir = tempfile::tempdir().unwrap();
    let client = served(dir.path(), Graph::Both).await;
    let d = first_json(&call(&client, "rows", json!({})).await);
    assert_eq!(d["offloaded"], true, "{d}");
    assert_eq!(d["summary"]["records"], "JSON objects");
    let records = check_file(Path::new(d["file_path"].as_str().unwrap()));
    assert_eq!(records.len(), 200);
    assert_eq!(records[7], json!({"id": 7, "kind": "b", "title": "row 7"}));
}
