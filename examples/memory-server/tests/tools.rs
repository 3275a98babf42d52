//! The tools, called through a real rmcp client, without the LRO layer.

use lro_corpus::Corpus;
use memory_server::{MemoryServer, server::estimate_tokens};
use serde_json::{Value, json};

mod support;
use support::{call, call_json, connect, keys, text};

fn server() -> MemoryServer {
    MemoryServer::new(Corpus::default_corpus())
}

fn ids(response: &Value) -> Vec<String> {
    response["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn lists_four_plain_text_tools_with_documented_inputs() {
    let client = connect(server()).await;
    let info = client.peer_info().expect("initialized");
    let implementation = info.server_info.as_ref().expect("server info");
    assert_eq!(implementation.name, "memory-server");
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.tools.is_some());
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or("")
            .contains("list_memories")
    );

    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "inject_context",
            "list_memories",
            "recall_memories",
            "search_memories"
        ]
    );
    for tool in &tools {
        assert!(
            tool.output_schema.is_none(),
            "{} has an outputSchema",
            tool.name
        );
        assert!(tool.description.is_some());
        let schema = Value::Object((*tool.input_schema).clone());
        for (field, prop) in schema["properties"].as_object().unwrap() {
            assert!(
                prop["description"].is_string(),
                "{}.{field} has no description: {schema}",
                tool.name
            );
        }
    }
    let list = tools.iter().find(|t| t.name == "list_memories").unwrap();
    let schema = serde_json::to_string(&*list.input_schema).unwrap();
    assert!(schema.contains(r#"["light","medium","full"]"#), "{schema}");
}

#[tokio::test]
async fn list_paginates_with_next_offset() {
    let client = connect(server()).await;
    let everything = call_json(&client, "list_memories", json!({})).await;
    assert_eq!(everything["total"], 500);
    assert_eq!(everything["next_offset"], Value::Null);
    let all_ids = ids(&everything);
    assert_eq!(all_ids.len(), 500);

    let first = call_json(&client, "list_memories", json!({"limit": 200})).await;
    assert_eq!(first["total"], 500);
    assert_eq!(first["next_offset"], 200);
    assert_eq!(ids(&first), all_ids[..200]);

    // Walk the pages: they tile the full listing exactly.
    let mut walked = Vec::new();
    let mut offset = Some(0u64);
    let mut pages = 0;
    while let Some(o) = offset {
        let page = call_json(&client, "list_memories", json!({"limit": 150, "offset": o})).await;
        walked.extend(ids(&page));
        offset = page["next_offset"].as_u64();
        pages += 1;
    }
    assert_eq!(pages, 4);
    assert_eq!(walked, all_ids);

    let last = call_json(
        &client,
        "list_memories",
        json!({"limit": 100, "offset": 400}),
    )
    .await;
    assert_eq!(last["next_offset"], Value::Null);
    assert_eq!(ids(&last).len(), 100);
    let past = call_json(
        &client,
        "list_memories",
        json!({"limit": 10, "offset": 9999}),
    )
    .await;
    assert_eq!(ids(&past).len(), 0);
    assert_eq!(past["next_offset"], Value::Null);
}

#[tokio::test]
async fn list_is_sorted_by_created() {
    let client = connect(server()).await;
    let all = call_json(&client, "list_memories", json!({})).await;
    let created: Vec<&str> = all["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["created"].as_str().unwrap())
        .collect();
    assert!(created.windows(2).all(|w| w[0] <= w[1]));
}

#[tokio::test]
async fn list_filters_by_namespace_prefix() {
    let client = connect(server()).await;
    let corpus = Corpus::default_corpus();
    let incidents = call_json(
        &client,
        "list_memories",
        json!({"namespace": "_episodic/incidents"}),
    )
    .await;
    let expected = corpus.in_namespace(Some("_episodic/incidents")).count();
    assert!(expected > 0);
    assert_eq!(incidents["total"], expected);
    assert!(
        incidents["memories"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["namespace"] == "_episodic/incidents" && m["memory_type"] == "episodic")
    );

    let semantic = call_json(
        &client,
        "list_memories",
        json!({"namespace": "_semantic", "limit": 5}),
    )
    .await;
    let total = semantic["total"].as_u64().unwrap() as usize;
    assert_eq!(total, corpus.in_namespace(Some("_semantic")).count());
    assert_eq!(semantic["next_offset"], 5);
    assert!(
        semantic["memories"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["namespace"].as_str().unwrap().starts_with("_semantic/"))
    );

    let none = call_json(&client, "list_memories", json!({"namespace": "_nothing"})).await;
    assert_eq!(
        none,
        json!({"memories": [], "total": 0, "next_offset": null})
    );
}

#[tokio::test]
async fn detail_argument_selects_fields() {
    let client = connect(server()).await;
    let light = call_json(&client, "list_memories", json!({"limit": 1})).await;
    let medium = call_json(
        &client,
        "list_memories",
        json!({"limit": 1, "detail": "medium"}),
    )
    .await;
    let full = call_json(
        &client,
        "list_memories",
        json!({"limit": 1, "detail": "full"}),
    )
    .await;
    let (l, m, f) = (
        &light["memories"][0],
        &medium["memories"][0],
        &full["memories"][0],
    );
    assert!(l.get("content").is_none() && l.get("confidence").is_none());
    assert!(m["confidence"].is_number() && m.get("provenance").is_none());
    assert!(f["provenance"]["confidence"].is_number() && f.get("confidence").is_none());
    assert_eq!(keys(l).len(), 9);

    let bad = call(&client, "list_memories", json!({"detail": "huge"})).await;
    assert_eq!(bad.is_error, Some(true));
}

#[tokio::test]
async fn recall_ranks_and_limits() {
    let client = connect(server()).await;
    let corpus = Corpus::default_corpus();
    let r = call_json(
        &client,
        "recall_memories",
        json!({"query": "Cobalt caching"}),
    )
    .await;
    assert_eq!(keys(&r), ["count", "memories"]);
    assert_eq!(r["count"], 50);
    let expected: Vec<String> = corpus
        .recall("Cobalt caching", 50)
        .iter()
        .map(|h| h.memory.id.clone())
        .collect();
    assert_eq!(ids(&r), expected);
    // The best hit mentions both terms.
    let best = corpus.get(&expected[0]).unwrap();
    let text = format!("{} {} {:?}", best.title, best.content, best.tags).to_lowercase();
    assert!(
        text.contains("cobalt") && text.contains("caching"),
        "{text}"
    );

    let few = call_json(
        &client,
        "recall_memories",
        json!({"query": "Cobalt caching", "limit": 3, "detail": "medium"}),
    )
    .await;
    assert_eq!(few["count"], 3);
    assert_eq!(ids(&few), expected[..3]);
    assert!(few["memories"][0]["content"].is_string());

    let nothing = call_json(&client, "recall_memories", json!({"query": "zzzz"})).await;
    assert_eq!(nothing, json!({"memories": [], "count": 0}));
}

#[tokio::test]
async fn search_finds_substrings() {
    let client = connect(server()).await;
    let r = call_json(
        &client,
        "search_memories",
        json!({"query": "borealis", "detail": "medium"}),
    )
    .await;
    let n = r["count"].as_u64().unwrap();
    assert!(n > 0 && n <= 100);
    for m in r["memories"].as_array().unwrap() {
        let hay = format!("{} {}", m["title"], m["content"]).to_lowercase();
        assert!(hay.contains("borealis"));
    }
    let limited = call_json(
        &client,
        "search_memories",
        json!({"query": "a", "limit": 7}),
    )
    .await;
    assert_eq!(limited["count"], 7);
}

#[tokio::test]
async fn inject_context_stays_within_the_token_budget() {
    let client = connect(server()).await;
    for budget in [40, 100, 300, 2000] {
        let r = call(
            &client,
            "inject_context",
            json!({"query": "Atlas deployments", "token_budget": budget}),
        )
        .await;
        let context = text(&r);
        assert!(
            estimate_tokens(context) <= budget,
            "{budget}: {}",
            estimate_tokens(context)
        );
        if budget >= 100 {
            assert!(context.starts_with("## "), "{context}");
        }
    }
    // The default budget is 2000 tokens; 50 medium memories do not fit in it.
    let r = call(
        &client,
        "inject_context",
        json!({"query": "Atlas deployments"}),
    )
    .await;
    let context = text(&r);
    let blocks = context.matches("\n## ").count() + 1;
    assert!(estimate_tokens(context) <= 2000);
    assert!(blocks > 5 && blocks < 50, "{blocks}");
    // Blocks follow recall order.
    let corpus = Corpus::default_corpus();
    let best = corpus.recall("Atlas deployments", 1)[0].memory;
    assert!(context.starts_with(&format!(
        "## {} ({})\n{}",
        best.title, best.namespace, best.content
    )));

    let none = call(&client, "inject_context", json!({"query": "zzzz"})).await;
    assert_eq!(text(&none), memory_server::server::NO_MATCH);
}

#[tokio::test]
async fn bad_arguments_are_tool_errors() {
    let client = connect(server()).await;
    let zero = call(&client, "list_memories", json!({"limit": 0})).await;
    assert_eq!(zero.is_error, Some(true));
    assert!(text(&zero).contains("limit"));
    let zero = call(
        &client,
        "recall_memories",
        json!({"query": "x", "limit": 0}),
    )
    .await;
    assert_eq!(zero.is_error, Some(true));
}
