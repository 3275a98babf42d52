//! The embedded, deterministic corpus of MIF-shaped memories.
//!
//! [`Corpus::generate`] builds `size` memories from word lists with a seeded
//! ChaCha RNG, so the same `(size, seed)` always gives byte-identical JSON on
//! every platform. That is what makes the demo usable for benchmarks: a task
//! like "how many archived incidents mention Cobalt?" has one fixed answer.
//!
//! Every memory can be rendered at the three detail levels of the spec
//! ([`Corpus::to_detail`] or, without building a `Value`, [`Memory::view`]):
//!
//! | level | fields |
//! |---|---|
//! | light | `id`, `memory_type`, `namespace`, `title`, `tags`, `created`, `modified`, `status`, `priority` |
//! | medium | light + `content`, `confidence` (flattened from provenance), `entities` |
//! | full | every field; confidence only under `provenance.confidence` |
//!
//! A full-detail memory averages about 880 characters (~220 tokens at the
//! spec's chars/4), so 200 of them are the ~44k-token result set of the
//! spec's motivating example.
//!
//! ```
//! use lro_core::Detail;
//! use memory_server::corpus::Corpus;
//!
//! let corpus = Corpus::generate(50, 7);
//! assert_eq!(corpus.len(), 50);
//! assert_eq!(corpus, Corpus::generate(50, 7)); // deterministic
//!
//! let hits = corpus.recall("cobalt caching", 5);
//! assert!(hits.len() <= 5);
//! assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
//!
//! let light = Corpus::to_detail(&corpus.memories()[0], Detail::Light);
//! assert!(light.get("content").is_none());
//! let medium = Corpus::to_detail(&corpus.memories()[0], Detail::Medium);
//! assert!(medium["confidence"].is_number());
//! ```

use std::collections::BTreeSet;

use lro_core::Detail;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// Number of memories in [`Corpus::default_corpus`].
pub const DEFAULT_SIZE: usize = 500;
/// Seed of [`Corpus::default_corpus`]. A nod to the spec's default threshold.
pub const DEFAULT_SEED: u64 = 1600;

/// The five namespaces, in a fixed order.
pub const NAMESPACES: [&str; 5] = [
    "_semantic/knowledge",
    "_semantic/decisions",
    "_procedural/patterns",
    "_episodic/incidents",
    "_episodic/sessions",
];

/// Product names the content mentions, so filter tasks have answers.
pub const PRODUCTS: [&str; 5] = ["Atlas", "Borealis", "Cobalt", "Dynamo", "Ember"];

/// The fixed tag vocabulary.
pub const TAGS: [&str; 14] = [
    "architecture",
    "performance",
    "security",
    "reliability",
    "caching",
    "database",
    "api",
    "testing",
    "deployment",
    "observability",
    "incident",
    "decision",
    "onboarding",
    "tooling",
];

const TOPICS: [&str; 16] = [
    "caching",
    "authentication",
    "rate limiting",
    "schema migrations",
    "search indexing",
    "telemetry",
    "deployments",
    "retries",
    "backpressure",
    "sharding",
    "session storage",
    "feature flags",
    "billing exports",
    "webhooks",
    "query planning",
    "token refresh",
];

const TECHNIQUES: [&str; 12] = [
    "write-through caching",
    "circuit breakers",
    "exponential backoff",
    "blue-green deployments",
    "idempotency keys",
    "consistent hashing",
    "event sourcing",
    "read replicas",
    "bulkheads",
    "canary releases",
    "connection pooling",
    "optimistic locking",
];

const FAILURES: [&str; 10] = [
    "latency spikes",
    "memory leaks",
    "connection pool exhaustion",
    "stale reads",
    "certificate expiry",
    "disk pressure",
    "thundering herds",
    "deadlocks",
    "DNS failures",
    "duplicate messages",
];

const PEOPLE: [&str; 8] = [
    "Ada Brennan",
    "Ravi Menon",
    "Sofia Lindqvist",
    "Kenji Watanabe",
    "Lucia Ortega",
    "Tomasz Nowak",
    "Amara Okafor",
    "Felix Baumann",
];

const TEAMS: [&str; 6] = [
    "platform",
    "payments",
    "search",
    "identity",
    "infrastructure",
    "data",
];

