//! The spec's ten recipes for MIF memories: 1–8 use Light fields only, 9–10
//! adapt to the detail level (confidence flattened at medium, under
//! `provenance` at full; content search from medium up). Example values
//! (namespace prefix, memory type, tag, keyword) come from the sample.
//! The filters are the spec's, made to run over any records: a record that
//! is not an object, or whose field has another type, is skipped (`?`).

use serde_json::Value;

use super::{
    Recipe,
    values::{common_word, most_common},
};
use crate::descriptor::Detail;

/// Whether sample records look like MIF memories.
pub fn is_memory_sample(sample: &[Value]) -> bool {
    !sample.is_empty()
        && sample.iter().all(|r| {
            r.as_object().is_some_and(|o| {
                ["id", "title", "namespace", "memory_type"]
                    .iter()
                    .all(|k| o.contains_key(*k))
            })
        })
}

/// The spec's ten memory recipes at `detail`, in order.
pub(super) fn recipes(sample: &[Value], detail: Detail) -> Vec<Recipe> {
    let top_ns = most_common(sample.iter().filter_map(|r| r["namespace"].as_str()));
    let ns_prefix = top_ns
        .as_deref()
        .map(|ns| ns.split('/').next().unwrap_or(ns).to_owned())
        .unwrap_or_else(|| "_semantic".to_owned());
    let mem_type = most_common(sample.iter().filter_map(|r| r["memory_type"].as_str()))
        .unwrap_or_else(|| "semantic".to_owned());
    let tag = most_common(
        sample
            .iter()
            .filter_map(|r| r["tags"].as_array())
            .flatten()
            .filter_map(Value::as_str),
    )
    .unwrap_or_else(|| "TAG".to_owned());
    let keyword = common_word(sample.iter().filter_map(|r| r["title"].as_str()))
        .unwrap_or_else(|| "keyword".to_owned());

    let mut recipes = vec![
        Recipe::new("Titles and namespaces", "[.title, .namespace] | @tsv")
            .raw()
            .tolerant(),
        Recipe::new(
            "Filter by namespace prefix",
            "select(.namespace | startswith($namespace))",
        )
        .tolerant()
        .param("namespace", ns_prefix),
        Recipe::new(
            "Search titles by keyword",
            "select(.title | test($keyword; \"i\"))",
        )
        .tolerant()
        .param("keyword", keyword.clone()),
        Recipe::new("IDs, titles and namespaces", "{id, title, namespace}").tolerant(),
        Recipe::new(
            "Filter by memory type",
            "select(.memory_type == $memory_type)",
        )
        .tolerant()
        .param("memory_type", mem_type),
        Recipe::new(
            "Count by namespace",
            "group_by(.namespace?) | map({namespace: .[0].namespace?, count: length})",
        )
        .slurp(),
        Recipe::new("Filter by tag", "select(any(.tags[]?; . == $tag))")
            .tolerant()
            .param("tag", tag),
        Recipe::new("Sort by created date", "sort_by(.created?)").slurp(),
    ];
    recipes.extend(match detail {
        Detail::Light => [
            Recipe::new("Unique namespaces", "map(.namespace?) | unique").slurp(),
            Recipe::new(
                "Count by memory type",
                "group_by(.memory_type?) | map({memory_type: .[0].memory_type?, count: length})",
            )
            .slurp(),
        ],
        // Sorted up, then reversed: `-.confidence` stops jq at a record
        // whose confidence is not a number.
        Detail::Medium => [
            Recipe::new(
                "Highest confidence first",
                "sort_by(.confidence?) | reverse",
            )
            .slurp(),
            content_search(keyword),
        ],
        Detail::Full => [
            Recipe::new(
                "Highest confidence first",
                "sort_by(.provenance?.confidence?) | reverse",
            )
            .slurp(),
            content_search(keyword),
        ],
    });
    recipes
}

fn content_search(keyword: String) -> Recipe {
    Recipe::new(
        "Search content by keyword",
        "select(.content | test($pattern; \"i\"))",
    )
    .tolerant()
    .param("pattern", keyword)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipes::RecipeSet;
    use serde_json::json;

    fn memory(detail: Detail) -> Value {
        let mut m = json!({"id": "m1", "title": "Cache warming", "namespace": "_semantic/knowledge",
            "memory_type": "semantic", "tags": ["perf"], "created": "2025-01-01T00:00:00Z"});
        match detail {
            Detail::Light => {}
            Detail::Medium => {
                m["content"] = json!("text");
                m["confidence"] = json!(0.8);
            }
            Detail::Full => {
                m["content"] = json!("text");
                m["provenance"] = json!({"confidence": 0.8});
            }
        }
        m
    }

    #[test]
    fn memory_recipes_follow_the_detail_table() {
        for detail in Detail::ALL {
            let set = RecipeSet::derive(&[memory(detail)], detail);
            assert!(set.memories);
            assert_eq!(set.recipes.len(), 10);
            let numbers: Vec<u8> = set.recipes.iter().map(|r| r.number).collect();
            assert_eq!(numbers, (1..=10).collect::<Vec<_>>());
            for r in &set.recipes {
                assert!(!r.filter.contains(".score"), "{}", r.filter);
            }
            let nine = &set.get(9).unwrap().filter;
            let ten = &set.get(10).unwrap().filter;
            match detail {
                Detail::Light => {
                    assert!(nine.contains("unique"));
                    assert!(ten.contains("memory_type"));
                    assert!(set.recipes.iter().all(|r| !r.filter.contains("content")));
                }
                Detail::Medium => {
                    assert_eq!(nine, "sort_by(.confidence?) | reverse");
                    assert!(ten.contains(".content"));
                }
                Detail::Full => {
                    assert_eq!(nine, "sort_by(.provenance?.confidence?) | reverse");
                    assert!(ten.contains(".content"));
                }
            }
        }
    }

    #[test]
    fn defaults_come_from_the_data() {
        let set = RecipeSet::derive(&[memory(Detail::Light)], Detail::Light);
        assert_eq!(set.get(7).unwrap().params[0].default, "perf");
        assert_eq!(set.get(3).unwrap().params[0].default, "cache");
    }
}
