//! Recipes for lines of text (`{"line": n, "text": "…"}` records: a file
//! read whole, a diff, a list of paths): read by line number, search and
//! count by keyword, filter by prefix, the most repeated, longest and last
//! lines, and totals; lines that are all paths are counted by folder and by
//! extension instead. Field projections, which are what derived recipes
//! offer for other records, would only print the lines again.
//!
//! The sample says the records are lines; one further on may not be (a
//! string, a `text` of another type, no `line`). As the generic recipes,
//! these then run without an error: per-record filters end in `?`, and
//! those over all records put the `?` on what they compute of each, which
//! leaves out a record it fails on. The guards are spelled short: with an
//! output directory of 63 characters, a descriptor of paths fits its
//! ceiling with the path in every recipe by a few tokens only.

use serde_json::Value;

use super::{Recipe, Slots, values};

/// Lines a range recipe spans at most, and the tail recipe shows.
const WINDOW: usize = 20;

/// Whether the records are line records: exactly `line` (a number) and
/// `text` (a string).
pub(super) fn are_lines(sample: &[Value]) -> bool {
    !sample.is_empty()
        && sample.iter().all(|r| {
            r.as_object().is_some_and(|o| {
                o.len() == 2
                    && o.get("line").is_some_and(Value::is_u64)
                    && o.get("text").is_some_and(Value::is_string)
            })
        })
}

/// A length some sampled lines are longer than: the median's, or one
/// less when every line is as long.
fn longer_than(texts: &[&str]) -> usize {
    let mut lengths: Vec<usize> = texts.iter().map(|t| t.chars().count()).collect();
    lengths.sort_unstable();
    let median = lengths.get(lengths.len() / 2).copied().unwrap_or(0);
    if lengths.last() > Some(&median) {
        median
    } else {
        median.saturating_sub(1)
    }
}

