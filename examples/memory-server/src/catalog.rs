//! The prompt and the resources of [`MemoryServer`](crate::MemoryServer).
//!
//! | kind | name / URI | what |
//! |---|---|---|
//! | prompt | `recall` (argument `topic`, required) | a user message asking the model to find what the store knows about `topic`, naming the tools to use |
//! | resource | `memory://namespaces` | JSON: each namespace of the corpus with its memory type and count |
//! | resource template | `memory://memories/{id}` | JSON: one memory at `full` detail |
//!
//! The corpus never changes while the server runs, so every list and read
//! carries the same caching hints, [`TTL_MS`] and `public` (nothing depends
//! on who asks).
//!
//! ```
//! use lro_corpus::Corpus;
//! use memory_server::catalog;
//!
//! let corpus = Corpus::generate(20, 1);
//! let text = catalog::read(&corpus, catalog::NAMESPACES_URI).unwrap();
//! let json: serde_json::Value = serde_json::from_str(&text).unwrap();
//! assert_eq!(json["total"], 20);
//! assert_eq!(json["namespaces"].as_array().unwrap().len(), 5);
//! ```

use lro_core::Detail;
use lro_corpus::{Corpus, NAMESPACES};
use rmcp::model::{
    CacheScope, GetPromptResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role,
};
use serde_json::json;

/// Name of the one prompt.
pub const RECALL_PROMPT: &str = "recall";
/// Its one argument.
pub const TOPIC_ARG: &str = "topic";
/// URI of the namespace summary.
pub const NAMESPACES_URI: &str = "memory://namespaces";
/// Prefix of a single memory's URI; the memory's id follows.
pub const MEMORY_URI_PREFIX: &str = "memory://memories/";
/// The template of a single memory's URI.
pub const MEMORY_URI_TEMPLATE: &str = "memory://memories/{id}";
/// How long (ms) a client may reuse a list or a read: the corpus is fixed for
/// the life of the process, so this only bounds how stale a cache can get
/// across a restart with another seed or size.
pub const TTL_MS: u64 = 300_000;

const JSON: &str = "application/json";

/// Why a read or a prompt was refused: the client named something that is
/// not there, or left out a required argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No resource at this URI.
    UnknownResource(String),
    /// No prompt by this name.
    UnknownPrompt(String),
    /// `recall` without a non-empty `topic`.
    MissingTopic,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::UnknownResource(uri) => write!(
                f,
                "no resource {uri}: there is {NAMESPACES_URI} and {MEMORY_URI_TEMPLATE} \
                 (an id from list_memories)"
            ),
            Refusal::UnknownPrompt(name) => {
                write!(f, "no prompt {name:?}: the one prompt is {RECALL_PROMPT:?}")
            }
            Refusal::MissingTopic => write!(
                f,
                "prompt {RECALL_PROMPT:?} needs a non-empty string argument {TOPIC_ARG:?}"
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// The `prompts/list` result.
pub fn prompts() -> ListPromptsResult {
    let topic = PromptArgument::new(TOPIC_ARG)
        .with_description(
            "What to recall: a few keywords, e.g. `Atlas caching` or `deployment incidents`.",
        )
        .with_required(true);
    let recall = Prompt::new(
        RECALL_PROMPT,
        Some("Find what the memory store knows about a topic, with the tools to use."),
        Some(vec![topic]),
    )
    .with_title("Recall a topic");
    ListPromptsResult::with_all_items(vec![recall])
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CacheScope::Public)
}

/// The `prompts/get` result for `name` with `arguments`.
pub fn prompt(name: &str, arguments: Option<&JsonObject>) -> Result<GetPromptResult, Refusal> {
    if name != RECALL_PROMPT {
        return Err(Refusal::UnknownPrompt(name.to_owned()));
    }
    let topic = arguments
        .and_then(|args| args.get(TOPIC_ARG))
        .and_then(|topic| topic.as_str())
        .map(str::trim)
        .filter(|topic| !topic.is_empty())
        .ok_or(Refusal::MissingTopic)?;
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        recall_text(topic),
    )])
    .with_description(format!("Recall what the memory store knows about {topic}")))
}

/// The message of the `recall` prompt.
fn recall_text(topic: &str) -> String {
    format!(
        "Find what the memory store knows about: {topic}\n\
         \n\
         1. Call recall_memories with query {topic:?} and detail \"medium\" (the content of each \
         memory): it ranks memories by keyword relevance, best first.\n\
         2. If an exact phrase matters, call search_memories with it: a case-insensitive \
         substring match on titles and content, oldest first.\n\
         3. A large result may come back as an offload descriptor (a file_path to a JSONL file, \
         header line first, then one memory per line) instead of the memories. Query it with \
         lro_extract, when the server offers it, or jq, rather than calling again with a smaller \
         limit.\n\
         \n\
         Then summarize what the memories say about the topic, citing each memory's id and \
         namespace, and point out decisions, incidents and patterns that disagree or were \
         archived. If nothing relevant comes back, say so rather than guessing."
    )
}

