//! The protocol's data types, serialized exactly like the spec's structs, and
//! the guidance templates.
//!
//! The spec's structs (`OffloadHeader`, `OffloadResponse`, `OffloadSummary`,
//! `JqRecipe`, and the minimal profile's `MinimalOffloadResponse`) have the
//! spec's fields; they change only with the spec, so they are not
//! `#[non_exhaustive]` and can be built and matched field by field. One
//! field is this project's: `OffloadSummary::records`, what records that
//! are not memories are, left out for memories.
//!
//! ```
//! use lro_core::descriptor::{Detail, OffloadHeader};
//!
//! let header = OffloadHeader::new("recall", Some("caching".into()), 200, 44_000, Detail::Full);
//! let line = serde_json::to_value(&header).unwrap();
//! assert_eq!(line["type"], "lro_header");
//! assert_eq!(line["count"], 200);
//! assert_eq!(line["detail"], "full");
//! ```

use std::{fmt, path::PathBuf, str::FromStr, time::Duration};

use serde::{Deserialize, Serialize};
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

use crate::{example::WorkedExample, fields::ARRAY_FIELD, quote::cut};

/// The guidance names this many arrays of records of several arrays, then
/// says how many more there are.
const MAX_ARRAYS_NAMED: usize = 5;

/// Value of [`OffloadHeader::header_type`].
pub const HEADER_TYPE: &str = "lro_header";
/// MIF schema version written into headers.
pub const SCHEMA_VERSION: &str = "1.0";

/// The detail level records were serialized at.
///
/// Read case-insensitively (`"Full"` is `full`), so a header written by
/// another implementation still parses; always written in lower case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum Detail {
    /// Identity and classification fields only; no content.
    Light,
    /// Adds content and a flattened `.confidence`.
    Medium,
    /// Every field, with confidence under `.provenance.confidence`.
    Full,
}

impl Detail {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Detail::Light => "light",
            Detail::Medium => "medium",
            Detail::Full => "full",
        }
    }

    /// All levels, lightest first.
    pub const ALL: [Detail; 3] = [Detail::Light, Detail::Medium, Detail::Full];
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown detail level name.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown detail level {0:?}: expected light, medium or full")]
pub struct UnknownDetail(pub String);

impl TryFrom<String> for Detail {
    type Error = UnknownDetail;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl FromStr for Detail {
    type Err = UnknownDetail;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "light" => Ok(Detail::Light),
            "medium" => Ok(Detail::Medium),
            "full" => Ok(Detail::Full),
            _ => Err(UnknownDetail(s.to_owned())),
        }
    }
}

/// Metadata header written as the first line of an offloaded JSONL file.
///
/// The spec's struct, field for field, and `bytes`, which lets a reader
/// tell a damaged file (see [`crate::integrity`]); it changes only with the
/// spec, so it is not `#[non_exhaustive]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffloadHeader {
    /// Marker identifying this as an LRO header. Always `"lro_header"`.
    #[serde(rename = "type")]
    pub header_type: String,
    /// The operation that produced these results.
    pub operation: String,
    /// The query string (if applicable).
    pub query: Option<String>,
    /// Total number of record lines following the header.
    pub count: usize,
    /// Schema version of the record objects.
    pub schema_version: String,
    /// ISO 8601 timestamp of when the file was written.
    pub timestamp: String,
    /// Estimated total tokens of the result set.
    pub estimated_tokens: usize,
    /// Detail level used for serialization.
    pub detail: Detail,
    /// Bytes of the record lines after the header, each with its newline:
    /// set by the writer, absent in files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl OffloadHeader {
    /// A header stamped with the current time.
    pub fn new(
        operation: &str,
        query: Option<String>,
        count: usize,
        estimated_tokens: usize,
        detail: Detail,
    ) -> Self {
        Self {
            header_type: HEADER_TYPE.to_owned(),
            operation: operation.to_owned(),
            query,
            count,
            schema_version: SCHEMA_VERSION.to_owned(),
            timestamp: iso8601(OffsetDateTime::now_utc()),
            estimated_tokens,
            detail,
            bytes: None,
        }
    }
}

/// Formats a UTC time as RFC 3339 (an ISO 8601 profile).
pub fn iso8601(at: OffsetDateTime) -> String {
    at.format(&Rfc3339)
        .expect("RFC 3339 formatting of a UTC time cannot fail")
}