const METRICS: [&str; 6] = [
    "p99 latency",
    "error rate",
    "cache hit ratio",
    "deploy time",
    "memory usage",
    "queue depth",
];

const TRUST_LEVELS: [&str; 4] = ["verified", "user_stated", "inferred", "unverified"];
const SOURCE_TYPES: [&str; 5] = [
    "conversation",
    "document",
    "code_review",
    "incident_report",
    "observation",
];
const AGENTS: [&str; 4] = ["claude-code", "atlatl-cli", "cursor", "manual-entry"];
const RELATIONSHIP_TYPES: [&str; 5] = [
    "relates_to",
    "supersedes",
    "derived_from",
    "depends_on",
    "contradicts",
];

/// 2024-01-01T00:00:00Z.
const START_UNIX: i64 = 1_704_067_200;
/// 2026-01-01T00:00:00Z: every timestamp lies in 2024–2025.
const END_UNIX: i64 = 1_767_225_600;

/// The MIF memory type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryType {
    /// Facts and decisions (`_semantic/*`).
    Semantic,
    /// Things that happened (`_episodic/*`).
    Episodic,
    /// How to do things (`_procedural/*`).
    Procedural,
}

impl MemoryType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Semantic => "semantic",
            MemoryType::Episodic => "episodic",
            MemoryType::Procedural => "procedural",
        }
    }

    /// The type a namespace implies: its first segment names it.
    fn of_namespace(namespace: &str) -> Self {
        if namespace.starts_with("_episodic") {
            MemoryType::Episodic
        } else if namespace.starts_with("_procedural") {
            MemoryType::Procedural
        } else {
            MemoryType::Semantic
        }
    }
}

/// Whether a memory is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// In use.
    Active,
    /// Kept for history only.
    Archived,
}

/// A named thing a memory mentions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    /// Name as it appears in the content.
    pub name: String,
    /// `product`, `person`, `team` or `technology`.
    #[serde(rename = "type")]
    pub entity_type: String,
}

/// A typed link to another memory of the corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relationship {
    /// `relates_to`, `supersedes`, `derived_from`, `depends_on` or `contradicts`.
    #[serde(rename = "type")]
    pub relationship_type: String,
    /// Id of the target memory; always an id of the same corpus.
    pub target: String,
}

/// Where a memory came from and how far to trust it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// 0.30–1.00, two decimals.
    pub confidence: f64,
    /// `verified`, `user_stated`, `inferred` or `unverified`.
    pub trust_level: String,
    /// What kind of source produced the memory.
    pub source_type: String,
    /// The agent that recorded it.
    pub agent: String,
}

/// Decay configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decay {
    /// Days until relevance halves.
    pub half_life_days: u32,
}

/// Validity window and decay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Temporal {
    /// ISO 8601 start of validity (the creation time).
    pub valid_from: String,
    /// ISO 8601 end of validity; `null` while the memory is current.
    pub valid_until: Option<String>,
    /// Decay configuration.
    pub decay: Decay,
}

/// One MIF memory. Serializing it directly gives the full detail level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// UUID-shaped id (version 4 layout), drawn from the corpus RNG.
    pub id: String,
    /// Semantic, episodic or procedural; matches the namespace.
    pub memory_type: MemoryType,
    /// A few sentences of prose.
    pub content: String,
    /// ISO 8601 creation time, in 2024–2025.
    pub created: String,
    /// ISO 8601 last modification, not before `created`.
    pub modified: String,
    /// One of [`NAMESPACES`].
    pub namespace: String,
    /// Short title.
    pub title: String,
    /// One to four distinct tags from [`TAGS`].
    pub tags: Vec<String>,
    /// Active or archived.
    pub status: Status,
    /// 1 (highest) to 5.
    pub priority: u8,
    /// Things the content mentions.
    pub entities: Vec<Entity>,
    /// Links to other memories.
    pub relationships: Vec<Relationship>,
    /// Origin and confidence.
    pub provenance: Provenance,
    /// Validity and decay.
    pub temporal: Temporal,
}

impl Memory {
    /// A serializable view of this memory at `detail`, for writing JSON text
    /// without going through `serde_json::Value`.
    pub fn view(&self, detail: Detail) -> MemoryView<'_> {
        MemoryView {
            memory: self,
            detail,
        }
    }
}

