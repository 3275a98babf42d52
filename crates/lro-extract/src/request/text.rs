//! The text modes' arguments: a window of record lines (`lines`) and a
//! search over them (`grep`), with their defaults and bounds.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use schemars::JsonSchema;

/// A window of record lines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LineWindow {
    /// Records to skip first. Default 0 (start at line 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    /// Most lines to return. Default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Longest line returned, in characters; longer lines are cut with a
    /// marker. Default 2000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

impl LineWindow {
    /// `limit` lines after skipping `offset`, with the default line length.
    pub fn new(offset: usize, limit: usize) -> Self {
        Self {
            offset: Some(offset),
            limit: Some(limit),
            max_chars: None,
        }
    }

    /// Skips this many records first. Defaults to 0.
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = Some(offset);
        self
    }

    /// Returns at most this many lines. Defaults to [`DEFAULT_LINE_LIMIT`].
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Cuts lines longer than this many characters. Defaults to
    /// [`DEFAULT_MAX_CHARS`].
    #[must_use]
    pub fn max_chars(mut self, max_chars: usize) -> Self {
        self.max_chars = Some(max_chars);
        self
    }
}

/// A regular-expression search over record lines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Grep {
    /// Regular expression (Rust regex syntax), e.g. `timeout|refused`.
    /// Escape special characters (`\.`, `\(`) to match them literally.
    pub pattern: String,
    /// Lines of context to show before and after each match (like
    /// `grep -C`). Default 0, at most 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<usize>,
    /// Match case-insensitively. Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_case: Option<bool>,
    /// Stop after this many matching lines. Default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_matches: Option<usize>,
}

/// `grep` as an object, or a plain string taken as its pattern: models
/// write `{"grep": "timeout"}` as often as the object.
pub(super) fn grep_or_pattern<'de, D>(de: D) -> Result<Option<Grep>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Pattern(String),
        Full(Value),
    }
    match Option::<Form>::deserialize(de)? {
        None => Ok(None),
        Some(Form::Pattern(pattern)) => Ok(Some(Grep::new(pattern))),
        // The object is read on its own so its errors name the field.
        Some(Form::Full(v)) => Grep::deserialize(v)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("grep: {e}"))),
    }
}

impl Grep {
    /// A search for `pattern` with the default context, case and match limit.
    pub fn new(pattern: impl Into<String>) -> Self {
        Self {
            pattern: pattern.into(),
            ..Self::default()
        }
    }

    /// Shows this many lines of context around each match (at most
    /// [`MAX_CONTEXT`]). Defaults to 0.
    #[must_use]
    pub fn context(mut self, lines: usize) -> Self {
        self.context = Some(lines);
        self
    }

    /// Matches case-insensitively. Defaults to false.
    #[must_use]
    pub fn ignore_case(mut self, on: bool) -> Self {
        self.ignore_case = Some(on);
        self
    }

    /// Stops after this many matching lines. Defaults to
    /// [`DEFAULT_MAX_MATCHES`].
    #[must_use]
    pub fn max_matches(mut self, matches: usize) -> Self {
        self.max_matches = Some(matches);
        self
    }
}

/// Default [`LineWindow::limit`].
pub const DEFAULT_LINE_LIMIT: usize = 100;
/// Default [`LineWindow::max_chars`], also the cap on grep lines.
pub const DEFAULT_MAX_CHARS: usize = 2000;
/// Default [`Grep::max_matches`].
pub const DEFAULT_MAX_MATCHES: usize = 100;
/// Largest [`Grep::context`].
pub const MAX_CONTEXT: usize = 50;
