//! [`MemoryServer`]: the MCP tools over a [`Corpus`].
//!
//! Four tools, all returning compact JSON (or, for `inject_context`, prose)
//! as plain text content with no `outputSchema`:
//!
//! | tool | returns | default detail |
//! |---|---|---|
//! | `list_memories` | `{"memories": [...], "total": N, "next_offset": K or null}` | light |
//! | `recall_memories` | `{"memories": [...], "count": n}`, best first | light |
//! | `search_memories` | `{"memories": [...], "count": n}`, oldest first | light |
//! | `inject_context` | a `## title (namespace)` context block under a token budget | medium |
//!
//! The server knows nothing about offloading except one thing: when the
//! `lro-tower` layer is in front of it, each call carries an
//! [`LroScope`] in its extensions, and the tools that trim their output hand
//! the untrimmed set to it. `list_memories` hands over the unpaged filtered
//! set (so LRO takes precedence over pagination: an offloaded result never
//! carries a cursor) and `inject_context` the pre-budget recalled set (so
//! the threshold is evaluated before budgeting, as the spec requires).
//! Without the layer the scope is absent and the tools behave the same.
//!
//! Besides the tools it serves one prompt and a few resources, declared in
//! its capabilities; see [`crate::catalog`].
//!
//! ```
//! use lro_corpus::Corpus;
//! use memory_server::MemoryServer;
//! use rmcp::ServerHandler;
//!
//! let server = MemoryServer::new(Corpus::generate(20, 1));
//! assert_eq!(server.get_info().server_info.name, "memory-server");
//! assert_eq!(server.corpus().len(), 20);
//! ```

use std::sync::Arc;

use lro_core::{Detail, TokenEstimator};
use lro_tower::LroScope;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CallToolResult, ContentBlock, Extensions, GetPromptRequestParams, GetPromptResponse,
        Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use lro_corpus::{Corpus, Hit, Memory};

use crate::catalog;

/// Default `limit` of `recall_memories` and `inject_context`.
pub const DEFAULT_RECALL_LIMIT: usize = 50;
/// Default `limit` of `search_memories`.
pub const DEFAULT_SEARCH_LIMIT: usize = 100;
/// Default `token_budget` of `inject_context`.
pub const DEFAULT_TOKEN_BUDGET: usize = 2000;

/// What `inject_context` returns when nothing matched.
pub const NO_MATCH: &str = "No relevant memories found.";

const INSTRUCTIONS: &str = "\
A demo memory store of MIF memories (namespaces _semantic/knowledge, _semantic/decisions, \
_procedural/patterns, _episodic/incidents, _episodic/sessions). Tools: list_memories browses \
everything oldest first (optional namespace prefix, limit/offset pagination); recall_memories \
ranks memories by keyword relevance; search_memories finds a case-insensitive substring in \
titles and content; inject_context returns a ready-to-use context block under a token budget. \
`detail` selects the fields: light (id, type, namespace, title, tags, dates, status, priority), \
medium (+ content, confidence, entities) or full (every field, confidence under provenance). \
Large results may come back as an offload descriptor with a file_path to a JSONL file (header \
line first, then one memory per line): query that file (jq, or lro_extract when offered) \
instead of paginating.";

/// How many fields each memory carries; see [`crate::corpus`].
///
/// The variants carry plain comments rather than docs on purpose: documented
/// variants make schemars emit a `oneOf` of `const`s, and a plain `enum`
/// is what every MCP client understands.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DetailLevel {
    // id, memory_type, namespace, title, tags, created, modified, status, priority
    #[default]
    Light,
    // light + content, confidence, entities
    Medium,
    // every field
    Full,
}

impl From<DetailLevel> for Detail {
    fn from(d: DetailLevel) -> Self {
        match d {
            DetailLevel::Light => Detail::Light,
            DetailLevel::Medium => Detail::Medium,
            DetailLevel::Full => Detail::Full,
        }
    }
}

/// Arguments of `list_memories`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Page size. Omit to get every matching memory at once.
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
    /// Index of the first memory of the page (0-based). Pass the previous
    /// response's `next_offset` to get the next page.
    #[serde(default)]
    pub offset: usize,
    /// Only memories whose namespace starts with this prefix, e.g.
    /// `_semantic` or `_episodic/incidents`.
    pub namespace: Option<String>,
    /// Fields per memory: `light` (no content), `medium` (+ content,
    /// confidence, entities) or `full` (everything). Defaults to `light`.
    #[serde(default)]
    pub detail: DetailLevel,
}