/// A memory rendered at one detail level; see the module docs for the fields.
#[derive(Debug, Clone, Copy)]
pub struct MemoryView<'a> {
    memory: &'a Memory,
    detail: Detail,
}

/// The fields every level shares, in the order they are written.
#[derive(Serialize)]
struct LightView<'a> {
    id: &'a str,
    memory_type: MemoryType,
    namespace: &'a str,
    title: &'a str,
    tags: &'a [String],
    created: &'a str,
    modified: &'a str,
    status: Status,
    priority: u8,
}

#[derive(Serialize)]
struct MediumView<'a> {
    #[serde(flatten)]
    light: LightView<'a>,
    content: &'a str,
    confidence: f64,
    entities: &'a [Entity],
}

impl Serialize for MemoryView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let m = self.memory;
        let light = LightView {
            id: &m.id,
            memory_type: m.memory_type,
            namespace: &m.namespace,
            title: &m.title,
            tags: &m.tags,
            created: &m.created,
            modified: &m.modified,
            status: m.status,
            priority: m.priority,
        };
        match self.detail {
            Detail::Light => light.serialize(serializer),
            Detail::Medium => MediumView {
                light,
                content: &m.content,
                confidence: m.provenance.confidence,
                entities: &m.entities,
            }
            .serialize(serializer),
            Detail::Full => m.serialize(serializer),
        }
    }
}

/// A recall result: a memory and its relevance score in (0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit<'a> {
    /// The memory.
    pub memory: &'a Memory,
    /// Keyword-overlap score; higher is more relevant.
    pub score: f64,
}

/// An ordered, immutable set of memories.
#[derive(Debug, Clone, PartialEq)]
pub struct Corpus {
    /// Sorted by `(created, id)`, so listing needs no sort and ties are stable.
    memories: Vec<Memory>,
}

impl Corpus {
    /// `size` memories drawn from a ChaCha8 RNG seeded with `seed`.
    pub fn generate(size: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut memories: Vec<Memory> = Vec::with_capacity(size);
        for i in 0..size {
            let memory = generate_memory(&mut rng, i, &memories);
            memories.push(memory);
        }
        Self::from_memories(memories)
    }

    /// [`DEFAULT_SIZE`] memories from [`DEFAULT_SEED`]: the demo's corpus.
    pub fn default_corpus() -> Self {
        Self::generate(DEFAULT_SIZE, DEFAULT_SEED)
    }

    /// A corpus of the given memories (reordered by creation time), for
    /// tests that need hand-made data.
    pub fn from_memories(mut memories: Vec<Memory>) -> Self {
        memories.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
        Self { memories }
    }

    /// All memories, oldest first.
    pub fn memories(&self) -> &[Memory] {
        &self.memories
    }

    /// Number of memories.
    pub fn len(&self) -> usize {
        self.memories.len()
    }

    /// Whether the corpus is empty.
    pub fn is_empty(&self) -> bool {
        self.memories.is_empty()
    }

    /// The memory with this id.
    pub fn get(&self, id: &str) -> Option<&Memory> {
        self.memories.iter().find(|m| m.id == id)
    }

    /// Memories whose namespace starts with `prefix` (all of them for `None`
    /// or an empty prefix), oldest first. `"_semantic"` selects both
    /// semantic namespaces, like recipe #2's `startswith`.
    pub fn in_namespace<'a>(&'a self, prefix: Option<&'a str>) -> impl Iterator<Item = &'a Memory> {
        let prefix = prefix.unwrap_or("");
        self.memories
            .iter()
            .filter(move |m| m.namespace.starts_with(prefix))
    }