/// Compact response returned when results are offloaded to JSONL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffloadResponse {
    /// Indicates this is an offloaded result.
    pub offloaded: bool,
    /// Summary of the result set.
    pub summary: OffloadSummary,
    /// Absolute path to the JSONL file; empty, and left out, when the
    /// result is in an object store and `handle` names it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file_path: String,
    /// The result's handle in a shared object store, for `lro_extract`
    /// (see [`crate::handle`]). Not in the spec, whose results are local
    /// files; left out for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// JSON Schema describing each record line in the JSONL file; `null`,
    /// and left out, in the compact guidance style.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub line_schema: serde_json::Value,
    /// Ready-to-use jq recipes for common extraction patterns.
    pub jq_recipes: Vec<JqRecipe>,
    /// Usage guidance for the AI assistant.
    pub guidance: String,
}

/// Whether a full descriptor is in the compact guidance profile (outside the
/// spec): no line schema, and recipes that are jq arguments rather than
/// `tail -n +2 FILE | jq …` commands.
pub fn is_compact(descriptor: &serde_json::Map<String, serde_json::Value>) -> bool {
    let commands = descriptor
        .get("jq_recipes")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("command").and_then(serde_json::Value::as_str));
    !descriptor.contains_key("line_schema")
        && descriptor.contains_key("jq_recipes")
        && commands.clone().next().is_some()
        && commands.clone().all(|c| !c.starts_with("tail "))
}

/// Summary of an offloaded result set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffloadSummary {
    /// Total number of records in the file.
    pub count: usize,
    /// What the records are ("commits", "lines of text", "tree entries"),
    /// when they are not memories. Not in the spec, whose summary speaks of
    /// memories only; left out for memories, so their summary is the
    /// spec's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<String>,
    /// Estimated total tokens saved by offloading.
    pub estimated_tokens: usize,
    /// The operation that was performed.
    pub operation: String,
    /// Top namespaces represented (up to 5).
    pub top_namespaces: Vec<String>,
    /// Score range (min, max) if applicable.
    pub score_range: Option<(f64, f64)>,
    /// Detail level used for serialization.
    pub detail: Detail,
}

/// One ready-to-run extraction command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JqRecipe {
    /// Human-readable description of what this recipe does.
    pub description: String,
    /// The jq command to execute.
    pub command: String,
}

/// The paper's bare pointer: what the `minimal` profile returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MinimalOffloadResponse {
    /// Always true.
    pub offloaded: bool,
    /// Absolute path to the JSONL file; empty, and left out, for a result
    /// in an object store.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file_path: String,
    /// The result's handle in an object store; left out for a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Number of records after the header line.
    pub count: usize,
    /// Detail level used for serialization.
    pub detail: Detail,
}

/// Represents an offloaded result file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OffloadedResult {
    /// Absolute path to the JSONL file, or the object's key in a store.
    pub path: PathBuf,
    /// The handle of a result in an object store.
    pub handle: Option<String>,
    /// Header metadata.
    pub header: OffloadHeader,
    /// Time-to-live for this file. After expiry, custodial cleanup may delete it.
    pub ttl: Duration,
    /// When this file was created.
    pub created_at: OffsetDateTime,
}

/// How much the guidance says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuidanceStyle {
    /// The spec's templates (shell, or native when `lro_extract` is on).
    #[default]
    Spec,
    /// This project's own profile, outside the spec, for deployments that
    /// want the least: the path once (in `file_path`), no line schema, each
    /// recipe as its jq arguments only, and one line saying how to run them.
    Compact,
}

/// Where a result is, and so how `lro_extract` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Location {
    /// A local file, named by `file_path`.
    #[default]
    FilePath,
    /// An object in a shared store, named by `handle`.
    Handle,
}

impl Location {
    /// The descriptor field, and the `lro_extract` argument, that names it.
    pub fn field(self) -> &'static str {
        match self {
            Location::FilePath => "file_path",
            Location::Handle => "handle",
        }
    }
}

