//! One memory: [`Memory`], its parts, and [`MemoryView`], a memory rendered
//! at one detail level (the fields per level are in the crate docs).

use lro_core::Detail;
use serde::{Deserialize, Serialize};

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
    pub(crate) fn of_namespace(namespace: &str) -> Self {
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

/// A memory rendered at one detail level; see the crate docs for the fields.
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
