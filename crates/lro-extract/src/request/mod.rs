//! The `lro_extract` request: what a model sends, and its validation.
//!
//! The JSON schema of [`ExtractRequest`] (via `schemars`) is the tool's input
//! schema, so every doc comment here is written for the model that reads it.
//!
//! ```
//! use lro_extract::ExtractRequest;
//!
//! let req: ExtractRequest = serde_json::from_value(serde_json::json!({
//!     "file_path": "/tmp/atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl",
//!     "where": [{"field": "namespace", "op": "prefix", "value": "_semantic"}],
//!     "count": true
//! })).unwrap();
//! assert_eq!(req.mode().unwrap(), lro_core::metric::label::ExtractMode::Structured);
//! let schema = schemars::schema_for!(ExtractRequest);
//! assert!(schema.as_value()["properties"]["recipe"].is_object());
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use lro_core::metric::label::ExtractMode;

use crate::ExtractError;

mod text;

use text::grep_or_pattern;
pub use text::{
    DEFAULT_LINE_LIMIT, DEFAULT_MAX_CHARS, DEFAULT_MAX_MATCHES, Grep, LineWindow, MAX_CONTEXT,
};

/// One `lro_extract` call. Give `file_path` and exactly one of: `recipe`;
/// `query`; the structured form (`where`, `match`, `fields`, `sort_by`,
/// `offset`, `limit`, `count`, `group_by`, in any combination); `lines`; or
/// `grep`. `offset`/`limit` also page the output of `recipe` and `query`.
/// Results come back one compact JSON value per line; output over the
/// limit is cut between results (an array between elements) and the notice
/// gives the exact request for the next part.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ExtractRequest {
    /// Path of the offloaded JSONL file, exactly as given in the offload
    /// descriptor's `file_path` (a bare file name is resolved against the
    /// offload directory). Only offload files in the offload directory can be
    /// read.
    pub file_path: String,

    /// Run one of the descriptor's ten recipes (1-10), e.g. `1` = titles with
    /// namespaces, `6` = count by namespace. Exclusive with every other mode.
    /// Use `params` to change a recipe's parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<u8>,

    /// A jq filter applied to each record on its own, like `jq -c FILTER`
    /// (e.g. `select(.priority >= 4) | {id, title}`). With `slurp: true` it is
    /// applied once to the array of all records, like `jq -s` (e.g.
    /// `map(.namespace) | unique`). `params` become `$name` variables.
    /// Exclusive with every other mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,

    /// Only with `query`: run it once over the array of all records
    /// (`jq -s`) instead of once per record. Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurp: Option<bool>,

    /// Parameters for `recipe` or `query`, passed as jq string variables
    /// (`$name` in the filter), e.g. `{"namespace": "_semantic"}` for recipe
    /// 2, `{"keyword": "cache"}` for recipe 3. Numbers and booleans are
    /// turned into strings. A recipe accepts only its own parameter names;
    /// omitted ones keep the descriptor's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<BTreeMap<String, Value>>,

    /// Structured form: keep records matching these conditions, e.g.
    /// `[{"field": "id", "op": "in", "value": ["m1", "m2"]}]` or
    /// `[{"field": "provenance.confidence", "op": "gte", "value": 0.8}]`.
    /// Combine with `match` (all by default).
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub r#where: Option<Vec<Condition>>,

    /// Structured form: whether a record must match `all` conditions in
    /// `where` (default) or `any` of them.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub r#match: Option<Match>,

    /// Structured form: return only these fields of each record (dotted
    /// paths like `provenance.confidence` keep their nesting; missing fields
    /// are left out), e.g. `["id", "title"]`. Default: whole records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,

    /// Structured form: sort matching records by this dotted path,
    /// ascending; prefix with `-` for descending, e.g. `-priority` or
    /// `created`. Missing values sort first (ascending). Default: file order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<String>,

    /// Skip this many results. Structured form: matching records (after
    /// sorting). With `recipe` or `query`: results of the filter, or, when
    /// it runs over all records (`slurp`, recipes 6, 8 and 9), elements of
    /// the one array it returns. Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,

    /// Return at most this many records, groups (`group_by`), results or
    /// elements, after `offset` (see `offset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,

    /// Structured form: return only `{"count": N}`, the number of records
    /// matching `where` (all records without `where`). Exclusive with
    /// `fields`, `sort_by`, `offset`, `limit` and `group_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<bool>,

    /// Structured form: count matching records per value of this dotted
    /// path; returns `{"key": ..., "count": N}` lines, largest count first
    /// (ties by key). When the field is an array (e.g. `tags`), each element
    /// counts once. Exclusive with `fields`, `sort_by` and `count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_by: Option<String>,

    /// Text mode: a window of records shown as text lines, `N:text` (N = 1
    /// for the first record after the header). Plain-text offloads show the
    /// original text; JSON records show their JSON line. Exclusive with every
    /// other mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineWindow>,

    /// Text mode: search records as text lines with a regular expression,
    /// like `grep -n`: matches as `N:text`, context lines as `N-text`, `--`
    /// between separate groups. A plain string is the pattern with the
    /// defaults. Exclusive with every other mode.
    #[serde(
        default,
        deserialize_with = "grep_or_pattern",
        skip_serializing_if = "Option::is_none"
    )]
    pub grep: Option<Grep>,
}