    /// The `limit` best memories for `query`, best first.
    ///
    /// Each distinct query term (lowercased words, minus a few stop words)
    /// scores 3 when it is a word of the title, 2 when it is a tag and 1 when
    /// it is a word of the content; the sum is divided by the maximum (6 per
    /// term) and rounded to 4 decimals. Memories scoring 0 are left out. Ties
    /// go to the newer memory, then to the smaller id, so the order is total.
    pub fn recall(&self, query: &str, limit: usize) -> Vec<Hit<'_>> {
        let terms = query_terms(query);
        if terms.is_empty() || limit == 0 {
            return Vec::new();
        }
        let max = (6 * terms.len()) as f64;
        let mut hits: Vec<Hit<'_>> = self
            .memories
            .iter()
            .filter_map(|m| {
                let title = words(&m.title);
                let content = words(&m.content);
                let raw: u32 = terms
                    .iter()
                    .map(|t| {
                        let mut s = 0;
                        if title.contains(t) {
                            s += 3;
                        }
                        if m.tags.iter().any(|tag| tag == t) {
                            s += 2;
                        }
                        if content.contains(t) {
                            s += 1;
                        }
                        s
                    })
                    .sum();
                (raw > 0).then(|| Hit {
                    memory: m,
                    score: (f64::from(raw) / max * 10_000.0).round() / 10_000.0,
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| b.memory.created.cmp(&a.memory.created))
                .then_with(|| a.memory.id.cmp(&b.memory.id))
        });
        hits.truncate(limit);
        hits
    }

    /// Up to `limit` memories whose title or content contains `query`
    /// (case-insensitive substring), oldest first. An empty query matches
    /// everything.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&Memory> {
        let needle = query.to_lowercase();
        self.memories
            .iter()
            .filter(|m| {
                m.title.to_lowercase().contains(&needle)
                    || m.content.to_lowercase().contains(&needle)
            })
            .take(limit)
            .collect()
    }

    /// `memory` at `detail` as a JSON value.
    pub fn to_detail(memory: &Memory, detail: Detail) -> serde_json::Value {
        serde_json::to_value(memory.view(detail)).expect("a memory always serializes")
    }

    /// Compact JSON array text of `memories` at `detail`.
    pub fn to_json_array<'a>(
        memories: impl IntoIterator<Item = &'a Memory>,
        detail: Detail,
    ) -> String {
        let views: Vec<MemoryView<'a>> = memories.into_iter().map(|m| m.view(detail)).collect();
        serde_json::to_string(&views).expect("a memory always serializes")
    }
}

impl Default for Corpus {
    fn default() -> Self {
        Self::default_corpus()
    }
}

const STOP_WORDS: [&str; 16] = [
    "a", "an", "and", "or", "the", "of", "for", "in", "on", "to", "with", "is", "what", "how",
    "about", "by",
];

/// Distinct lowercased query words, stop words removed, in first-seen order.
fn query_terms(query: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// The lowercased words of a text.
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn pick<'a, R: Rng>(rng: &mut R, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

/// `n` distinct items, in draw order (a partial Fisher–Yates shuffle).
fn pick_distinct<'a, R: Rng>(rng: &mut R, items: &[&'a str], n: usize) -> Vec<&'a str> {
    let mut pool: Vec<&str> = items.to_vec();
    let n = n.min(pool.len());
    for i in 0..n {
        let j = rng.random_range(i..pool.len());
        pool.swap(i, j);
    }
    pool.truncate(n);
    pool
}

fn uuid<R: Rng>(rng: &mut R) -> String {
    let mut b: [u8; 16] = rng.random();
    // Version 4 and RFC 4122 variant bits, so the ids look like real UUIDs.
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

fn iso8601(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .expect("corpus timestamps are in range")
        .format(&Rfc3339)
        .expect("RFC 3339 formatting of a UTC time cannot fail")
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The words one memory is built from, drawn once so that title, content
/// and entities agree with each other.
struct Draw<'a> {
    product: &'a str,
    topic: &'a str,
    tech: &'a str,
    tech2: &'a str,
    failure: &'a str,
    failure2: &'a str,
    person: &'a str,
    team: &'a str,
    metric: &'a str,
    n: u32,
    pct: u32,
}

impl Draw<'_> {
    fn fill(&self, template: &str) -> String {
        template
            .replace("{P}", self.product)
            .replace("{topic}", self.topic)
            .replace("{Tech}", &capitalize(self.tech))
            .replace("{tech2}", self.tech2)
            .replace("{tech}", self.tech)
            .replace("{failure2}", self.failure2)
            .replace("{Failure}", &capitalize(self.failure))
            .replace("{failure}", self.failure)
            .replace("{person}", self.person)
            .replace("{team}", self.team)
            .replace("{metric}", self.metric)
            .replace("{n}", &self.n.to_string())
            .replace("{pct}", &self.pct.to_string())
    }
}

