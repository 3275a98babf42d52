//! The corpus: determinism, shape, detail levels and size.

use std::collections::BTreeSet;

use lro_core::Detail;
use lro_corpus::{Corpus, NAMESPACES, PRODUCTS, TAGS};
use serde_json::Value;

mod support;

fn sorted(fields: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = fields.iter().map(|s| (*s).to_owned()).collect();
    v.sort();
    v
}

const LIGHT: [&str; 9] = [
    "id",
    "memory_type",
    "namespace",
    "title",
    "tags",
    "created",
    "modified",
    "status",
    "priority",
];

#[test]
fn same_seed_gives_identical_json() {
    let a = Corpus::default_corpus();
    let b = Corpus::default_corpus();
    for detail in Detail::ALL {
        assert_eq!(
            Corpus::to_json_array(a.memories(), detail),
            Corpus::to_json_array(b.memories(), detail)
        );
    }
    let other = Corpus::generate(500, 1601);
    assert_ne!(
        Corpus::to_json_array(a.memories(), Detail::Full),
        Corpus::to_json_array(other.memories(), Detail::Full)
    );
}

#[test]
fn default_corpus_has_every_namespace_type_and_product() {
    let corpus = Corpus::default_corpus();
    assert_eq!(corpus.len(), 500);
    let namespaces: BTreeSet<&str> = corpus
        .memories()
        .iter()
        .map(|m| m.namespace.as_str())
        .collect();
    assert_eq!(namespaces, NAMESPACES.into_iter().collect());
    let types: BTreeSet<&str> = corpus
        .memories()
        .iter()
        .map(|m| m.memory_type.as_str())
        .collect();
    assert_eq!(
        types,
        ["episodic", "procedural", "semantic"].into_iter().collect()
    );
    for product in PRODUCTS {
        let mentions = corpus.search(product, usize::MAX).len();
        assert!(mentions >= 50, "{product}: {mentions}");
    }
}

#[test]
fn field_values_are_in_range() {
    let corpus = Corpus::default_corpus();
    let mut statuses = BTreeSet::new();
    for m in corpus.memories() {
        let c = m.provenance.confidence;
        assert!((0.3..=1.0).contains(&c), "{c}");
        assert_eq!((c * 100.0).round() / 100.0, c, "two decimals: {c}");
        assert!((1..=5).contains(&m.priority));
        assert!((1..=4).contains(&m.tags.len()));
        assert!(m.tags.iter().all(|t| TAGS.contains(&t.as_str())));
        let distinct: BTreeSet<&String> = m.tags.iter().collect();
        assert_eq!(distinct.len(), m.tags.len());
        assert!(!m.entities.is_empty());
        statuses.insert(Corpus::to_detail(m, Detail::Light)["status"].to_string());
    }
    assert_eq!(statuses.len(), 2, "active and archived");
    // Listing order is creation order.
    assert!(
        corpus
            .memories()
            .windows(2)
            .all(|w| w[0].created <= w[1].created)
    );
}

#[test]
fn detail_levels_have_exactly_the_specified_fields() {
    let corpus = Corpus::generate(50, 11);
    for m in corpus.memories() {
        let light = Corpus::to_detail(m, Detail::Light);
        assert_eq!(support::keys(&light), sorted(&LIGHT));

        let medium = Corpus::to_detail(m, Detail::Medium);
        let mut fields = LIGHT.to_vec();
        fields.extend(["content", "confidence", "entities"]);
        assert_eq!(support::keys(&medium), sorted(&fields));
        assert_eq!(medium["confidence"], m.provenance.confidence);
        assert!(medium.get("provenance").is_none());

        let full = Corpus::to_detail(m, Detail::Full);
        let mut fields = LIGHT.to_vec();
        fields.extend([
            "content",
            "entities",
            "relationships",
            "provenance",
            "temporal",
        ]);
        assert_eq!(support::keys(&full), sorted(&fields));
        assert!(full.get("confidence").is_none());
        assert_eq!(full["provenance"]["confidence"], m.provenance.confidence);
        assert_eq!(
            support::keys(&full["provenance"]),
            sorted(&["confidence", "trust_level", "source_type", "agent"])
        );
        assert_eq!(
            support::keys(&full["temporal"]),
            sorted(&["valid_from", "valid_until", "decay"])
        );
        assert!(full["temporal"]["decay"]["half_life_days"].is_u64());
        for e in full["entities"].as_array().unwrap() {
            assert_eq!(support::keys(e), sorted(&["name", "type"]));
        }
        for r in full["relationships"].as_array().unwrap() {
            assert_eq!(support::keys(r), sorted(&["type", "target"]));
        }
        // The same values at every level.
        for key in LIGHT {
            assert_eq!(light[key], full[key], "{key}");
            assert_eq!(medium[key], full[key], "{key}");
        }
    }
}

#[test]
fn full_memories_average_about_220_tokens() {
    let corpus = Corpus::default_corpus();
    let mut full = 0.0;
    for detail in Detail::ALL {
        let chars: usize = corpus
            .memories()
            .iter()
            .map(|m| {
                serde_json::to_string(&Corpus::to_detail(m, detail))
                    .unwrap()
                    .chars()
                    .count()
            })
            .sum();
        let tokens = chars as f64 / 4.0 / corpus.len() as f64;
        println!("{detail}: {tokens:.1} tokens per memory");
        if detail == Detail::Full {
            full = tokens;
        }
    }
    assert!((180.0..=260.0).contains(&full), "{full}");
    // The spec's motivating example: 200 full memories are over 40k tokens.
    let two_hundred = Corpus::to_json_array(&corpus.memories()[..200], Detail::Full);
    assert!(two_hundred.len() / 4 > 40_000, "{}", two_hundred.len() / 4);
}

#[test]
fn to_detail_matches_the_view_serialization() {
    let corpus = Corpus::generate(10, 3);
    let array: Vec<Value> =
        serde_json::from_str(&Corpus::to_json_array(corpus.memories(), Detail::Medium)).unwrap();
    let values: Vec<Value> = corpus
        .memories()
        .iter()
        .map(|m| Corpus::to_detail(m, Detail::Medium))
        .collect();
    assert_eq!(array, values);
}