/// How `where` conditions combine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Match {
    /// Every condition must hold (default).
    #[default]
    All,
    /// At least one condition must hold.
    Any,
}

/// One condition on a record field.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Condition {
    /// Dotted path of the field, e.g. `namespace`, `provenance.confidence`,
    /// `entities.0` (array index). A missing field is `null`.
    pub field: String,
    /// The comparison.
    pub op: Op,
    /// The operand: a string, number, boolean or null (`eq`, `ne`, `gt`,
    /// `gte`, `lt`, `lte`), a string (`prefix`, `contains`, `regex`), an
    /// array (`in`), or for `exists` optionally `false` to require absence.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub value: Option<Value>,
}

impl Condition {
    /// `field op value`; `value` is `None` only for `exists`.
    pub fn new(field: impl Into<String>, op: Op, value: Option<Value>) -> Self {
        Self {
            field: field.into(),
            op,
            value,
        }
    }
}

/// Keeps an explicit `null` as `Some(Value::Null)` (serde's default maps it
/// to `None`), so `{"op": "eq", "value": null}` means "is null".
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Equal (numbers compare by value: 1 equals 1.0).
    Eq,
    /// Not equal.
    Ne,
    /// String starts with `value` (case-sensitive).
    Prefix,
    /// Strings: case-insensitive substring. Arrays: has an element equal to
    /// `value` (e.g. `{"field": "tags", "op": "contains", "value": "perf"}`).
    Contains,
    /// String matches the regular expression `value` (Rust regex syntax;
    /// `(?i)` for case-insensitive).
    Regex,
    /// Greater than: numbers by value, strings lexicographically (ISO dates
    /// compare correctly).
    Gt,
    /// Greater than or equal.
    Gte,
    /// Less than.
    Lt,
    /// Less than or equal.
    Lte,
    /// Equal to one of the elements of the array `value`.
    In,
    /// The field is present and not null (`value: false`: absent or null).
    Exists,
}

impl Op {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Ne => "ne",
            Op::Prefix => "prefix",
            Op::Contains => "contains",
            Op::Regex => "regex",
            Op::Gt => "gt",
            Op::Gte => "gte",
            Op::Lt => "lt",
            Op::Lte => "lte",
            Op::In => "in",
            Op::Exists => "exists",
        }
    }
}

const EXCLUSIVE: &str = "give exactly one of recipe, query, where/fields/sort_by/count/group_by, lines, grep (offset/limit page any of the first three)";