/// Title templates per namespace (same order as [`NAMESPACES`]).
const TITLES: [&[&str]; 5] = [
    &[
        "How {P} handles {topic}",
        "{P} {topic} overview",
        "{Tech} in {P}",
    ],
    &[
        "Adopt {tech} for {P} {topic}",
        "Decision: {topic} ownership in {P}",
        "Replace {tech2} with {tech} in {P}",
    ],
    &[
        "{Tech} pattern for {topic}",
        "Runbook: {topic} changes in {P}",
        "Checklist for {P} {topic}",
    ],
    &[
        "{P} incident: {failure} in {topic}",
        "{Failure} during {P} {topic} rollout",
        "Postmortem: {P} {topic} outage",
    ],
    &[
        "Session: {topic} work on {P}",
        "Pairing on {P} {topic} with {person}",
        "Notes: {tech} spike for {P}",
    ],
];

/// Opening sentences per namespace; each mentions the product.
const OPENERS: [&[&str]; 5] = [
    &[
        "{P} relies on {tech} to keep {topic} predictable under load.",
        "In {P}, {topic} is owned by the {team} team and documented in the runbook.",
        "{P} keeps {metric} within budget for {topic} because {tech} absorbs bursts.",
    ],
    &[
        "The {team} team decided to adopt {tech} for {topic} in {P}.",
        "{person} proposed moving {P} {topic} from {tech2} to {tech}; the review accepted it.",
        "We chose to keep {topic} inside {P} rather than split it out, for simpler operations.",
    ],
    &[
        "To change {topic} in {P} safely, enable {tech} first, then watch {metric}.",
        "The standard pattern for {topic} in {P} is {tech} combined with {tech2}.",
        "Verify {topic} changes on a staging copy of {P} before promoting them.",
    ],
    &[
        "{P} suffered {failure} during {topic} work, raising {metric} by {pct} percent.",
        "An alert fired when {P} hit {failure} while the {team} team rolled out {topic} changes.",
        "Customers of {P} saw errors after {failure} in the {topic} path went unnoticed.",
    ],
    &[
        "{person} paired with the {team} team on {topic} for {P}.",
        "We traced {metric} regressions in {P} back to {topic} and prototyped {tech}.",
        "Working session on {P}: reviewed {topic} dashboards and open questions about {tech}.",
    ],
];

/// Follow-up sentences, any namespace.
const FOLLOW_UPS: [&str; 10] = [
    "The root cause turned out to be {failure2}, which {tech} now contains.",
    "{person} recommends pairing {tech} with {tech2} whenever {topic} traffic doubles.",
    "After {n} weeks, {metric} improved by {pct} percent across the fleet.",
    "The {team} team will revisit this once more production data is available.",
    "Known caveat: {tech2} interacts badly with {topic} when retries are unbounded.",
    "Dashboards for {metric} are linked from the runbook so on-call can check them quickly.",
    "A follow-up ticket tracks removing the legacy {topic} code path by next quarter.",
    "Load tests showed {tech} holding steady at {n} thousand requests per second.",
    "{person} wrote the summary and shared it with the {team} channel for review.",
    "Rollback is a single config change, so the risk of trying {tech} is low.",
];

/// A namespace tag that fits, put first when a memory gets it.
const AFFINITY_TAGS: [&str; 5] = [
    "architecture",
    "decision",
    "tooling",
    "incident",
    "onboarding",
];

