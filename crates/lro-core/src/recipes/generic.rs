//! Recipes derived from the fields of records that are neither memories
//! nor lines of text (JSON objects from any tool, the commits of a log, the
//! entries of a flattened tree).
//!
//! The sample's fields are sorted into roles (`roles.rs`): scalars to
//! browse, a category (a string field whose values repeat) to filter and
//! count by, an identifier and a label, a number, a date, a long text, an
//! array of strings. Each of the ten slots has the recipe its role allows; a slot
//! whose role no field fills takes a recipe that applies to any records
//! ([`Slots`]), so a set is always ten distinct recipes. A record further
//! on that differs from the sample (a string among objects, a field of
//! another type) does not stop jq: per-record filters suppress errors
//! (`select(.f == $value)?`), and those over all records read each field
//! as `.f?`, which is nothing on a record that is not an object.
//!
//! Records of several arrays, each tagged with its array's name in
//! [`ARRAY_FIELD`] (`records/arrays.rs`), are told by the sample: every
//! sampled record carries the tag as a string. The recipes from fields are
//! then derived from the records of the sample's first array; those that
//! project or sum up every record run on that array only
//! (`select(.array == "entities") | …`), since another array's records have
//! other fields (`Scope`); two recipes are about every array:
//! the count of records in each (slot 6, the analysis) and the records of
//! one array by its name (slot 10 when no number is there to total).

use serde_json::{Map, Value};

use super::{
    Recipe, Slots,
    roles::Fields,
    values::{self, Rows},
};
use crate::fields::ARRAY_FIELD;

fn refs(rows: &[Rows]) -> Vec<&Rows> {
    rows.iter().collect()
}