impl ExtractRequest {
    /// A request for `file_path` with no mode chosen yet.
    pub fn new(file_path: impl Into<String>) -> Self {
        Self {
            file_path: file_path.into(),
            ..Self::default()
        }
    }

    /// Runs recipe `number` (1-10) of the descriptor. Defaults to none.
    #[must_use]
    pub fn recipe(mut self, number: u8) -> Self {
        self.recipe = Some(number);
        self
    }

    /// Runs the jq filter `code` on each record. Defaults to none.
    #[must_use]
    pub fn query(mut self, code: impl Into<String>) -> Self {
        self.query = Some(code.into());
        self
    }

    /// Runs the query once over the array of all records (`jq -s`).
    /// Defaults to unset (false); setting it, even to false, is allowed only
    /// with a query.
    #[must_use]
    pub fn slurp(mut self, on: bool) -> Self {
        self.slurp = Some(on);
        self
    }

    /// Adds the parameter `$name` of the recipe or query. Defaults to no
    /// parameters.
    #[must_use]
    pub fn param(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.params
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value.into());
        self
    }

    /// Structured form: keeps records matching `conditions`. Defaults to
    /// none (every record).
    #[must_use]
    pub fn r#where(mut self, conditions: Vec<Condition>) -> Self {
        self.r#where = Some(conditions);
        self
    }

    /// Structured form: how the `where` conditions combine. Defaults to
    /// [`Match::All`].
    #[must_use]
    pub fn r#match(mut self, how: Match) -> Self {
        self.r#match = Some(how);
        self
    }

    /// Structured form: returns only these dotted fields of each record.
    /// Defaults to whole records.
    #[must_use]
    pub fn fields(mut self, fields: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.fields = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    /// Structured form: sorts by this dotted path (`-` first for
    /// descending). Defaults to file order.
    #[must_use]
    pub fn sort_by(mut self, path: impl Into<String>) -> Self {
        self.sort_by = Some(path.into());
        self
    }

    /// Skips this many results: matching records, results of a filter, or
    /// elements of the one result of a slurped filter. Defaults to 0.
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = Some(offset);
        self
    }

    /// Returns at most this many results (counted as `offset` counts them).
    /// Defaults to no limit but the configured ones.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Structured form: returns only the number of matching records.
    /// Defaults to unset (false).
    #[must_use]
    pub fn count(mut self, on: bool) -> Self {
        self.count = Some(on);
        self
    }

    /// Structured form: counts matching records per value of this dotted
    /// path. Defaults to none.
    #[must_use]
    pub fn group_by(mut self, path: impl Into<String>) -> Self {
        self.group_by = Some(path.into());
        self
    }

    /// Text mode: shows this window of record lines. Defaults to none.
    #[must_use]
    pub fn lines(mut self, window: LineWindow) -> Self {
        self.lines = Some(window);
        self
    }

    /// Text mode: searches record lines. Defaults to none.
    #[must_use]
    pub fn grep(mut self, grep: Grep) -> Self {
        self.grep = Some(grep);
        self
    }

    /// Whether structured-only options are set (`offset`/`limit` also page
    /// recipes and queries, so alone they mean structured only when neither
    /// is given).
    fn structured_set(&self) -> bool {
        let paging = self.offset.is_some() || self.limit.is_some();
        self.r#where.is_some()
            || self.r#match.is_some()
            || self.fields.is_some()
            || self.sort_by.is_some()
            || self.count.is_some()
            || self.group_by.is_some()
            || (paging && self.recipe.is_none() && self.query.is_none())
    }

    /// The mode this request selects — recipe, query, structured, lines or
    /// grep — after checking that exactly one is given and that the
    /// mode-specific options fit it. Never [`ExtractMode::Invalid`]: an
    /// invalid request is an error.
    pub fn mode(&self) -> Result<ExtractMode, ExtractError> {
        let invalid = |m: String| Err(ExtractError::InvalidRequest(m));
        let modes: Vec<ExtractMode> = [
            (self.recipe.is_some(), ExtractMode::Recipe),
            (self.query.is_some(), ExtractMode::Query),
            (self.structured_set(), ExtractMode::Structured),
            (self.lines.is_some(), ExtractMode::Lines),
            (self.grep.is_some(), ExtractMode::Grep),
        ]
        .into_iter()
        .filter_map(|(set, mode)| set.then_some(mode))
        .collect();
        let mode = match modes.as_slice() {
            [one] => *one,
            [] => return invalid(format!("{EXCLUSIVE}; none was given")),
            many => {
                let names: Vec<&str> = many.iter().map(|m| m.as_str()).collect();
                return invalid(format!("{EXCLUSIVE}; got {}", names.join(" and ")));
            }
        };
        if self.slurp.is_some() && mode != ExtractMode::Query {
            return invalid("slurp only applies to query".into());
        }
        if (self.offset.is_some() || self.limit.is_some())
            && matches!(mode, ExtractMode::Lines | ExtractMode::Grep)
        {
            return invalid(format!(
                "offset/limit do not apply to {mode}; use the window of lines, or max_matches"
            ));
        }
        if self.params.is_some() && !matches!(mode, ExtractMode::Recipe | ExtractMode::Query) {
            return invalid("params only apply to recipe or query".into());
        }
        Ok(mode)
    }

    /// The parameters as jq string variables; numbers and booleans are
    /// stringified, other values rejected.
    pub fn string_params(&self) -> Result<BTreeMap<String, String>, ExtractError> {
        let mut out = BTreeMap::new();
        for (name, value) in self.params.iter().flatten() {
            if !is_ident(name) {
                return Err(ExtractError::InvalidRequest(format!(
                    "param name {name:?} is not a valid jq variable name (letters, digits, _)"
                )));
            }
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => {
                    return Err(ExtractError::InvalidRequest(format!(
                        "param {name:?} must be a string, number or boolean, got {other}"
                    )));
                }
            };
            out.insert(name.clone(), text);
        }
        Ok(out)
    }
}