fn generate_memory<R: Rng>(rng: &mut R, index: usize, earlier: &[Memory]) -> Memory {
    let id = uuid(rng);
    // The first five memories cover every namespace, so even tiny corpora
    // contain all of them; after that the draw is uniform.
    let ns_index = if index < NAMESPACES.len() {
        index
    } else {
        rng.random_range(0..NAMESPACES.len())
    };
    let namespace = NAMESPACES[ns_index];
    let techs = pick_distinct(rng, &TECHNIQUES, 2);
    let failures = pick_distinct(rng, &FAILURES, 2);
    let draw = Draw {
        product: pick(rng, &PRODUCTS),
        topic: pick(rng, &TOPICS),
        tech: techs[0],
        tech2: techs[1],
        failure: failures[0],
        failure2: failures[1],
        person: pick(rng, &PEOPLE),
        team: pick(rng, &TEAMS),
        metric: pick(rng, &METRICS),
        n: rng.random_range(2..=45),
        pct: rng.random_range(5..=60),
    };

    let title = draw.fill(pick(rng, TITLES[ns_index]));
    let mut sentences = vec![draw.fill(pick(rng, OPENERS[ns_index]))];
    // Usually one follow-up, sometimes two: tuned so that a full-detail
    // memory averages ~880 characters (~220 tokens).
    let follow_ups = if rng.random_bool(0.1) { 2 } else { 1 };
    sentences.extend(
        pick_distinct(rng, &FOLLOW_UPS, follow_ups)
            .into_iter()
            .map(|t| draw.fill(t)),
    );
    let content = sentences.join(" ");

    let tag_count = rng.random_range(1..=4);
    let mut tags: Vec<String> = Vec::with_capacity(tag_count);
    if rng.random_bool(0.6) {
        tags.push(AFFINITY_TAGS[ns_index].to_owned());
    }
    for tag in pick_distinct(rng, &TAGS, 4) {
        if tags.len() == tag_count {
            break;
        }
        if !tags.iter().any(|t| t == tag) {
            tags.push(tag.to_owned());
        }
    }

    let created_unix = rng.random_range(START_UNIX..END_UNIX);
    // Most memories are edited within a few weeks; never past the end of 2025.
    let modified_unix = if rng.random_bool(0.3) {
        created_unix
    } else {
        (created_unix + rng.random_range(3_600..60 * 86_400)).min(END_UNIX - 1)
    };
    let created = iso8601(created_unix);
    let modified = iso8601(modified_unix);
    let status = if rng.random_bool(0.2) {
        Status::Archived
    } else {
        Status::Active
    };
    let priority = rng.random_range(1..=5);

    // Entities: the product always, then whatever else the text mentions.
    let mut entities = vec![Entity {
        name: draw.product.to_owned(),
        entity_type: "product".to_owned(),
    }];
    let text = format!("{title} {content}");
    let candidates = [
        (draw.person.to_owned(), "person"),
        (format!("{} team", draw.team), "team"),
        (draw.tech.to_owned(), "technology"),
    ];
    for (name, kind) in candidates {
        if text.contains(&name) && entities.len() < 3 {
            entities.push(Entity {
                name,
                entity_type: kind.to_owned(),
            });
        }
    }

    // Links only point backwards in generation order, so every target exists.
    let rel_count = if earlier.is_empty() {
        0
    } else {
        [0, 0, 1, 1, 1, 2][rng.random_range(0..6)]
    };
    let relationships = (0..rel_count)
        .map(|_| Relationship {
            relationship_type: pick(rng, &RELATIONSHIP_TYPES).to_owned(),
            target: earlier[rng.random_range(0..earlier.len())].id.clone(),
        })
        .collect();

    let provenance = Provenance {
        confidence: f64::from(rng.random_range(30u32..=100)) / 100.0,
        trust_level: pick(rng, &TRUST_LEVELS).to_owned(),
        source_type: pick(rng, &SOURCE_TYPES).to_owned(),
        agent: pick(rng, &AGENTS).to_owned(),
    };
    let memory_type = MemoryType::of_namespace(namespace);
    // Episodes fade fastest, procedures slowest.
    let half_life_days = match memory_type {
        MemoryType::Episodic => [14, 30, 60][rng.random_range(0..3)],
        MemoryType::Semantic => [90, 180, 365][rng.random_range(0..3)],
        MemoryType::Procedural => [180, 365, 730][rng.random_range(0..3)],
    };
    let temporal = Temporal {
        valid_from: created.clone(),
        valid_until: (status == Status::Archived).then(|| modified.clone()),
        decay: Decay { half_life_days },
    };

    Memory {
        id,
        memory_type,
        content,
        created,
        modified,
        namespace: namespace.to_owned(),
        title,
        tags,
        status,
        priority,
        entities,
        relationships,
        provenance,
        temporal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn avg_chars(corpus: &Corpus, detail: Detail) -> f64 {
        let total: usize = corpus
            .memories()
            .iter()
            .map(|m| {
                serde_json::to_string(&m.view(detail))
                    .unwrap()
                    .chars()
                    .count()
            })
            .sum();
        total as f64 / corpus.len() as f64
    }

    #[test]
    fn average_size_per_detail_level() {
        let corpus = Corpus::default_corpus();
        for detail in Detail::ALL {
            let chars = avg_chars(&corpus, detail);
            println!(
                "{detail}: {chars:.0} chars, {:.0} tokens per memory",
                chars / 4.0
            );
        }
        let full = avg_chars(&corpus, Detail::Full);
        assert!((720.0..=1040.0).contains(&full), "{full}");
    }

    #[test]
    fn ids_are_uuid_shaped_and_unique() {
        let corpus = Corpus::generate(200, 3);
        let ids: BTreeSet<&str> = corpus.memories().iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids.len(), 200);
        for id in ids {
            let parts: Vec<usize> = id.split('-').map(str::len).collect();
            assert_eq!(parts, [8, 4, 4, 4, 12], "{id}");
            assert_eq!(&id[14..15], "4");
        }
    }

    #[test]
    fn namespaces_imply_types_and_small_corpora_cover_them() {
        let corpus = Corpus::generate(5, 1);
        let namespaces: BTreeSet<&str> = corpus
            .memories()
            .iter()
            .map(|m| m.namespace.as_str())
            .collect();
        assert_eq!(namespaces.len(), 5);
        for m in Corpus::generate(100, 2).memories() {
            assert_eq!(MemoryType::of_namespace(&m.namespace), m.memory_type);
        }
    }

    #[test]
    fn relationships_point_inside_the_corpus() {
        let corpus = Corpus::generate(100, 9);
        for m in corpus.memories() {
            for r in &m.relationships {
                assert!(corpus.get(&r.target).is_some());
            }
        }
    }

    #[test]
    fn timestamps_are_ordered_and_in_range() {
        for m in Corpus::generate(200, 4).memories() {
            assert!(m.created.as_str() >= "2024-01-01" && m.created.as_str() < "2026");
            assert!(m.modified >= m.created && m.modified.as_str() < "2026");
            assert_eq!(m.temporal.valid_from, m.created);
            assert_eq!(
                m.temporal.valid_until.is_some(),
                m.status == Status::Archived
            );
        }
    }

    #[test]
    fn entities_are_mentioned() {
        for m in Corpus::generate(100, 5).memories() {
            let text = format!("{} {}", m.title, m.content);
            for e in &m.entities {
                assert!(text.contains(&e.name), "{} not in {text}", e.name);
            }
        }
    }

    #[test]
    fn recall_scores_and_orders() {
        let corpus = Corpus::generate(100, 6);
        let hits = corpus.recall("Cobalt caching", 100);
        assert!(!hits.is_empty());
        for h in &hits {
            assert!(h.score > 0.0 && h.score <= 1.0);
            let text = format!(
                "{} {} {:?}",
                h.memory.title, h.memory.content, h.memory.tags
            )
            .to_lowercase();
            assert!(text.contains("cobalt") || text.contains("caching"));
        }
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(corpus.recall("the of and", 10).is_empty());
        assert_eq!(corpus.recall("cobalt", 3).len(), 3);
    }

    #[test]
    fn search_is_case_insensitive_substring() {
        let corpus = Corpus::generate(100, 6);
        let upper = corpus.search("BOREALIS", 1000);
        let lower = corpus.search("borealis", 1000);
        assert_eq!(upper, lower);
        assert!(!upper.is_empty());
        assert!(
            upper
                .iter()
                .all(|m| { m.title.contains("Borealis") || m.content.contains("Borealis") })
        );
        assert_eq!(corpus.search("", 7).len(), 7);
    }

    #[test]
    fn namespace_prefix_filter() {
        let corpus = Corpus::generate(100, 8);
        let semantic: Vec<_> = corpus.in_namespace(Some("_semantic")).collect();
        assert!(
            semantic
                .iter()
                .all(|m| m.memory_type == MemoryType::Semantic)
        );
        assert_eq!(corpus.in_namespace(None).count(), 100);
        assert_eq!(corpus.in_namespace(Some("_nope")).count(), 0);
    }
}
