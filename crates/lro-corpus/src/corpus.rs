//! [`Corpus`]: an ordered set of memories, generated from a seed, with the
//! recall and search the demo's tools answer from.

use std::collections::BTreeSet;

use lro_core::Detail;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::{
    generate::generate_memory,
    memory::{Memory, MemoryView},
};

/// Number of memories in [`Corpus::default_corpus`].
pub const DEFAULT_SIZE: usize = 500;
/// Seed of [`Corpus::default_corpus`]. A nod to the spec's default threshold.
pub const DEFAULT_SEED: u64 = 1600;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemoryType, Status};

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

    /// FNV-1a, 64 bits: a digest with no dependency, stable everywhere.
    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    #[test]
    fn the_default_corpus_is_pinned_byte_for_byte() {
        // The demo's descriptor sizes and the benches' figures are measured
        // on these bytes: a change to the draw must be deliberate.
        let corpus = Corpus::default_corpus();
        let pinned = Detail::ALL.map(|detail| {
            let text = Corpus::to_json_array(corpus.memories(), detail);
            (text.len(), fnv1a(text.as_bytes()))
        });
        assert_eq!(
            pinned,
            [
                (146_918, 10_784_482_129_825_857_196),
                (310_344, 17_205_173_689_388_593_685),
                (446_206, 3_365_932_640_440_445_522),
            ]
        );
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
