//! The ten extraction recipes of every descriptor.
//!
//! For MIF memories these are the spec's recipes: 1–8 use Light fields only,
//! 9–10 adapt to the detail level. For any other records, ten equivalents are
//! derived from the fields the records actually have. No recipe references a
//! field that is absent at its detail level, and none references `.score`.
//!
//! A recipe is a jq filter plus named parameters. Parameters are passed as jq
//! variables (`--arg name value`, `$name` in the filter), so a value can never
//! break out of the filter: the same filter runs in the shell and natively.
//!
//! ```
//! use lro_core::{descriptor::Detail, recipes::RecipeSet};
//! use serde_json::json;
//!
//! let sample = [json!({"id": "m1", "title": "Cache", "namespace": "_semantic/knowledge",
//!                      "memory_type": "semantic", "tags": ["perf"], "created": "2025-01-01"})];
//! let set = RecipeSet::derive(&sample, Detail::Light);
//! assert!(set.memories);
//! assert_eq!(set.recipes.len(), 10);
//! let cmd = set.get(2).unwrap().command("/tmp/atlatl-list-x.jsonl");
//! assert_eq!(cmd, "tail -n +2 /tmp/atlatl-list-x.jsonl | jq -c --arg namespace _semantic 'select(.namespace | startswith($namespace))'");
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::descriptor::{Detail, JqRecipe};

/// One named parameter of a recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecipeParam {
    /// Variable name (`$name` in the filter, `params.name` in `lro_extract`).
    pub name: String,
    /// Value used in the descriptor's ready-to-run command.
    pub default: String,
}

/// One recipe: a jq filter, how to run it, and its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Recipe {
    /// 1 to 10.
    pub number: u8,
    /// What it does.
    pub description: String,
    /// The jq filter, with parameters as `$name` variables.
    pub filter: String,
    /// Run over all records at once (`jq -s`).
    pub slurp: bool,
    /// Print strings raw (`jq -r`).
    pub raw: bool,
    /// Parameters, with the defaults used in the rendered command.
    pub params: Vec<RecipeParam>,
}

impl Recipe {
    fn new(number: u8, description: impl Into<String>, filter: impl Into<String>) -> Self {
        Self {
            number,
            description: description.into(),
            filter: filter.into(),
            slurp: false,
            raw: false,
            params: Vec::new(),
        }
    }

    fn slurp(mut self) -> Self {
        self.slurp = true;
        self
    }

    fn raw(mut self) -> Self {
        self.raw = true;
        self
    }

    fn param(mut self, name: &str, default: impl Into<String>) -> Self {
        self.params.push(RecipeParam {
            name: name.to_owned(),
            default: default.into(),
        });
        self
    }

    /// The jq command-line arguments after `jq`, with `params` overriding the
    /// defaults: flags, `--arg` pairs, then the filter.
    pub fn jq_args(&self, params: &BTreeMap<String, String>) -> Vec<String> {
        let mut args = Vec::new();
        if self.slurp {
            args.push("-s".to_owned());
        }
        args.push(if self.raw { "-r" } else { "-c" }.to_owned());
        for p in &self.params {
            args.push("--arg".to_owned());
            args.push(p.name.clone());
            args.push(params.get(&p.name).unwrap_or(&p.default).clone());
        }
        args.push(self.filter.clone());
        args
    }

    /// The ready-to-run shell command for `file`, with default parameters.
    pub fn command(&self, file: &str) -> String {
        format!("tail -n +2 {} | jq {}", shell_quote(file), self.jq_part())
    }

    /// What follows `jq` in [`Recipe::command`]: flags, `--arg` pairs with
    /// their defaults, and the filter, shell-quoted.
    pub fn jq_part(&self) -> String {
        let args: Vec<String> = self
            .jq_args(&BTreeMap::new())
            .iter()
            .map(|a| shell_quote(a))
            .collect();
        args.join(" ")
    }

    /// The descriptor form.
    pub fn to_jq_recipe(&self, file: &str) -> JqRecipe {
        JqRecipe {
            description: self.description.clone(),
            command: self.command(file),
        }
    }

