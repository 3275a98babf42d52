//! The prompt and the resources, through a real rmcp client speaking to the
//! built binary over stdio, on both lifecycles (2025-11-25 `initialize`,
//! 2026-07-28 `server/discover`), with and without the LRO layer: declared
//! in the capabilities, listed with caching hints, read and got.

use memory_server::catalog::{
    MEMORY_URI_PREFIX, MEMORY_URI_TEMPLATE, NAMESPACES_URI, RECALL_PROMPT, TTL_MS,
};
use rmcp::{
    model::{
        CacheScope, ClientConfig, GetPromptRequestParams, ProtocolVersion,
        ReadResourceRequestParams,
    },
    service::{ClientLifecycleMode, ClientServiceExt as _},
};
use serde_json::{Value, json};

mod support;

async fn catalog_is_served(lifecycle: ClientLifecycleMode, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let transport = support::stdio_binary(args, dir.path());
    let client = ClientConfig::default()
        .serve_with_lifecycle(transport, lifecycle.clone())
        .await
        .unwrap();
    let what = format!("{lifecycle:?} {args:?}");
    let capabilities = &client.peer_info().expect("lifecycle done").capabilities;
    assert!(capabilities.prompts.is_some(), "{what}");
    assert!(capabilities.resources.is_some(), "{what}");

    let prompts = client.list_prompts(None).await.unwrap();
    assert_eq!(
        (prompts.ttl_ms, prompts.cache_scope),
        (Some(TTL_MS), Some(CacheScope::Public))
    );
    assert_eq!(prompts.prompts.len(), 1, "{what}");
    let recall = &prompts.prompts[0];
    assert_eq!(recall.name, RECALL_PROMPT);
    let arguments = recall.arguments.as_deref().unwrap();
    assert_eq!(
        (arguments[0].name.as_str(), arguments[0].required),
        ("topic", Some(true))
    );
    let topic = json!({"topic": "Atlas caching"})
        .as_object()
        .cloned()
        .unwrap();
    let got = client
        .get_prompt(GetPromptRequestParams::new(RECALL_PROMPT).with_arguments(topic))
        .await
        .unwrap();
    let text = &got.messages[0].content.as_text().unwrap().text;
    assert!(
        text.contains("recall_memories") && text.contains("Atlas caching"),
        "{text}"
    );
    assert!(
        client
            .get_prompt(GetPromptRequestParams::new(RECALL_PROMPT))
            .await
            .is_err(),
        "{what}: no topic"
    );

    let resources = client.list_resources(None).await.unwrap();
    assert_eq!(
        (resources.ttl_ms, resources.cache_scope),
        (Some(TTL_MS), Some(CacheScope::Public))
    );
    let uris: Vec<&str> = resources.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, [NAMESPACES_URI], "{what}");
    let templates = client.list_resource_templates(None).await.unwrap();
    assert_eq!(templates.ttl_ms, Some(TTL_MS));
    assert_eq!(
        templates.resource_templates[0].uri_template,
        MEMORY_URI_TEMPLATE
    );

    let read = client
        .read_resource(ReadResourceRequestParams::new(NAMESPACES_URI))
        .await
        .unwrap();
    assert_eq!(
        (read.ttl_ms, read.cache_scope),
        (Some(TTL_MS), Some(CacheScope::Public))
    );
    let namespaces = read_json(&read.contents[0]);
    assert_eq!(namespaces["total"], 40, "{what}");
    let counted: u64 = namespaces["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 40, "{what}");

    // A memory's id, from a tool, reads back whole through the template.
    // (One recalled memory stays inline; a listing would be offloaded whole.)
    let recalled = support::call_json(
        &client,
        "recall_memories",
        json!({"query": "Atlas", "limit": 1}),
    )
    .await;
    let id = recalled["memories"][0]["id"].as_str().unwrap();
    let uri = format!("{MEMORY_URI_PREFIX}{id}");
    let memory = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let memory = read_json(&memory.contents[0]);
    assert_eq!(memory["id"], id, "{what}");
    assert!(memory["content"].is_string(), "{what}: full detail");
    assert!(
        client
            .read_resource(ReadResourceRequestParams::new("memory://memories/nope"))
            .await
            .is_err(),
        "{what}"
    );

    // The tools are the same four (plus lro_extract behind the layer).
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.len(),
        if args.contains(&"--no-lro") { 4 } else { 5 },
        "{what}"
    );
    client.cancel().await.unwrap();
}

fn read_json(contents: &rmcp::model::ResourceContents) -> Value {
    let rmcp::model::ResourceContents::TextResourceContents {
        text, mime_type, ..
    } = contents
    else {
        panic!("text contents: {contents:?}");
    };
    assert_eq!(mime_type.as_deref(), Some("application/json"));
    serde_json::from_str(text).unwrap()
}

fn discover() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

#[tokio::test]
async fn prompt_and_resources_over_initialize() {
    catalog_is_served(ClientLifecycleMode::Initialize, &[]).await;
}

#[tokio::test]
async fn prompt_and_resources_over_discover() {
    catalog_is_served(discover(), &[]).await;
}

#[tokio::test]
async fn prompt_and_resources_without_the_layer() {
    catalog_is_served(discover(), &["--no-lro"]).await;
    catalog_is_served(ClientLifecycleMode::Initialize, &["--no-lro"]).await;
}