/// The `resources/list` result.
pub fn resources(corpus: &Corpus) -> ListResourcesResult {
    let namespaces = Resource::new(NAMESPACES_URI, "namespaces")
        .with_title("Memory namespaces")
        .with_description(
            "Each namespace of the memory store with its memory type and how many memories it \
             holds; pass one (or a prefix such as `_semantic`) to list_memories as `namespace`.",
        )
        .with_mime_type(JSON)
        .with_size(namespaces_json(corpus).len() as u64);
    ListResourcesResult::with_all_items(vec![namespaces])
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CacheScope::Public)
}

/// The `resources/templates/list` result.
pub fn resource_templates() -> ListResourceTemplatesResult {
    let memory = ResourceTemplate::new(MEMORY_URI_TEMPLATE, "memory")
        .with_title("One memory")
        .with_description(
            "One memory at full detail (every field, confidence under provenance), by the `id` \
             the memory tools return.",
        )
        .with_mime_type(JSON);
    ListResourceTemplatesResult::with_all_items(vec![memory])
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CacheScope::Public)
}

/// The text of the resource at `uri`.
pub fn read(corpus: &Corpus, uri: &str) -> Result<String, Refusal> {
    if uri == NAMESPACES_URI {
        return Ok(namespaces_json(corpus));
    }
    uri.strip_prefix(MEMORY_URI_PREFIX)
        .and_then(|id| corpus.get(id))
        .map(|memory| Corpus::to_detail(memory, Detail::Full).to_string())
        .ok_or_else(|| Refusal::UnknownResource(uri.to_owned()))
}

/// The `resources/read` result for `uri`.
pub fn read_result(corpus: &Corpus, uri: &str) -> Result<ReadResourceResult, Refusal> {
    let text = read(corpus, uri)?;
    Ok(
        ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type(JSON)])
            .with_ttl_ms(TTL_MS)
            .with_cache_scope(CacheScope::Public),
    )
}

/// `{"namespaces": [{"namespace", "memory_type", "count"}, ...], "total": N}`,
/// in [`NAMESPACES`] order, namespaces without memories included.
fn namespaces_json(corpus: &Corpus) -> String {
    let namespaces: Vec<_> = NAMESPACES
        .iter()
        .map(|&namespace| {
            let mut members = corpus
                .memories()
                .iter()
                .filter(|m| m.namespace == namespace);
            let memory_type = members.next().map(|m| m.memory_type.as_str());
            let count = memory_type.map_or(0, |_| 1 + members.count());
            json!({"namespace": namespace, "memory_type": memory_type, "count": count})
        })
        .collect();
    json!({"namespaces": namespaces, "total": corpus.len()}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_count_every_memory() {
        let corpus = Corpus::generate(60, 2);
        let json: serde_json::Value =
            serde_json::from_str(&read(&corpus, NAMESPACES_URI).unwrap()).unwrap();
        let rows = json["namespaces"].as_array().unwrap();
        let names: Vec<&str> = rows
            .iter()
            .map(|r| r["namespace"].as_str().unwrap())
            .collect();
        assert_eq!(names, NAMESPACES);
        let sum: u64 = rows.iter().map(|r| r["count"].as_u64().unwrap()).sum();
        assert_eq!(sum, 60);
        assert_eq!(json["total"], 60);
        assert_eq!(rows[3]["memory_type"], "episodic");
        let empty: serde_json::Value =
            serde_json::from_str(&read(&Corpus::from_memories(vec![]), NAMESPACES_URI).unwrap())
                .unwrap();
        assert_eq!(empty["namespaces"][0]["count"], 0);
    }

    #[test]
    fn a_memory_reads_at_full_detail_and_unknown_uris_are_refused() {
        let corpus = Corpus::generate(20, 1);
        let memory = &corpus.memories()[7];
        let uri = format!("{MEMORY_URI_PREFIX}{}", memory.id);
        let json: serde_json::Value = serde_json::from_str(&read(&corpus, &uri).unwrap()).unwrap();
        assert_eq!(json, Corpus::to_detail(memory, Detail::Full));
        for bad in [
            "memory://memories/nope",
            "memory://other",
            "file:///etc/passwd",
        ] {
            assert_eq!(
                read(&corpus, bad),
                Err(Refusal::UnknownResource(bad.to_owned()))
            );
        }
    }

    #[test]
    fn the_recall_prompt_needs_a_topic_and_names_the_tools() {
        let args = |v: serde_json::Value| v.as_object().cloned();
        let result = prompt(
            RECALL_PROMPT,
            args(json!({"topic": "Atlas caching"})).as_ref(),
        )
        .unwrap();
        let text = &result.messages[0].content.as_text().unwrap().text;
        for tool in [
            "recall_memories",
            "search_memories",
            "lro_extract",
            "\"Atlas caching\"",
        ] {
            assert!(text.contains(tool), "{tool}: {text}");
        }
        assert_eq!(result.messages[0].role, Role::User);
        for bad in [
            None,
            args(json!({})),
            args(json!({"topic": "  "})),
            args(json!({"topic": 3})),
        ] {
            assert_eq!(
                prompt(RECALL_PROMPT, bad.as_ref()),
                Err(Refusal::MissingTopic)
            );
        }
        assert!(matches!(
            prompt("nope", None),
            Err(Refusal::UnknownPrompt(_))
        ));
    }
}
