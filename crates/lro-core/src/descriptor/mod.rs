//! The protocol's data types, serialized exactly like the spec's structs;
//! the guidance templates are in [`guidance`](self::guidance) (re-exported
//! here).
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

mod guidance;

pub use guidance::{GuidanceInput, native_guidance, shell_guidance};

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
                "offloaded",
                "summary",
                "file_path",
                "line_schema",
                "jq_recipes",
                "guidance"
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