/// Inputs of the guidance text.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct GuidanceInput<'a> {
    /// Records in the file.
    pub count: usize,
    /// Estimated tokens saved.
    pub tokens: usize,
    /// File path, or the handle.
    pub path: &'a str,
    /// Which of the two `path` is, and so the `lro_extract` argument that
    /// takes it.
    pub location: Location,
    /// Detail level.
    pub detail: Detail,
    /// Whether the records are MIF memories (the spec's templates).
    pub memories: bool,
    /// What the records are, when they are not memories ("commits").
    pub what: &'a str,
    /// A line the result had before its records, which is not in the file.
    pub heading: Option<&'a str>,
    /// For records of several arrays, each array's name and count: the
    /// guidance names the field that tells them apart.
    pub arrays: &'a [(String, usize)],
    /// The recipes, which the guidance for other records than memories
    /// names by their descriptions.
    pub recipes: &'a [JqRecipe],
    /// How much to say.
    pub style: GuidanceStyle,
    /// The native guidance's worked example, built from the records.
    pub example: Option<&'a WorkedExample>,
    /// Whether to leave out what the recipes and `file_path` already say,
    /// for a descriptor over its ceiling (`fit.rs`).
    pub brief: bool,
    /// Whether the recipes are jq arguments without the file, so the
    /// guidance says once how to run them.
    pub path_free: bool,
}

impl<'a> GuidanceInput<'a> {
    /// Guidance for `count` records at `path`; `memories` picks the nouns.
    pub fn new(count: usize, tokens: usize, path: &'a str, detail: Detail, memories: bool) -> Self {
        Self {
            count,
            tokens,
            path,
            location: Location::FilePath,
            detail,
            memories,
            what: "records",
            heading: None,
            arrays: &[],
            recipes: &[],
            style: GuidanceStyle::Spec,
            example: None,
            brief: false,
            path_free: false,
        }
    }

    /// Sets what the records are and the result's heading, for records
    /// that are not memories. Defaults to "records" and none.
    #[must_use]
    pub fn records(mut self, what: &'a str, heading: Option<&'a str>) -> Self {
        self.what = what;
        self.heading = heading;
        self
    }

    /// Sets the arrays records of several arrays came from, each with its
    /// count. Defaults to none.
    #[must_use]
    pub fn arrays(mut self, arrays: &'a [(String, usize)]) -> Self {
        self.arrays = arrays;
        self
    }

    /// Sets the recipes the guidance names. Defaults to none.
    #[must_use]
    pub fn recipes(mut self, recipes: &'a [JqRecipe]) -> Self {
        self.recipes = recipes;
        self
    }

    /// Sets the native guidance's worked example. Defaults to none (a jq
    /// query example instead).
    #[must_use]
    pub fn example(mut self, example: Option<&'a WorkedExample>) -> Self {
        self.example = example;
        self
    }

    /// Sets how much the guidance says. Defaults to [`GuidanceStyle::Spec`].
    #[must_use]
    pub fn style(mut self, style: GuidanceStyle) -> Self {
        self.style = style;
        self
    }

    /// Sets whether to leave out the lines the recipes and `file_path`
    /// already say (the spec template's path line, its list of patterns,
    /// the worked example). Defaults to `false`.
    #[must_use]
    pub fn brief(mut self, brief: bool) -> Self {
        self.brief = brief;
        self
    }

    /// Sets whether the recipes are jq arguments without the file, in the
    /// spec style: the shell guidance then says how to run them. Defaults
    /// to `false`.
    #[must_use]
    pub fn path_free(mut self, path_free: bool) -> Self {
        self.path_free = path_free;
        self
    }

    /// Sets what `path` is. Defaults to [`Location::FilePath`].
    #[must_use]
    pub fn location(mut self, location: Location) -> Self {
        self.location = location;
        self
    }