/// Arguments of `recall_memories`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// Keywords to rank memories by (matched against title, tags and content).
    pub query: String,
    /// Maximum number of memories to return, best first. Defaults to 50.
    #[serde(default = "default_recall_limit")]
    #[schemars(range(min = 1))]
    pub limit: usize,
    /// Fields per memory: `light` (no content), `medium` (+ content,
    /// confidence, entities) or `full` (everything). Defaults to `light`.
    #[serde(default)]
    pub detail: DetailLevel,
}

/// Arguments of `search_memories`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Text to find in titles and content (case-insensitive substring).
    pub query: String,
    /// Maximum number of memories to return, oldest first. Defaults to 100.
    #[serde(default = "default_search_limit")]
    #[schemars(range(min = 1))]
    pub limit: usize,
    /// Fields per memory: `light` (no content), `medium` (+ content,
    /// confidence, entities) or `full` (everything). Defaults to `light`.
    #[serde(default)]
    pub detail: DetailLevel,
}

/// Arguments of `inject_context`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InjectArgs {
    /// Keywords describing what the context should be about.
    pub query: String,
    /// Maximum number of memories to recall before budgeting. Defaults to 50.
    #[serde(default = "default_recall_limit")]
    #[schemars(range(min = 1))]
    pub limit: usize,
    /// Maximum size of the returned context, in tokens (characters / 4).
    /// Defaults to 2000.
    #[serde(default = "default_token_budget")]
    pub token_budget: usize,
}

fn default_recall_limit() -> usize {
    DEFAULT_RECALL_LIMIT
}

fn default_search_limit() -> usize {
    DEFAULT_SEARCH_LIMIT
}

fn default_token_budget() -> usize {
    DEFAULT_TOKEN_BUDGET
}

/// The `list_memories` response.
#[derive(Serialize)]
struct ListResponse<'a> {
    memories: Vec<lro_corpus::MemoryView<'a>>,
    total: usize,
    next_offset: Option<usize>,
}

