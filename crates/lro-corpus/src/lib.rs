//! The deterministic corpus of MIF-shaped memories the LRO demo serves
//! (`examples/memory-server`), and the one the benches and tests measure.
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
//! use lro_corpus::Corpus;
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
//!
//! - `memory`: [`Memory`] and its parts, and [`MemoryView`], a memory at one
//!   detail level.
//! - `corpus`: [`Corpus`], generation, recall and search.
//! - `generate`: the word lists and templates one memory is drawn from.

mod corpus;
mod generate;
mod memory;

pub use corpus::{Corpus, DEFAULT_SEED, DEFAULT_SIZE, Hit};
pub use generate::{NAMESPACES, PRODUCTS, TAGS};
pub use memory::{
    Decay, Entity, Memory, MemoryType, MemoryView, Provenance, Relationship, Status, Temporal,
};