    fn noun(&self) -> &'a str {
        if self.memories { "memories" } else { self.what }
    }

    /// Recipe `n`'s description, for records other than memories.
    fn recipe(&self, n: usize) -> &'a str {
        self.recipes
            .get(n - 1)
            .map_or("see jq_recipes", |r| r.description.as_str())
    }

    /// Where the records are in the file and that they are whole, for
    /// records other than memories: it stands for the spec's "Detail level"
    /// line, which speaks of memory fields.
    fn layout(&self) -> String {
        let heading = self
            .heading
            .map(|h| format!(" The result's heading {:?} is not in the file.", cut(h)))
            .unwrap_or_default();
        let arrays = if self.arrays.is_empty() {
            String::new()
        } else {
            let mut each: Vec<String> = self
                .arrays
                .iter()
                .take(MAX_ARRAYS_NAMED)
                .map(|(name, n)| format!("{} ({n})", cut(name)))
                .collect();
            if self.arrays.len() > MAX_ARRAYS_NAMED {
                each.push(format!("{} more", self.arrays.len() - MAX_ARRAYS_NAMED));
            }
            let says = if self.brief {
                ":"
            } else {
                " names each one's array:"
            };
            format!(" Field {ARRAY_FIELD:?}{says} {}.", each.join(", "))
        };
        // Brief: the first line has said the count and what they are.
        if self.brief {
            return format!(
                "Line 1 is a header (detail: {detail}).{heading}{arrays}",
                detail = self.detail
            );
        }
        format!(
            "The header line (line 1) contains metadata; the {count} {what} follow, one a \
             line, each whole (detail: {detail}).{heading}{arrays}",
            count = self.count,
            what = self.what,
            detail = self.detail,
        )
    }

    /// The compact style's first sentence: what, at which detail, where;
    /// brief, what and where only (the summary says the rest).
    fn compact_head(&self) -> String {
        if self.brief {
            return format!(
                "{count} {noun} are in {field}, after a header line.",
                field = self.location.field(),
                count = self.count,
                noun = self.noun(),
            );
        }
        format!(
            "{count} {noun} (detail: {detail}, ~{tokens} tokens) are in {field}, after a \
             header line.",
            field = self.location.field(),
            count = self.count,
            noun = self.noun(),
            detail = self.detail,
            tokens = self.tokens,
        )
    }
}

/// The spec's shell guidance template, or its compact form.
pub fn shell_guidance(g: GuidanceInput<'_>) -> String {
    if g.style == GuidanceStyle::Compact {
        return format!(
            "{} Run a recipe as: tail -n +2 FILE | jq COMMAND (FILE: file_path).",
            g.compact_head()
        );
    }
    // Path-free recipes say once how they run.
    let run = if g.path_free {
        "Run a recipe as: tail -n +2 FILE | jq COMMAND (FILE: file_path).\n"
    } else {
        ""
    };
    // Brief: the spec template's count, path and detail level, and what
    // the file holds; no list of patterns.
    if g.brief {
        let about = if g.memories {
            format!(
                "Detail level: {}\nLine 1 is a header; the memories follow, one a line.",
                g.detail
            )
        } else {
            g.layout()
        };
        return format!(
            "{count} {noun} offloaded to JSONL.\n\
             File: {path}\n{run}{about}",
            count = g.count,
            noun = g.noun(),
            path = g.path,
        );
    }
    if !g.memories {
        return format!(
            "Results offloaded to JSONL ({count} {what}, ~{tokens} tokens saved).\n\
             File: {path}\n\
             Use the jq recipes above to extract specific data. Common patterns:\n\
             - Browse: recipe #1 ({browse})\n\
             - Filter: recipe #2 ({filter}) or #3 ({search})\n\
             - Analyze: recipe #6 ({analyze})\n\
             Read the file directly only if you need the complete dataset.\n\
             {layout}",
            count = g.count,
            what = g.what,
            tokens = g.tokens,
            path = g.path,
            browse = g.recipe(1),
            filter = g.recipe(2),
            search = g.recipe(3),
            analyze = g.recipe(6),
            layout = g.layout(),
        );
    }
    format!(
        "Results offloaded to JSONL ({count} memories, ~{tokens} tokens saved).\n\
         File: {path}\n\
         Detail level: {detail}\n\
         Use the jq recipes above to extract specific data. Common patterns:\n\
         - Browse: recipe #1 (titles with namespaces)\n\
         - Filter: recipe #2 (by namespace) or #3 (by keyword)\n\
         - Analyze: recipe #6 (count by namespace)\n\
         Read the file directly only if you need the complete dataset.\n\
         The header line (line 1) contains metadata; memory objects start at line 2.",
        count = g.count,
        tokens = g.tokens,
        path = g.path,
        detail = g.detail,
    )
}