pub(crate) fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(v: Value) -> Result<ExtractRequest, serde_json::Error> {
        serde_json::from_value(v)
    }

    #[test]
    fn exactly_one_mode() {
        let r = req(json!({"file_path": "f"})).unwrap();
        let e = r.mode().unwrap_err().to_string();
        assert!(e.contains("give exactly one of"), "{e}");
        let r = req(json!({"file_path": "f", "recipe": 1, "query": "."})).unwrap();
        let e = r.mode().unwrap_err().to_string();
        assert!(e.contains("recipe and query"), "{e}");
        let r = req(json!({"file_path": "f", "limit": 3, "count": true})).unwrap();
        assert_eq!(r.mode().unwrap(), ExtractMode::Structured);
        let r = req(json!({"file_path": "f", "lines": {}})).unwrap();
        assert_eq!(r.mode().unwrap(), ExtractMode::Lines);
        let r = req(json!({"file_path": "f", "recipe": 1, "slurp": true})).unwrap();
        assert!(r.mode().is_err());
        let r = req(json!({"file_path": "f", "grep": {"pattern": "x"}, "params": {}})).unwrap();
        assert!(r.mode().is_err());
    }

    #[test]
    fn grep_takes_a_plain_pattern_or_the_object() {
        let plain = req(json!({"file_path": "f", "grep": "time(out)?"})).unwrap();
        assert_eq!(plain.grep, Some(Grep::new("time(out)?")));
        let full = req(json!({"file_path": "f", "grep": {"pattern": "a", "context": 2}})).unwrap();
        assert_eq!(full.grep, Some(Grep::new("a").context(2)));
        let e = req(json!({"file_path": "f", "grep": {"patern": "a"}})).unwrap_err();
        assert!(
            e.to_string().contains("grep: unknown field `patern`"),
            "{e}"
        );
        assert!(req(json!({"file_path": "f", "grep": 3})).is_err());
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(req(json!({"file_path": "f", "recipes": 1})).is_err());
        assert!(
            req(json!({"file_path": "f", "where": [{"field": "a", "op": "eq", "x": 1}]})).is_err()
        );
        assert!(req(json!({"file_path": "f", "where": [{"field": "a", "op": "like"}]})).is_err());
    }

    #[test]
    fn params_are_stringified() {
        let r =
            req(json!({"file_path": "f", "recipe": 2, "params": {"a": "x", "b": 3, "c": true}}))
                .unwrap();
        let p = r.string_params().unwrap();
        assert_eq!(p["a"], "x");
        assert_eq!(p["b"], "3");
        assert_eq!(p["c"], "true");
        let r = req(json!({"file_path": "f", "recipe": 2, "params": {"a": [1]}})).unwrap();
        assert!(r.string_params().is_err());
        let r = req(json!({"file_path": "f", "recipe": 2, "params": {"a b": "x"}})).unwrap();
        assert!(r.string_params().is_err());
    }

    #[test]
    fn schema_documents_every_property() {
        let schema = schemars::schema_for!(ExtractRequest);
        let props = schema.as_value()["properties"].as_object().unwrap().clone();
        for key in [
            "file_path",
            "recipe",
            "query",
            "slurp",
            "params",
            "where",
            "match",
            "fields",
            "sort_by",
            "offset",
            "limit",
            "count",
            "group_by",
            "lines",
            "grep",
        ] {
            let p = &props[key];
            assert!(
                p["description"].as_str().is_some_and(|d| d.len() > 20),
                "{key} has no description: {p}"
            );
        }
        assert_eq!(schema.as_value()["additionalProperties"], json!(false));
        let cond = &schema.as_value()["$defs"]["Condition"];
        assert_eq!(cond["required"], json!(["field", "op"]), "{cond}");
        let ops = schema.as_value()["$defs"]["Op"].to_string();
        for op in ["eq", "prefix", "contains", "regex", "gte", "in", "exists"] {
            assert!(ops.contains(&format!("\"{op}\"")), "{ops}");
        }
    }

    #[test]
    fn setters_build_the_wire_form() {
        let built = ExtractRequest::new("f")
            .r#where(vec![Condition::new("a", Op::In, Some(json!([1])))])
            .r#match(Match::Any)
            .fields(["id", "title"])
            .sort_by("-n")
            .offset(2)
            .limit(3);
        let wire = req(
            json!({"file_path": "f", "where": [{"field": "a", "op": "in", "value": [1]}],
            "match": "any", "fields": ["id", "title"], "sort_by": "-n", "offset": 2, "limit": 3}),
        )
        .unwrap();
        assert_eq!(built, wire);
        let built = ExtractRequest::new("f")
            .query("$k")
            .slurp(true)
            .param("k", "v")
            .param("n", 1);
        let wire = req(json!({"file_path": "f", "query": "$k", "slurp": true,
            "params": {"k": "v", "n": 1}}))
        .unwrap();
        assert_eq!(built, wire);
        let built = ExtractRequest::new("f")
            .grep(Grep::new("x").context(1).ignore_case(true).max_matches(4));
        let wire = req(
            json!({"file_path": "f", "grep": {"pattern": "x", "context": 1,
            "ignore_case": true, "max_matches": 4}}),
        )
        .unwrap();
        assert_eq!(built, wire);
        let built = ExtractRequest::new("f").lines(LineWindow::new(1, 2).max_chars(3));
        assert_eq!(
            built.lines,
            Some(LineWindow::default().offset(1).limit(2).max_chars(3))
        );
    }

    #[test]
    fn round_trips_keyword_fields() {
        let r = req(json!({"file_path": "f", "where": [{"field": "a", "op": "in", "value": [1]}], "match": "any"}))
            .unwrap();
        assert_eq!(r.r#match, Some(Match::Any));
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["where"][0]["op"], "in");
        assert_eq!(back["match"], "any");
    }
}