    /// The compact descriptor form: the command without `tail -n +2 FILE |
    /// jq`, which the compact guidance shows once.
    pub fn to_compact_recipe(&self) -> JqRecipe {
        JqRecipe {
            description: self.description.clone(),
            command: self.jq_part(),
        }
    }
}

/// Quotes `s` for a POSIX shell; plain words stay unquoted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The ten recipes for one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecipeSet {
    /// Whether these are the spec's memory recipes.
    pub memories: bool,
    /// Exactly ten recipes, numbered 1 to 10.
    pub recipes: Vec<Recipe>,
}

/// Records parsed from the front of a file are enough to choose recipes and
/// example parameters; both the layer and the extractor use this many.
pub const SAMPLE_SIZE: usize = 32;

impl RecipeSet {
    /// Chooses memory or schema-derived recipes from sample records.
    pub fn derive(sample: &[Value], detail: Detail) -> Self {
        if is_memory_sample(sample) {
            Self::memories(sample, detail)
        } else {
            Self::generic(sample)
        }
    }

    /// Recipe `number` (1-based).
    pub fn get(&self, number: u8) -> Option<&Recipe> {
        self.recipes.iter().find(|r| r.number == number)
    }

    /// The descriptor form of all ten.
    pub fn to_jq_recipes(&self, file: &str) -> Vec<JqRecipe> {
        self.recipes.iter().map(|r| r.to_jq_recipe(file)).collect()
    }

    /// The compact descriptor form of all ten (see
    /// [`Recipe::to_compact_recipe`]).
    pub fn to_compact_recipes(&self) -> Vec<JqRecipe> {
        self.recipes.iter().map(Recipe::to_compact_recipe).collect()
    }