/// The spec's native-extraction guidance template, or its compact form.
///
/// The template names the path once, in the first example, where the spec
/// repeats it in every example; and it points at `jq_recipes` instead of
/// listing the recipes again (the spec's list says only "detail-adaptive"
/// for 9 and 10). The structured filter (`where`) is documented by the
/// `lro_extract` tool itself, so the guidance does not repeat it.
pub fn native_guidance(g: GuidanceInput<'_>) -> String {
    if g.style == GuidanceStyle::Compact && g.brief {
        return format!(
            "{} Query it with lro_extract: {} and recipe=N (a jq_recipes entry).",
            g.compact_head(),
            g.location.field(),
        );
    }
    if g.style == GuidanceStyle::Compact {
        return format!(
            "{} Query it with lro_extract: {} and recipe=N (a jq_recipes entry; params \
             sets its --arg values), query=\"FILTER\", or where with count for several \
             conditions.",
            g.compact_head(),
            g.location.field(),
        );
    }
    let about = if g.memories {
        format!("Detail level: {}", g.detail)
    } else {
        g.layout()
    };
    // Brief: the template's count, detail level and path, with no examples.
    if g.brief {
        return format!(
            "{count} {noun} offloaded to JSONL.\n\
             {about}\n\
             lro_extract({field}=\"{path}\", recipe=N) runs recipe N.",
            field = g.location.field(),
            count = g.count,
            noun = g.noun(),
            path = g.path,
        );
    }
    // The worked example stands for the filter, keyword and custom-filter
    // lines: one call with several conditions is what models miss.
    let examples = match g.example {
        Some(example) => format!("- Count with conditions: {}\n", example.call()),
        None if g.memories => {
            "- Filter by namespace: recipe=2, params={\"namespace\": \"_semantic\"}\n\
             - Search by keyword: recipe=3, params={\"keyword\": \"your term\"}\n"
                .to_owned()
        }
        None => format!(
            "- Filter: recipe=2 ({}); search: recipe=3 ({})\n",
            g.recipe(2),
            g.recipe(3)
        ),
    };
    format!(
        "Results offloaded to JSONL ({count} {noun}, ~{tokens} tokens saved).\n\
         {about}\n\
         Query it with the `lro_extract` tool:\n\
         - Browse: lro_extract({field}=\"{path}\", recipe=1)\n\
         {examples}\
         Recipes 1-10 are the jq_recipes above.",
        field = g.location.field(),
        count = g.count,
        noun = g.noun(),
        tokens = g.tokens,
        path = g.path,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_serializes_with_spec_field_names() {
        let resp = OffloadResponse {
            offloaded: true,
            summary: OffloadSummary {
                count: 3,
                estimated_tokens: 10,
                operation: "recall".into(),
                records: None,
                top_namespaces: vec!["_semantic/knowledge".into()],
                score_range: Some((0.5, 0.9)),
                detail: Detail::Light,
            },
            file_path: "/tmp/x".into(),
            handle: None,
            line_schema: serde_json::json!({"type": "object"}),
            jq_recipes: vec![],
            guidance: "g".into(),
        };
        let v = serde_json::to_value(&resp).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "file_path",
                "guidance",
                "jq_recipes",
                "line_schema",
                "offloaded",
                "summary"
            ]
        );
        assert_eq!(v["summary"]["score_range"], serde_json::json!([0.5, 0.9]));
        let back: OffloadResponse = serde_json::from_value(v).unwrap();
        assert_eq!(back, resp);
    }

    #[test]
    fn header_has_exact_spec_keys() {
        let h = OffloadHeader::new("list", None, 1, 2, Detail::Medium);
        let v = serde_json::to_value(&h).unwrap();
        let mut keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "count",
                "detail",
                "estimated_tokens",
                "operation",
                "query",
                "schema_version",
                "timestamp",
                "type"
            ]
        );
        assert!(OffsetDateTime::parse(v["timestamp"].as_str().unwrap(), &Rfc3339).is_ok());
    }

    #[test]
    fn guidance_follows_the_template() {
        let g = GuidanceInput::new(247, 38285, "/tmp/a.jsonl", Detail::Full, true);
        let text = shell_guidance(g);
        assert!(text.starts_with("Results offloaded to JSONL (247 memories, ~38285 tokens saved).\nFile: /tmp/a.jsonl\nDetail level: full\n"));
        assert!(text.ends_with("memory objects start at line 2."));
        let native = native_guidance(g);
        assert!(native.contains("Query it with the `lro_extract` tool"));
        assert!(native.contains("Detail level: full"));
        assert!(native.contains("lro_extract(file_path=\"/tmp/a.jsonl\", recipe=1)"));
        assert_eq!(native.matches("/tmp/a.jsonl").count(), 1, "{native}");
    }

    #[test]
    fn other_records_are_named_and_so_are_their_recipes() {
        let recipes: Vec<JqRecipe> = (1..=10)
            .map(|n| JqRecipe {
                description: format!("what {n} does"),
                command: String::new(),
            })
            .collect();
        let g = GuidanceInput::new(300, 9000, "/tmp/a.jsonl", Detail::Full, false)
            .records("commits", Some("Commit history:"))
            .recipes(&recipes);
        let shell = shell_guidance(g);
        assert!(
            shell.starts_with(
                "Results offloaded to JSONL (300 commits, ~9000 tokens saved).\nFile: /tmp/a.jsonl\n"
            ),
            "{shell}"
        );
        assert!(shell.contains("- Filter: recipe #2 (what 2 does) or #3 (what 3 does)"));
        assert!(shell.contains("- Analyze: recipe #6 (what 6 does)"));
        assert!(shell.ends_with(
            "the 300 commits follow, one a line, each whole (detail: full). The result's \
             heading \"Commit history:\" is not in the file."
        ));
        let native = native_guidance(g);
        assert!(
            native.contains("- Filter: recipe=2 (what 2 does); search: recipe=3 (what 3 does)")
        );
        assert_eq!(native.matches("/tmp/a.jsonl").count(), 1, "{native}");
        for text in [&shell, &native] {
            assert!(
                !text.contains("memor") && !text.contains("Detail level"),
                "{text}"
            );
        }
        let compact = native_guidance(g.style(GuidanceStyle::Compact));
        assert!(
            compact.starts_with("300 commits (detail: full"),
            "{compact}"
        );
    }

    #[test]
    fn compact_guidance_names_count_and_detail_but_not_the_path() {
        let g = GuidanceInput::new(247, 38285, "/tmp/a.jsonl", Detail::Light, true)
            .style(GuidanceStyle::Compact);
        let spec = g.style(GuidanceStyle::Spec);
        for (text, full) in [
            (shell_guidance(g), shell_guidance(spec)),
            (native_guidance(g), native_guidance(spec)),
        ] {
            assert!(
                text.starts_with("247 memories (detail: light, ~38285 tokens) are in file_path"),
                "{text}"
            );
            assert!(!text.contains("/tmp/a.jsonl"), "{text}");
            assert!(text.len() < full.len(), "{text} against {full}");
        }
        assert!(native_guidance(g).contains("lro_extract"));
        assert!(shell_guidance(g).contains("tail -n +2 FILE | jq COMMAND"));
    }

    #[test]
    fn brief_guidance_keeps_the_count_the_detail_and_the_path() {
        for memories in [true, false] {
            let g =
                GuidanceInput::new(500, 36730, "/tmp/a.jsonl", Detail::Light, memories).brief(true);
            for text in [shell_guidance(g), native_guidance(g)] {
                for needle in ["500 ", "light", "/tmp/a.jsonl"] {
                    assert!(text.contains(needle), "{needle} in {text}");
                }
                let whole = g.brief(false);
                assert!(
                    text.len()
                        < shell_guidance(whole)
                            .len()
                            .min(native_guidance(whole).len())
                );
            }
            let run = shell_guidance(g.path_free(true));
            assert!(run.contains("tail -n +2 FILE | jq COMMAND"), "{run}");
        }
    }

    #[test]
    fn compact_descriptors_are_told_apart_by_their_shape() {
        let obj = |v: serde_json::Value| v.as_object().unwrap().clone();
        let recipe = |c: &str| serde_json::json!([{"description": "d", "command": c}]);
        let compact = obj(serde_json::json!({"jq_recipes": recipe("-c '.'")}));
        assert!(is_compact(&compact));
        let spec = obj(serde_json::json!({
            "line_schema": {}, "jq_recipes": recipe("tail -n +2 f | jq -c '.'")
        }));
        assert!(!is_compact(&spec));
        assert!(!is_compact(&obj(serde_json::json!({"file_path": "f"}))));
    }

    #[test]
    fn detail_parses_case_insensitively() {
        assert_eq!("FULL".parse::<Detail>().unwrap(), Detail::Full);
        assert_eq!(
            serde_json::from_str::<Detail>("\"Medium\"").unwrap(),
            Detail::Medium
        );
        assert_eq!(serde_json::to_string(&Detail::Light).unwrap(), "\"light\"");
        assert!("verbose".parse::<Detail>().is_err());
    }
}