/// The memory MCP server. Cheap to clone: the corpus is shared.
#[derive(Debug, Clone)]
pub struct MemoryServer {
    corpus: Arc<Corpus>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl MemoryServer {
    /// A server over `corpus` (a [`Corpus`] or an `Arc<Corpus>` to share one
    /// corpus between many sessions).
    pub fn new(corpus: impl Into<Arc<Corpus>>) -> Self {
        Self {
            corpus: corpus.into(),
            tool_router: Self::tool_router(),
        }
    }

    /// The same server with the conformance suite's three diagnostic tools
    /// added (see [`crate::conformance`]); the CLI's `--conformance-tools`.
    pub fn with_conformance_tools(mut self) -> Self {
        self.tool_router += Self::conformance_tool_router();
        self
    }

    /// The corpus served.
    pub fn corpus(&self) -> &Arc<Corpus> {
        &self.corpus
    }

    /// Lists memories oldest first, optionally filtered and paginated.
    #[tool(
        name = "list_memories",
        description = "List memories oldest first. Optional `namespace` prefix filter and \
                       `limit`/`offset` pagination (no limit = every match). Returns \
                       {\"memories\": [...], \"total\": N, \"next_offset\": K or null}; pass \
                       `next_offset` as `offset` for the next page. `detail`: light (default), \
                       medium or full."
    )]
    pub async fn list_memories(
        &self,
        Parameters(args): Parameters<ListArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        if args.limit == Some(0) {
            return Ok(invalid(
                "`limit` must be at least 1 (omit it to list everything)",
            ));
        }
        let detail = Detail::from(args.detail);
        let matching: Vec<&Memory> = self
            .corpus
            .in_namespace(args.namespace.as_deref())
            .collect();
        let total = matching.len();
        if let Some(scope) = LroScope::from_extensions(&extensions) {
            // Pagination precedence: the layer judges the whole filtered set,
            // so an over-threshold listing is offloaded whole and the page
            // (with its cursor) below is discarded.
            scope.set_full_result(Corpus::to_json_array(matching.iter().copied(), detail));
            scope.set_detail(detail);
        }
        let start = args.offset.min(total);
        let end = match args.limit {
            Some(limit) => start.saturating_add(limit).min(total),
            None => total,
        };
        let next_offset = (args.limit.is_some() && end < total).then_some(end);
        let page = ListResponse {
            memories: matching[start..end]
                .iter()
                .map(|m| m.view(detail))
                .collect(),
            total,
            next_offset,
        };
        Ok(json_text(&page))
    }

    /// Ranks memories by keyword relevance.
    #[tool(
        name = "recall_memories",
        description = "Recall the memories most relevant to `query` (keyword overlap with \
                       title, tags and content), best first, at most `limit` (default 50). \
                       Returns {\"memories\": [...], \"count\": n}. `detail`: light (default), \
                       medium or full."
    )]
    pub async fn recall_memories(
        &self,
        Parameters(args): Parameters<RecallArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(found(
            &extensions,
            &args.query,
            args.limit,
            args.detail,
            |limit| {
                let hits = self.corpus.recall(&args.query, limit);
                let range = score_range(&hits);
                (hits.into_iter().map(|h| h.memory).collect(), range)
            },
        ))
    }

    /// Finds a substring in titles and content.
    #[tool(
        name = "search_memories",
        description = "Find memories whose title or content contains `query` \
                       (case-insensitive), oldest first, at most `limit` (default 100). \
                       Returns {\"memories\": [...], \"count\": n}. `detail`: light (default), \
                       medium or full."
    )]
    pub async fn search_memories(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(found(
            &extensions,
            &args.query,
            args.limit,
            args.detail,
            |limit| (self.corpus.search(&args.query, limit), None),
        ))
    }

    /// Builds a context block under a token budget.
    #[tool(
        name = "inject_context",
        description = "Recall up to `limit` (default 50) memories relevant to `query` and \
                       format them as a context block (\"## title (namespace)\" then the \
                       content) that fits in `token_budget` tokens (default 2000, 1 token = 4 \
                       characters). Returns the block as text."
    )]
    pub async fn inject_context(
        &self,
        Parameters(args): Parameters<InjectArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        if args.limit == 0 {
            return Ok(invalid("`limit` must be at least 1"));
        }
        let hits = self.corpus.recall(&args.query, args.limit);
        let memories: Vec<&Memory> = hits.iter().map(|h| h.memory).collect();
        if let Some(scope) = LroScope::from_extensions(&extensions) {
            // The spec evaluates the threshold on the pre-budget set at the
            // inject default (medium): if that set is over it, the layer
            // offloads it and the budgeted string below is discarded.
            let medium = Corpus::to_json_array(memories.iter().copied(), Detail::Medium);
            describe(&scope, medium, Detail::Medium, &args.query);
            scope.set_operation("inject");
            if let Some((min, max)) = score_range(&hits) {
                scope.set_score_range(min, max);
            }
        }
        let text = if memories.is_empty() {
            fit(NO_MATCH, args.token_budget)
        } else {
            format_context(&memories, args.token_budget)
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("memory-server", env!("CARGO_PKG_VERSION"))
                    .with_title("LRO demo memory server"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(catalog::prompts())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        catalog::prompt(&request.name, request.arguments.as_ref())
            .map(Into::into)
            .map_err(|refusal| ErrorData::invalid_params(refusal.to_string(), None))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(catalog::resources(&self.corpus))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(catalog::resource_templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        catalog::read_result(&self.corpus, &request.uri)
            .map(Into::into)
            .map_err(|refusal| ErrorData::resource_not_found(refusal.to_string(), None))
    }
}

/// Tells the layer what the result set is: the records at `detail`.
fn describe(scope: &LroScope, records: String, detail: Detail, query: &str) {
    scope.set_full_result(records);
    scope.set_detail(detail);
    scope.set_query(query);
}

/// The answer of `recall_memories` or `search_memories`: `limit` checked,
/// then the memories `find` returns for it (with, for a ranking, the range
/// of their scores) as [`hits_result`] at `detail`.
fn found<'a>(
    extensions: &Extensions,
    query: &str,
    limit: usize,
    detail: DetailLevel,
    find: impl FnOnce(usize) -> (Vec<&'a Memory>, Option<(f64, f64)>),
) -> CallToolResult {
    if limit == 0 {
        return invalid("`limit` must be at least 1");
    }
    let (memories, range) = find(limit);
    let scope = LroScope::from_extensions(extensions);
    if let Some((scope, (min, max))) = scope.as_ref().zip(range) {
        scope.set_score_range(min, max);
    }
    hits_result(scope.as_ref(), &memories, Detail::from(detail), query)
}

/// The `recall_memories` / `search_memories` result,
/// `{"memories": [...], "count": n}`. The memories are serialized once: the
/// same JSON array is the response's `memories` and the layer's result set.
fn hits_result(
    scope: Option<&LroScope>,
    memories: &[&Memory],
    detail: Detail,
    query: &str,
) -> CallToolResult {
    let array = Corpus::to_json_array(memories.iter().copied(), detail);
    let text = format!("{{\"memories\":{array},\"count\":{}}}", memories.len());
    if let Some(scope) = scope {
        describe(scope, array, detail, query);
    }
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn score_range(hits: &[Hit<'_>]) -> Option<(f64, f64)> {
    // Hits are sorted best first.
    Some((hits.last()?.score, hits.first()?.score))
}

/// Tokens of `text` by the spec's heuristic (characters / 4, rounded up),
/// the same one the layer uses for Latin text.
pub fn estimate_tokens(text: &str) -> usize {
    ().estimate(text)
}

/// `text` if it fits in `budget` tokens, else nothing.
fn fit(text: &str, budget: usize) -> String {
    if estimate_tokens(text) <= budget {
        text.to_owned()
    } else {
        String::new()
    }
}

/// The context block: `## {title} ({namespace})\n{content}` per memory,
/// separated by blank lines, in recall order, stopping at the first memory
/// that would push the block over `budget` tokens (so the most relevant
/// memories are always the ones kept). The result never exceeds the budget.
pub fn format_context(memories: &[&Memory], budget: usize) -> String {
    let mut out = String::new();
    let mut chars = 0usize;
    for m in memories {
        let sep = if out.is_empty() { "" } else { "\n\n" };
        let block = format!("{sep}## {} ({})\n{}", m.title, m.namespace, m.content);
        let block_chars = block.chars().count();
        if (chars + block_chars).div_ceil(4) > budget {
            break;
        }
        chars += block_chars;
        out.push_str(&block);
    }
    out
}

/// Compact JSON text content.
fn json_text<T: Serialize>(value: &T) -> CallToolResult {
    let text = serde_json::to_string(value).expect("responses always serialize");
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// A tool error the model can read and correct.
fn invalid(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_fits_budget_and_keeps_order() {
        let corpus = Corpus::generate(60, 2);
        let hits = corpus.recall("Atlas caching", 50);
        let memories: Vec<&Memory> = hits.iter().map(|h| h.memory).collect();
        for budget in [0, 1, 10, 60, 200, 2000, 100_000] {
            let text = format_context(&memories, budget);
            assert!(estimate_tokens(&text) <= budget, "{budget}");
        }
        let text = format_context(&memories, 200);
        let first = format!("## {} ({})", memories[0].title, memories[0].namespace);
        assert!(text.starts_with(&first), "{text}");
        let all = format_context(&memories, 100_000);
        assert_eq!(all.matches("## ").count(), memories.len());
    }

    #[test]
    fn hits_result_is_the_serialized_response_and_hands_over_the_same_array() {
        let corpus = Corpus::generate(30, 3);
        let memories: Vec<&Memory> = corpus.memories().iter().take(4).collect();
        let scope = LroScope::new();
        let result = hits_result(Some(&scope), &memories, Detail::Medium, "q");
        let text = &result.content[0].as_text().unwrap().text;
        let views: Vec<_> = memories.iter().map(|m| m.view(Detail::Medium)).collect();
        let expected = serde_json::json!({"memories": views, "count": 4});
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(text).unwrap(),
            expected
        );
        let hints = scope.take();
        let full: serde_json::Value = serde_json::from_str(&hints.full_result.unwrap()).unwrap();
        assert_eq!(full, expected["memories"]);
        assert_eq!(hints.detail, Some(Detail::Medium));
        assert_eq!(hints.query.as_deref(), Some("q"));
    }

    #[test]
    fn score_range_is_min_max() {
        let corpus = Corpus::generate(60, 2);
        let hits = corpus.recall("Atlas caching", 50);
        let (min, max) = score_range(&hits).unwrap();
        assert!(min <= max);
        assert_eq!(max, hits[0].score);
        assert!(score_range(&[]).is_none());
    }

    #[test]
    fn detail_level_schema_is_a_plain_enum() {
        let schema = serde_json::to_value(schemars::schema_for!(DetailLevel)).unwrap();
        assert_eq!(
            schema["enum"],
            serde_json::json!(["light", "medium", "full"]),
            "{schema}"
        );
    }

    #[test]
    fn args_defaults() {
        let r: RecallArgs = serde_json::from_value(serde_json::json!({"query": "x"})).unwrap();
        assert_eq!((r.limit, r.detail), (50, DetailLevel::Light));
        let s: SearchArgs = serde_json::from_value(serde_json::json!({"query": "x"})).unwrap();
        assert_eq!(s.limit, 100);
        let i: InjectArgs = serde_json::from_value(serde_json::json!({"query": "x"})).unwrap();
        assert_eq!((i.limit, i.token_budget), (50, 2000));
        let l: ListArgs = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(l, ListArgs::default());
        assert!(serde_json::from_value::<ListArgs>(serde_json::json!({"detail": "huge"})).is_err());
    }
}