fn is_ident(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The jq path to a top-level field, nothing on a record that is not an
/// object: `.name?` or `.["odd key"]?`.
fn opt_path(key: &str) -> String {
    format!("{}?", path(key))
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

fn object_projection<S: AsRef<str>>(keys: &[S]) -> String {
    let parts: Vec<String> = keys
        .iter()
        .map(|k| {
            let k = k.as_ref();
            if is_ident(k) {
                k.to_owned()
            } else {
                format!("{}: {}", json_key(k), path(k))
            }
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// The array names of records of several arrays, one per sampled record,
/// when every one carries the tag.
fn tags(sample: &[Value]) -> Option<Vec<&str>> {
    let tags: Option<Vec<&str>> = sample
        .iter()
        .map(|r| r.get(ARRAY_FIELD).and_then(Value::as_str))
        .collect();
    tags.filter(|t| !t.is_empty())
}

/// The array the recipes from fields are about, for records of several
/// arrays: a recipe that prints a projection of every record or sums them
/// all up runs on that array's records only. One that selects records by
/// a field runs on all of them: another array's records lack the field and
/// are not selected, and a search may find them in any array.
struct Scope(Option<String>);

impl Scope {
    /// `recipe` on the scope's records only, when it needs to be; a
    /// per-record recipe then suppresses errors (see [`Recipe::tolerant`]).
    fn apply(&self, recipe: Recipe) -> Recipe {
        let scoped = match &self.0 {
            Some(name) if recipe.slurp || !recipe.filter.starts_with("select(") => {
                let literal = serde_json::to_string(name).expect("str serializes");
                let filter = if recipe.slurp {
                    format!(
                        "map(select({} == {literal})) | {}",
                        opt_path(ARRAY_FIELD),
                        recipe.filter
                    )
                } else {
                    format!(
                        "select({} == {literal}) | {}",
                        path(ARRAY_FIELD),
                        recipe.filter
                    )
                };
                Recipe { filter, ..recipe }
            }
            _ => recipe,
        };
        if scoped.slurp {
            scoped
        } else {
            scoped.tolerant()
        }
    }

    fn all(&self, candidates: impl IntoIterator<Item = Recipe>) -> Vec<Recipe> {
        candidates.into_iter().map(|r| self.apply(r)).collect()
    }
}

/// `Count by {field}`, over all records.
fn count_by(field: &str, description: String) -> Recipe {
    Recipe::new(
        description,
        format!(
            "group_by({p}) | map({{{k}: (.[0] | {p}), count: length}})",
            p = opt_path(field),
            k = json_key(field),
        ),
    )
    .slurp()
}

/// The ten recipes for records like `sample`.
pub(super) fn recipes(sample: &[Value]) -> Vec<Recipe> {
    let tags = tags(sample);
    let first = tags.as_ref().map(|t| t[0]);
    let scope = Scope(first.map(str::to_owned));
    // Records of several arrays: the recipes from fields are the first
    // array's.
    let own: Vec<&Value> = sample
        .iter()
        .filter(|r| first.is_none() || r.get(ARRAY_FIELD).and_then(Value::as_str) == first)
        .collect();
    let rows: Vec<&Map<String, Value>> = own.iter().filter_map(|r| r.as_object()).collect();
    let f = Fields::collect(&rows, first.map(|_| ARRAY_FIELD));
    let texts: Vec<String> = own.iter().map(|r| r.to_string()).collect();
    let strs = |k: &str| -> Vec<&str> { rows.iter().filter_map(|r| r[k].as_str()).collect() };
    let mut slots = Slots::new();

    // 1. Browse: the identifier, label and category first (the sample's
    // objects list their fields in sorted order, which says nothing).
    let mut shown: Vec<&String> = [
        f.id.as_ref(),
        f.label.as_ref(),
        f.category.as_ref().map(|c| &c.0),
    ]
    .into_iter()
    .flatten()
    .collect();
    for k in &f.scalars {
        if !shown.contains(&k) {
            shown.push(k);
        }
    }
    shown.truncate(4);
    slots.fill(scope.all((!shown.is_empty()).then(|| {
        let names: Vec<&str> = shown.iter().map(|k| k.as_str()).collect();
        Recipe::new(
            format!("Browse records: {}", names.join(", ")),
            object_projection(&names),
        )
    })));

    // What each filter selects in the sample: a later filter's value must
    // select other records, or its recipe would print what one before does.
    let mut selected: Vec<Rows> = Vec::new();

    // 2. Filter by a category's value.
    selected.extend(f.category.as_ref().map(|(field, value)| {
        rows.iter()
            .map(|r| r[field.as_str()].as_str() == Some(value.as_str()))
            .collect()
    }));
    slots.fill(scope.all(f.category.as_ref().map(|(field, value)| {
        Recipe::new(
            format!("Filter where .{field} equals a value"),
            format!("select({} == $value)", path(field)),
        )
        .param("value", value.clone())
    })));

    // 3. Keyword over the whole record: a word of the label first, else of
    // any string, found in some records' text but not all.
    let all_strings = rows.iter().flat_map(|r| r.values()).flat_map(|v| match v {
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        other => other.as_str().into_iter().collect::<Vec<_>>(),
    });
    let sources: Vec<&str> = f
        .label
        .iter()
        .flat_map(|label| strs(label))
        .chain(all_strings)
        .collect();
    let keyword = values::keyword(&sources, &texts, &refs(&selected));
    slots.fill(scope.all(keyword.map(|k| {
        selected.push(k.rows);
        Recipe::new(
            "Search all fields by keyword (case-insensitive)",
            "select(tostring | test($keyword; \"i\"))",
        )
        .param("keyword", k.value)
    })));

    // 4. Identify records.
    slots.fill(scope.all(match (&f.id, &f.label) {
        (Some(id), Some(label)) => Some(Recipe::new(
            format!("Extract {id} and {label} only"),
            object_projection(&[id, label]),
        )),
        (Some(one), None) | (None, Some(one)) => {
            Some(Recipe::new(format!("List .{one}"), path(one)).raw())
        }
        (None, None) => None,
    }));

    // 5. A numeric threshold, else a leading part (a folder, a month).
    let numeric = f.number.as_ref().map(|(field, median)| {
        Recipe::new(
            format!("Filter where .{field} is at least a value"),
            format!("select({} >= ($min | tonumber))", path(field)),
        )
        .param("min", median.clone())
    });
    let prefixed = f.prefix_fields(&rows).into_iter().find_map(|field| {
        let prefix = values::prefix(&strs(field), &refs(&selected))?;
        Some((
            Recipe::new(
                format!("Filter where .{field} starts with a prefix"),
                format!("select({} | startswith($prefix))", path(field)),
            )
            .param("prefix", prefix.value),
            prefix.rows,
        ))
    });
    let prefixed = prefixed.map(|(recipe, rows)| {
        selected.push(rows);
        recipe
    });
    slots.fill(scope.all(numeric.into_iter().chain(prefixed)));

    // 6. Count by the category, else by the fields records have; records
    // of several arrays: how many records each array has.
    let by_category = f
        .category
        .as_ref()
        .map(|(field, _)| count_by(field, format!("Count by {field}")));
    if first.is_some() {
        slots.fill([count_by(ARRAY_FIELD, "Count records in each array".into())]);
    } else {
        slots.fill(
            by_category
                .clone()
                .into_iter()
                .chain((!rows.is_empty()).then(|| {
                    Recipe::new(
                        "Count the records that have each field",
                        "map(keys? // [] | .[]) | group_by(.) | map({field: .[0], count: length})",
                    )
                    .slurp()
                })),
        );
    }

    // 7. Array membership, else a word in the longest text field or the label.
    let membership = f.string_array.as_ref().map(|(field, value)| {
        Recipe::new(
            format!("Filter where .{field} contains a value"),
            format!("select(any({}[]?; . == $value))", path(field)),
        )
        .param("value", value.clone())
    });
    let searched = f.text.iter().chain(&f.label).find_map(|field| {
        let values = strs(field);
        let own: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
        let pattern = values::keyword(&values, &own, &refs(&selected))?.value;
        Some(
            Recipe::new(
                format!("Search .{field} by pattern (case-insensitive)"),
                format!("select({} | test($pattern; \"i\"))", path(field)),
            )
            .param("pattern", pattern),
        )
    });
    slots.fill(scope.all(membership.into_iter().chain(searched)));

    // 8. Sort by a date, a number, else the identifier.
    let sort_key = f
        .date
        .as_ref()
        .or(f.number.as_ref().map(|(k, _)| k))
        .or(f.id.as_ref());
    slots.fill(scope.all(sort_key.map(|field| {
        Recipe::new(
            format!("Sort by {field}"),
            format!("sort_by({})", opt_path(field)),
        )
        .slurp()
    })));

    // 9. Distinct values.
    let distinct = f
        .category
        .as_ref()
        .map(|(field, _)| (field, opt_path(field)))
        .or_else(|| {
            f.string_array
                .as_ref()
                .map(|(field, _)| (field, format!("{}[]?", opt_path(field))))
        });
    let distinct = distinct.map(|(field, values)| {
        Recipe::new(
            format!("List unique values of {field}"),
            format!("map({values}) | unique"),
        )
        .slurp()
    });
    // Records of several arrays counted by array in slot 6: the count by
    // the category comes here.
    let by_category = by_category.filter(|_| first.is_some());
    slots.fill(scope.all(by_category.into_iter().chain(distinct)));

    // 10. Totals; records of several arrays: else one array's records.
    // The sample's records all have the number, so the file has some.
    let totals = f.number.as_ref().map(|(field, _)| {
        Recipe::new(
            format!("Summarize .{field}: count, min, max, mean"),
            format!(
                "map({} | numbers) | {{count: length, min: min, max: max, mean: (add / length)}}",
                opt_path(field)
            ),
        )
        .slurp()
    });
    let one_array = first.map(|name| {
        Recipe::new(
            format!("Records of one array (.{ARRAY_FIELD})"),
            format!("select({} == $array)", path(ARRAY_FIELD)),
        )
        .tolerant()
        .param(ARRAY_FIELD, name)
    });
    slots.fill(scope.all(totals).into_iter().chain(one_array));
    slots.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn param<'r>(r: &'r Recipe, name: &str) -> &'r str {
        &r.params.iter().find(|p| p.name == name).unwrap().default
    }

    fn distinct(r: &[Recipe]) {
        assert_eq!(r.len(), 10);
        for (i, a) in r.iter().enumerate() {
            assert!(!r[..i].iter().any(|b| b.same_as(a)), "{a:?}");
        }
    }

    #[test]
    fn generic_recipes_reference_only_existing_fields() {
        let sample = vec![
            json!({"ts": "2025-01-01T00:00:00Z", "level": "warn", "latency ms": 12, "tags": ["a"]}),
            json!({"ts": "2025-01-02T00:00:00Z", "level": "warn", "latency ms": 30, "tags": ["b", "a"]}),
            json!({"ts": "2025-01-03T00:00:00Z", "level": "info", "latency ms": 7, "tags": []}),
        ];
        let r = recipes(&sample);
        distinct(&r);
        let all: String = r.iter().map(|r| r.filter.clone()).collect();
        assert!(all.contains(".level"));
        assert!(all.contains(".[\"latency ms\"]"));
        assert!(!all.contains(".title"));
        assert!(!all.contains(".namespace"));
        assert_eq!(param(&r[1], "value"), "warn");
        assert_eq!(param(&r[4], "min"), "12");
        assert_eq!(param(&r[6], "value"), "a");
    }

    #[test]
    fn commits_get_values_each_some_but_not_all_commits_have() {
        let sample: Vec<Value> = (0..8)
            .map(|i| {
                json!({"commit": format!("{i:040x}"), "author": format!("Dev {}", i % 3),
                       "date": format!("2025-0{}-01 10:00:00+00:00", 1 + i / 4),
                       "message": if i % 2 == 0 { format!("fix: bump {i}") }
                                  else { format!("Cache warming {i}\n\nSigned-off-by: Dev") }})
            })
            .collect();
        let r = recipes(&sample);
        distinct(&r);
        assert_eq!(r[0].filter, "{commit, message, author, date}?");
        assert_eq!(
            (r[1].filter.as_str(), param(&r[1], "value")),
            ("select(.author == $value)?", "Dev 0")
        );
        // Words of the messages found in half the commits; never a field name.
        assert_eq!(param(&r[2], "keyword"), "bump");
        assert_eq!(r[3].filter, "{commit, message}?");
        assert_eq!(param(&r[4], "prefix"), "2025-01-");
        assert!(r[4].filter.contains(".date"));
        // The message search takes a word that selects other commits than
        // the keyword, the author and the month do.
        assert_eq!(param(&r[6], "pattern"), "cache");
        assert_eq!(r[7].filter, "sort_by(.date?)");
    }

    #[test]
    fn a_keyword_comes_from_other_fields_when_the_label_has_none() {
        let sample: Vec<Value> = (0..6)
            .map(|i| {
                let kind = ["knows", "manages"][i % 2];
                json!({"from": format!("person-{i}"), "to": format!("person-{}", i * 7), "relationType": kind})
            })
            .collect();
        let r = recipes(&sample);
        distinct(&r);
        // "person" is in every record; "knows" selects what recipe 2
        // (relationType == "knows") does.
        assert_eq!(param(&r[1], "value"), "knows");
        assert_eq!(param(&r[2], "keyword"), "manages");
    }

    #[test]
    fn tree_entries_filter_by_folder() {
        let sample: Vec<Value> = ["a", "a/x.rs", "a/y.rs", "b", "b/z.rs", "Cargo.toml"]
            .iter()
            .map(|p| {
                let name = p.rsplit('/').next().unwrap();
                let kind = if p.contains('.') { "file" } else { "directory" };
                json!({"path": p, "name": name, "type": kind})
            })
            .collect();
        let r = recipes(&sample);
        distinct(&r);
        assert_eq!(param(&r[1], "value"), "file");
        assert_eq!(r[3].filter, "{path, name}?");
        assert_eq!(param(&r[4], "prefix"), "a/");
        assert_eq!(
            r[5].filter,
            "group_by(.type?) | map({type: (.[0] | .type?), count: length})"
        );
    }

    /// server-memory's graph as records of its two arrays (`records/arrays.rs`).
    fn graph(entities: usize, relations: usize) -> Vec<Value> {
        let kinds = ["person", "project", "team"];
        let e = (0..entities).map(|i| {
            json!({"array": "entities", "name": format!("person-{i}"), "entityType": (kinds[i % 3]),
                   "observations": [format!("works on area {}", i % 17)]})
        });
        let r = (0..relations).map(|i| {
            json!({"array": "relations", "from": format!("person-{i}"), "to": format!("person-{}", i * 7),
                   "relationType": (["knows", "manages"][i % 2])})
        });
        e.chain(r).collect()
    }

    #[test]
    fn records_of_several_arrays_get_recipes_for_the_first_and_for_every_array() {
        // The sample of a large graph holds entities only.
        let r = recipes(&graph(32, 0));
        distinct(&r);
        let only = "(select(.array == \"entities\") | ";
        // Projections and sums run on the entities only ...
        assert_eq!(r[0].filter, format!("{only}{{name, entityType}})?"));
        assert_eq!(r[0].description, "Browse records: name, entityType");
        assert_eq!(r[3].filter, format!("{only}.name)?"));
        assert_eq!(
            r[8].filter,
            "map(select(.array? == \"entities\")) | group_by(.entityType?) | map({entityType: (.[0] | .entityType?), count: length})"
        );
        // ... filters on all records, which the relations fall through.
        assert_eq!(
            (r[1].filter.as_str(), param(&r[1], "value")),
            ("select(.entityType == $value)?", "person")
        );
        // The tag is no field of the entities: never browsed, counted or searched.
        let own: Vec<&str> = r
            .iter()
            .map(|r| {
                r.filter
                    .trim_start_matches(only)
                    .trim_start_matches("map(select(.array? == \"entities\")) | ")
            })
            .collect();
        assert_eq!(
            own.iter().filter(|f| f.contains(".array")).count(),
            2,
            "{own:#?}"
        );
        assert_eq!(r[5].description, "Count records in each array");
        assert_eq!(
            r[5].filter,
            "group_by(.array?) | map({array: (.[0] | .array?), count: length})"
        );
        assert_eq!(
            (r[9].filter.as_str(), param(&r[9], "array")),
            ("select(.array == $array)?", "entities")
        );
    }

    #[test]
    fn a_sample_of_both_arrays_is_about_the_first_one() {
        let r = recipes(&graph(5, 20));
        distinct(&r);
        assert!(
            r[0].filter
                .starts_with("(select(.array == \"entities\") | {name"),
            "{:?}",
            r[0]
        );
        assert_eq!(r[5].description, "Count records in each array");
        // Untagged records with the same fields keep the recipes they had.
        let untagged: Vec<Value> = graph(32, 0)
            .into_iter()
            .map(|mut v| {
                v.as_object_mut().unwrap().remove("array");
                v
            })
            .collect();
        let plain = recipes(&untagged);
        assert_eq!(plain[0].filter, "{name, entityType}?");
        assert_eq!(
            plain[5].filter,
            "group_by(.entityType?) | map({entityType: (.[0] | .entityType?), count: length})"
        );
    }

    #[test]
    fn records_without_usable_fields_get_ten_distinct_recipes() {
        for sample in [
            vec![json!(1), json!("x")],
            vec![json!({"n": {"deep": 1}})],
            vec![json!({})],
        ] {
            distinct(&recipes(&sample));
        }
    }
}