/// The ten line recipes, their example values from `sample`.
pub(super) fn recipes(sample: &[Value]) -> Vec<Recipe> {
    let texts: Vec<&str> = sample.iter().filter_map(|r| r["text"].as_str()).collect();
    let numbers: Vec<u64> = sample.iter().filter_map(|r| r["line"].as_u64()).collect();
    let haystacks: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
    let keyword = values::keyword(&texts, &haystacks, &[]);
    let mut slots = Slots::new();

    slots.fill([Recipe::new(
        "Line numbers and text, tab-separated",
        "([.line, .text] | @tsv)?",
    )
    .raw()]);
    // A stretch the sample holds, so the file has it too.
    let from = numbers.get(numbers.len() / 4).copied();
    let to = from.and_then(|f| {
        numbers
            .iter()
            .copied()
            .filter(|n| *n >= f)
            .take(WINDOW)
            .last()
    });
    slots.fill(from.zip(to).map(|(from, to)| {
        Recipe::new(
            "A range of lines",
            "select(.line >= ($from | tonumber) and .line <= ($to | tonumber))?",
        )
        .param("from", from.to_string())
        .param("to", to.to_string())
    }));
    slots.fill(keyword.iter().map(|k| {
        Recipe::new(
            "Lines containing a keyword (case-insensitive)",
            "select(.text | test($keyword; \"i\"))?",
        )
        .param("keyword", k.value.clone())
    }));
    slots.fill(keyword.iter().map(|k| {
        Recipe::new(
            "Count lines with the keyword",
            "map(select(.text | test($keyword; \"i\"))?) | length",
        )
        .slurp()
        .param("keyword", k.value.clone())
    }));
    // Not the lines the keyword finds: the recipe would print them again.
    let found: Vec<&values::Rows> = keyword.iter().map(|k| &k.rows).collect();
    slots.fill(values::prefix(&texts, &found).map(|p| {
        Recipe::new(
            "Lines starting with a prefix",
            "select(.text | startswith($prefix))?",
        )
        .param("prefix", p.value)
    }));
    // Paths repeat no line and have one word each: count their folders
    // and extensions instead. `//` opens a comment, not a path.
    let paths = texts
        .iter()
        .all(|t| t.starts_with('/') && !t.starts_with("//"));
    slots.fill([if paths {
        Recipe::new(
            "Folders with the most paths (top 10)",
            "map((.text | split(\"/\") | .[:-1] | join(\"/\"))?) | group_by(.) \
             | sort_by(-length) | .[:10] | map({folder: .[0], count: length})",
        )
    } else {
        Recipe::new(
            "The most repeated lines (top 10)",
            "group_by(.text?) | sort_by(-length) | .[:10] \
             | map({text: .[0].text?, count: length})",
        )
    }
    .slurp()]);
    slots.fill([Recipe::new("The last N lines", ".[-($n | tonumber):][]")
        .slurp()
        .param("n", WINDOW.to_string())]);
    slots.fill([Recipe::new(
        "The 10 longest lines",
        "sort_by((.text | -length)?) | .[:10][]",
    )
    .slurp()]);
    slots.fill([if paths {
        Recipe::new(
            "Count paths by extension",
            "map((.text | split(\"/\")[-1] | split(\".\")[1:][-1] // \"\")?) | group_by(.) \
             | map({extension: .[0], count: length})",
        )
        .slurp()
    } else {
        Recipe::new(
            "Lines longer than N characters",
            "select(.text | length > ($n | tonumber))?",
        )
        .param("n", longer_than(&texts).to_string())
    }]);
    slots.fill([Recipe::new(
        "Count lines and empty lines",
        "{lines: length, empty: (map(select(.text? == \"\")) | length)}",
    )
    .slurp()]);
    slots.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(texts: &[&str]) -> Vec<Value> {
        (1..)
            .zip(texts)
            .map(|(n, t)| json!({"line": n, "text": t}))
            .collect()
    }

    fn param<'r>(r: &'r Recipe, name: &str) -> &'r str {
        &r.params.iter().find(|p| p.name == name).unwrap().default
    }

    #[test]
    fn line_recipes_take_their_values_from_the_lines() {
        let sample = lines(&[
            "use std::io;",
            "use std::fs;",
            "",
            "fn main() {",
            "    let file = open();",
            "    read(file);",
            "}",
            "fn open() {}",
        ]);
        assert!(are_lines(&sample));
        let r = recipes(&sample);
        assert_eq!(r.len(), 10);
        assert_eq!(r[0].filter, "([.line, .text] | @tsv)?");
        assert!(r[0].raw);
        // Lines 3 to 8: from a quarter in, at most WINDOW lines.
        assert_eq!((param(&r[1], "from"), param(&r[1], "to")), ("3", "8"));
        // "file" is in two lines of eight; "main" in one.
        assert_eq!(param(&r[2], "keyword"), "file");
        assert_eq!(param(&r[3], "keyword"), "file");
        assert!(r[3].slurp);
        // "use " and "fn " start two lines each: the first met.
        assert_eq!(param(&r[4], "prefix"), "use ");
        for (i, a) in r.iter().enumerate() {
            assert!(!r[..i].iter().any(|b| b.same_as(a)), "{a:?}");
        }
    }

    #[test]
    fn lines_without_keywords_or_prefixes_still_get_ten_distinct_recipes() {
        let sample = lines(&["a", "a"]);
        let r = recipes(&sample);
        assert_eq!(r.len(), 10);
        // No keyword: slots 3 to 5 took universal recipes.
        assert!(r.iter().all(|x| !x.filter.contains("$keyword")));
        assert!(r.iter().all(|x| !x.filter.contains("$prefix")));
        for (i, a) in r.iter().enumerate() {
            assert!(!r[..i].iter().any(|b| b.same_as(a)), "{a:?}");
        }
    }

    #[test]
    fn paths_are_counted_by_folder_and_extension() {
        let r = recipes(&lines(&["/a/x.rs", "/a/y.toml", "/b/z.rs"]));
        assert!(r[5].filter.contains("folder"), "{}", r[5].filter);
        assert!(r[8].filter.contains("extension"), "{}", r[8].filter);
        for not_paths in [
            &["/a/x.rs", "not a path"],
            &["//! A module", "// a comment"],
        ] {
            let text = recipes(&lines(not_paths));
            assert!(
                text[5].filter.starts_with("group_by(.text?)"),
                "{}",
                text[5].filter
            );
        }
    }

    #[test]
    fn only_line_records_are_lines() {
        assert!(!are_lines(&[json!({"line": 1, "text": "x", "more": 1})]));
        assert!(!are_lines(&[json!({"line": "1", "text": "x"})]));
        assert!(!are_lines(&[]));
    }
}