    /// The spec's ten memory recipes at `detail`.
    pub fn memories(sample: &[Value], detail: Detail) -> Self {
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
            Recipe::new(1, "Titles and namespaces", "[.title, .namespace] | @tsv").raw(),
            Recipe::new(
                2,
                "Filter by namespace prefix",
                "select(.namespace | startswith($namespace))",
            )
            .param("namespace", ns_prefix),
            Recipe::new(
                3,
                "Search titles by keyword",
                "select(.title | test($keyword; \"i\"))",
            )
            .param("keyword", keyword.clone()),
            Recipe::new(4, "IDs, titles and namespaces", "{id, title, namespace}"),
            Recipe::new(
                5,
                "Filter by memory type",
                "select(.memory_type == $memory_type)",
            )
            .param("memory_type", mem_type),
            Recipe::new(
                6,
                "Count by namespace",
                "group_by(.namespace) | map({namespace: .[0].namespace, count: length})",
            )
            .slurp(),
            Recipe::new(7, "Filter by tag", "select(any(.tags[]?; . == $tag))").param("tag", tag),
            Recipe::new(8, "Sort by created date", "sort_by(.created)").slurp(),
        ];
        recipes.extend(match detail {
            Detail::Light => [
                Recipe::new(9, "Unique namespaces", "map(.namespace) | unique").slurp(),
                Recipe::new(
                    10,
                    "Count by memory type",
                    "group_by(.memory_type) | map({memory_type: .[0].memory_type, count: length})",
                )
                .slurp(),
            ],
            Detail::Medium => [
                Recipe::new(9, "Highest confidence first", "sort_by(-.confidence)").slurp(),
                content_search(keyword),
            ],
            Detail::Full => [
                Recipe::new(
                    9,
                    "Highest confidence first",
                    "sort_by(-.provenance.confidence)",
                )
                .slurp(),
                content_search(keyword),
            ],
        });
        RecipeSet {
            memories: true,
            recipes,
        }
    }

    /// Ten recipes derived from the fields of arbitrary records.
    pub fn generic(sample: &[Value]) -> Self {
        let f = Fields::collect(sample);
        let mut recipes = Vec::with_capacity(10);

        // 1. Browse.
        recipes.push(if f.scalars.is_empty() {
            Recipe::new(1, "Browse records", ".")
        } else {
            let keys: Vec<&str> = f.scalars.iter().take(4).map(String::as_str).collect();
            Recipe::new(
                1,
                format!("Browse records ({})", keys.join(", ")),
                object_projection(&keys),
            )
        });

        // 2. Filter by a field value.
        recipes.push(match f.categorical.first() {
            Some((field, value)) => Recipe::new(
                2,
                format!("Filter where .{field} equals a value"),
                format!("select({} == $value)", path(field)),
            )
            .param("value", value.clone()),
            None => Recipe::new(2, "Filter out null records", "select(. != null)"),
        });

        // 3. Keyword search over the whole record.
        recipes.push(
            Recipe::new(
                3,
                "Search all fields by keyword (case-insensitive)",
                "select(tostring | test($keyword; \"i\"))",
            )
            .param(
                "keyword",
                f.keyword.clone().unwrap_or_else(|| "keyword".into()),
            ),
        );

        // 4. Identify records.
        recipes.push(match (&f.id, &f.label) {
            (Some(id), Some(label)) if id != label => Recipe::new(
                4,
                format!("Extract {id} and {label} only"),
                object_projection(&[id.as_str(), label.as_str()]),
            ),
            (Some(one), _) | (None, Some(one)) => {
                Recipe::new(4, format!("Extract {one} only"), path(one))
            }
            (None, None) => Recipe::new(4, "List field names of each record", "keys? // type"),
        });

        // 5. Numeric threshold, else a prefix filter.
        recipes.push(match (f.numeric.first(), f.strings.first()) {
            (Some((field, median)), _) => Recipe::new(
                5,
                format!("Filter where .{field} is at least a value"),
                format!("select(({}) >= ($min | tonumber))", path(field)),
            )
            .param("min", median.clone()),
            (None, Some(field)) => Recipe::new(
                5,
                format!("Filter where .{field} starts with a prefix"),
                format!("select(({}) | tostring | startswith($prefix))", path(field)),
            )
            .param("prefix", ""),
            (None, None) => {
                Recipe::new(5, "Filter records of a JSON type", "select(type == $type)")
                    .param("type", f.root_type.clone())
            }
        });

        // 6. Count by a field.
        recipes.push(match f.categorical.first() {
            Some((field, _)) => Recipe::new(
                6,
                format!("Count by {field}"),
                format!(
                    "group_by({p}) | map({{{k}: (.[0] | {p}), count: length}})",
                    p = path(field),
                    k = json_key(field),
                ),
            )
            .slurp(),
            None => Recipe::new(
                6,
                "Count by JSON type",
                "group_by(type) | map({type: .[0] | type, count: length})",
            )
            .slurp(),
        });

        // 7. Array membership, else a second string field search.
        recipes.push(
            match (&f.string_array, f.strings.get(1).or(f.strings.first())) {
                (Some((field, value)), _) => Recipe::new(
                    7,
                    format!("Filter where .{field} contains a value"),
                    format!("select(any({}[]?; . == $value))", path(field)),
                )
                .param("value", value.clone()),
                (None, Some(field)) => Recipe::new(
                    7,
                    format!("Search .{field} by pattern (case-insensitive)"),
                    format!(
                        "select(({}) | tostring | test($pattern; \"i\"))",
                        path(field)
                    ),
                )
                .param(
                    "pattern",
                    f.keyword.clone().unwrap_or_else(|| "pattern".into()),
                ),
                (None, None) => Recipe::new(7, "Records that are not empty", "select(length > 0)"),
            },
        );

        // 8. Sort.
        recipes.push(match f.sortable.as_ref().or(f.strings.first()) {
            Some(field) => Recipe::new(
                8,
                format!("Sort by {field}"),
                format!("sort_by({})", path(field)),
            )
            .slurp(),
            None => Recipe::new(8, "Sort records", "sort").slurp(),
        });

        // 9. Distinct values.
        recipes.push(match f.categorical.first() {
            Some((field, _)) => Recipe::new(
                9,
                format!("List unique values of {field}"),
                format!("map({}) | unique", path(field)),
            )
            .slurp(),
            None => {
                Recipe::new(9, "List all field names", "map(keys? // []) | add | unique").slurp()
            }
        });

        // 10. Totals.
        recipes.push(match f.numeric.first() {
            Some((field, _)) => {
                let p = path(field);
                Recipe::new(
                    10,
                    format!("Count records and summarize {field}"),
                    format!(
                        "{{count: length, min: (map({p}) | min), max: (map({p}) | max), mean: (map({p}) | add / length)}}"
                    ),
                )
                .slurp()
            }
            None => Recipe::new(10, "Count records", "length").slurp(),
        });

        RecipeSet {
            memories: false,
            recipes,
        }
    }
}

fn content_search(keyword: String) -> Recipe {
    Recipe::new(
        10,
        "Search content by keyword",
        "select(.content | test($pattern; \"i\"))",
    )
    .param("pattern", keyword)
}

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

fn most_common<'a>(items: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    // Ties go to the alphabetically first value so the choice is stable.
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(s, _)| s.to_owned())
}

fn common_word<'a>(texts: impl Iterator<Item = &'a str>) -> Option<String> {
    let lowered: Vec<String> = texts
        .flat_map(|t| t.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.chars().count() >= 4 && w.chars().all(char::is_alphabetic))
        .map(str::to_lowercase)
        .collect();
    most_common(lowered.iter().map(String::as_str))
}

fn is_ident(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The jq path to a top-level field: `.name` or `.["odd key"]`.
fn path(key: &str) -> String {
    if is_ident(key) {
        format!(".{key}")
    } else {
        format!(".[{}]", serde_json::to_string(key).expect("str serializes"))
    }
}

fn json_key(key: &str) -> String {
    if is_ident(key) {
        key.to_owned()
    } else {
        serde_json::to_string(key).expect("str serializes")
    }
}

fn object_projection(keys: &[&str]) -> String {
    let parts: Vec<String> = keys
        .iter()
        .map(|k| {
            if is_ident(k) {
                (*k).to_owned()
            } else {
                format!("{}: {}", json_key(k), path(k))
            }
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// What the generic recipes need to know about the records' fields.
struct Fields {
    root_type: String,
    /// Top-level scalar fields, in first-seen order.
    scalars: Vec<String>,
    /// Top-level string fields.
    strings: Vec<String>,
    /// String fields with repeated values, with their most common value.
    categorical: Vec<(String, String)>,
    /// Numeric fields with their sample median.
    numeric: Vec<(String, String)>,
    /// An array-of-strings field with its most common element.
    string_array: Option<(String, String)>,
    /// A date-like or otherwise sortable field.
    sortable: Option<String>,
    id: Option<String>,
    label: Option<String>,
    keyword: Option<String>,
}

impl Fields {
    fn collect(sample: &[Value]) -> Self {
        let root_type = match sample.first() {
            Some(Value::Object(_)) | None => "object",
            Some(Value::Array(_)) => "array",
            Some(Value::String(_)) => "string",
            Some(Value::Number(_)) => "number",
            Some(Value::Bool(_)) => "boolean",
            Some(Value::Null) => "null",
        }
        .to_owned();
        let objects: Vec<&serde_json::Map<String, Value>> =
            sample.iter().filter_map(Value::as_object).collect();
        // Fields present in every sampled object, in the first object's order.
        let mut order: Vec<String> = Vec::new();
        for o in &objects {
            for k in o.keys() {
                if !order.contains(k) {
                    order.push(k.clone());
                }
            }
        }
        let everywhere = |k: &String| objects.iter().all(|o| o.contains_key(k));
        let all_of = |k: &String, pred: fn(&Value) -> bool| {
            !objects.is_empty() && objects.iter().all(|o| o.get(k).is_some_and(pred))
        };
        let mut f = Fields {
            root_type,
            scalars: Vec::new(),
            strings: Vec::new(),
            categorical: Vec::new(),
            numeric: Vec::new(),
            string_array: None,
            sortable: None,
            id: None,
            label: None,
            keyword: None,
        };
        for k in order.iter().filter(|k| everywhere(k)) {
            if all_of(k, |v| v.is_string()) {
                f.scalars.push(k.clone());
                f.strings.push(k.clone());
                let values: Vec<&str> = objects.iter().filter_map(|o| o[k].as_str()).collect();
                let distinct: std::collections::BTreeSet<&&str> = values.iter().collect();
                if distinct.len() < values.len()
                    && distinct.len() <= 50
                    && let Some(top) = most_common(values.iter().copied())
                {
                    f.categorical.push((k.clone(), top));
                }
                if f.sortable.is_none() && values.iter().all(|v| looks_like_date(v)) {
                    f.sortable = Some(k.clone());
                }
            } else if all_of(k, |v| v.is_number()) {
                f.scalars.push(k.clone());
                let mut nums: Vec<f64> = objects.iter().filter_map(|o| o[k].as_f64()).collect();
                nums.sort_by(f64::total_cmp);
                let median = nums[nums.len() / 2];
                f.numeric.push((k.clone(), format_number(median)));
            } else if all_of(k, |v| v.is_boolean()) {
                f.scalars.push(k.clone());
            } else if f.string_array.is_none()
                && all_of(k, |v| {
                    v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
                })
            {
                let top = most_common(
                    objects
                        .iter()
                        .filter_map(|o| o[k].as_array())
                        .flatten()
                        .filter_map(Value::as_str),
                );
                if let Some(top) = top {
                    f.string_array = Some((k.clone(), top));
                }
            }
        }
        let lower = |k: &String| k.to_ascii_lowercase();
        f.id = f
            .scalars
            .iter()
            .find(|k| lower(k) == "id" || lower(k).ends_with("_id") || lower(k) == "line")
            .cloned();
        f.label = f
            .strings
            .iter()
            .find(|k| {
                ["title", "name", "label", "summary", "text", "message"]
                    .contains(&lower(k).as_str())
            })
            .or(f.strings.iter().find(|k| Some(*k) != f.id.as_ref()))
            .cloned();
        if f.sortable.is_none() {
            f.sortable = f.numeric.first().map(|(k, _)| k.clone());
        }
        f.keyword = f
            .label
            .as_ref()
            .and_then(|label| common_word(objects.iter().filter_map(|o| o[label].as_str())));
        f
    }
}

fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
                    assert!(nine.contains("-.confidence"));
                    assert!(ten.contains(".content"));
                }
                Detail::Full => {
                    assert!(nine.contains("-.provenance.confidence"));
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

    #[test]
    fn generic_recipes_reference_only_existing_fields() {
        let sample = vec![
            json!({"ts": "2025-01-01T00:00:00Z", "level": "warn", "latency ms": 12, "tags": ["a"]}),
            json!({"ts": "2025-01-02T00:00:00Z", "level": "warn", "latency ms": 30, "tags": ["b", "a"]}),
            json!({"ts": "2025-01-03T00:00:00Z", "level": "info", "latency ms": 7, "tags": []}),
        ];
        let set = RecipeSet::derive(&sample, Detail::Full);
        assert!(!set.memories);
        assert_eq!(set.recipes.len(), 10);
        let all: String = set.recipes.iter().map(|r| r.filter.clone()).collect();
        assert!(all.contains(".level"));
        assert!(all.contains(".[\"latency ms\"]"));
        assert!(!all.contains(".title"));
        assert!(!all.contains(".namespace"));
    }

    #[test]
    fn text_line_records_get_ten_recipes() {
        let sample = vec![
            json!({"line": 1, "text": "error: x"}),
            json!({"line": 2, "text": "ok"}),
        ];
        let set = RecipeSet::derive(&sample, Detail::Full);
        assert_eq!(set.recipes.len(), 10);
        assert_eq!(set.get(4).unwrap().filter, "{line, text}");
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("abc"), "abc");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
