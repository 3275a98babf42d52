//! The request: ReMe's `/context_offload` fields, their defaults, and their
//! checks.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::{ContextError, Message, message::parse_messages};

/// What to do with the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Store large tool results in files, keep a preview (reversible).
    Compact,
    /// Summarise older messages into the system message.
    Compress,
    /// Compact, then compress when compaction saved too little.
    Auto,
}

impl Mode {
    /// The mode's name in requests.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Compact => "compact",
            Self::Compress => "compress",
            Self::Auto => "auto",
        }
    }
}

/// How a compacted message points at its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewFormat {
    /// The seed's: `{preview} (detailed result is stored in {path})`.
    Seed,
    /// ReMe 0.3.1.10's: ``tool call={id} result is stored in file path=`{path}` ``,
    /// then `\npreview: {preview}...` when the preview is not empty.
    Reme,
}

/// The `/context_offload` body as it comes, before its checks.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct OffloadRequest {
    /// The history.
    #[serde(default)]
    pub messages: Value,
    /// `compact`, `compress` or `auto` (ReMe's older name:
    /// `working_summary_mode`).
    #[serde(alias = "working_summary_mode")]
    pub context_manage_mode: Option<String>,
    /// Tokens of the changeable messages at or under which nothing happens.
    pub max_total_tokens: Option<u64>,
    /// Tool messages over this many tokens are compacted.
    pub max_tool_message_tokens: Option<u64>,
    /// Tokens per compression group; unset or 0 means one group.
    pub group_token_threshold: Option<u64>,
    /// Recent non-system messages left untouched.
    pub keep_recent_count: Option<usize>,
    /// Auto mode compresses when tokens after / before compaction exceed it.
    pub compact_ratio_threshold: Option<f64>,
    /// Where files go.
    pub store_dir: Option<String>,
    /// Names compression files; generated when absent.
    pub chat_id: Option<String>,
    /// Characters of a compacted message kept as its preview.
    pub preview_char_length: Option<usize>,
    /// Tools whose results are never compacted.
    pub exclude_tools: Option<Vec<String>>,
    /// `seed` (default) or `reme`.
    pub preview_format: Option<String>,
    /// Whether the answer echoes the stored files' contents in
    /// `metadata.write_file_dict` (ReMe's shape). Unset, the front decides:
    /// see [`FileContents`].
    pub include_file_contents: Option<bool>,
}

/// Whether an answer echoes the stored files' contents (ReMe's
/// `metadata.write_file_dict`, path → content) when the request's
/// `include_file_contents` does not say.
///
/// ReMe's HTTP API and the CLI include them, since ReMe clients read them.
/// The MCP tools omit them: the files are on disk, `context_read_file`
/// reads them back, and an echo would double the answer that compaction
/// set out to shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileContents {
    /// `metadata.write_file_dict` maps every stored path to its content.
    Included,
    /// Only `metadata.stored_files`, the paths.
    Omitted,
}

/// Checked parameters, with ReMe's defaults filled in.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Params {
    /// The mode. Defaults to [`Mode::Auto`].
    pub mode: Mode,
    /// Defaults to 20000.
    pub max_total_tokens: u64,
    /// Defaults to 2000.
    pub max_tool_message_tokens: u64,
    /// Defaults to none: one group.
    pub group_token_threshold: Option<u64>,
    /// Defaults to none: 1 for compaction, 2 for compression.
    pub keep_recent_count: Option<usize>,
    /// Defaults to 0.75.
    pub compact_ratio_threshold: f64,
    /// Required.
    pub store_dir: PathBuf,
    /// Defaults to a random UUID.
    pub chat_id: String,
    /// Defaults to 100.
    pub preview_char_length: usize,
    /// Defaults to none.
    pub exclude_tools: Vec<String>,
    /// Defaults to [`PreviewFormat::Seed`].
    pub preview_format: PreviewFormat,
}

/// ReMe's defaults.
pub(crate) const DEFAULT_MAX_TOTAL_TOKENS: u64 = 20_000;
pub(crate) const DEFAULT_MAX_TOOL_MESSAGE_TOKENS: u64 = 2_000;
pub(crate) const DEFAULT_COMPACT_RATIO: f64 = 0.75;
pub(crate) const DEFAULT_PREVIEW_CHARS: usize = 100;
/// Recent messages kept by compaction and by compression when unset.
pub(crate) const KEEP_RECENT_COMPACT: usize = 1;
pub(crate) const KEEP_RECENT_COMPRESS: usize = 2;

impl Params {
    /// Defaults, storing in `store_dir`.
    pub fn new(store_dir: impl Into<PathBuf>) -> Self {
        Self {
            mode: Mode::Auto,
            max_total_tokens: DEFAULT_MAX_TOTAL_TOKENS,
            max_tool_message_tokens: DEFAULT_MAX_TOOL_MESSAGE_TOKENS,
            group_token_threshold: None,
            keep_recent_count: None,
            compact_ratio_threshold: DEFAULT_COMPACT_RATIO,
            store_dir: store_dir.into(),
            chat_id: uuid::Uuid::new_v4().simple().to_string(),
            preview_char_length: DEFAULT_PREVIEW_CHARS,
            exclude_tools: Vec::new(),
            preview_format: PreviewFormat::Seed,
        }
    }

    /// Sets the mode. Defaults to [`Mode::Auto`].
    #[must_use]
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets `max_total_tokens`. Defaults to 20000.
    #[must_use]
    pub fn max_total_tokens(mut self, tokens: u64) -> Self {
        self.max_total_tokens = tokens;
        self
    }

    /// Sets `max_tool_message_tokens`. Defaults to 2000.
    #[must_use]
    pub fn max_tool_message_tokens(mut self, tokens: u64) -> Self {
        self.max_tool_message_tokens = tokens;
        self
    }

    /// Sets `keep_recent_count`. Defaults to 1 for compaction, 2 for
    /// compression.
    #[must_use]
    pub fn keep_recent_count(mut self, count: usize) -> Self {
        self.keep_recent_count = Some(count);
        self
    }

    /// Sets `group_token_threshold`. Defaults to none (one group).
    #[must_use]
    pub fn group_token_threshold(mut self, tokens: u64) -> Self {
        self.group_token_threshold = (tokens > 0).then_some(tokens);
        self
    }

    /// Sets `chat_id`. Defaults to a random UUID.
    #[must_use]
    pub fn chat_id(mut self, id: impl Into<String>) -> Self {
        self.chat_id = id.into();
        self
    }

    /// Sets the tools never compacted. Defaults to none.
    #[must_use]
    pub fn exclude_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.exclude_tools = tools.into_iter().map(Into::into).collect();
        self
    }
}

impl OffloadRequest {
    /// A request read from a JSON body.
    ///
    /// # Errors
    ///
    /// [`ContextError::Invalid`] naming the field whose value has the wrong
    /// type, e.g. `max_total_tokens`.
    pub fn from_value(body: Value) -> Result<Self, ContextError> {
        crate::error::parse(body)
    }

    /// What the answer carries: the request's `include_file_contents`, else
    /// the front's `default`.
    pub fn file_contents(&self, default: FileContents) -> FileContents {
        match self.include_file_contents {
            Some(true) => FileContents::Included,
            Some(false) => FileContents::Omitted,
            None => default,
        }
    }

    /// Checks the request: the messages and the parameters.
    ///
    /// # Errors
    ///
    /// [`ContextError`] naming the first bad field or message.
    pub fn check(self) -> Result<(Vec<Message>, Params), ContextError> {
        let store_dir = match self.store_dir.as_deref().map(str::trim) {
            Some(d) if !d.is_empty() => d.to_owned(),
            _ => return Err(ContextError::field("store_dir", "is required")),
        };
        let mut p = Params::new(store_dir);
        if let Some(mode) = &self.context_manage_mode {
            p.mode = match mode.as_str() {
                "compact" => Mode::Compact,
                "compress" => Mode::Compress,
                "auto" => Mode::Auto,
                other => {
                    return Err(ContextError::field(
                        "context_manage_mode",
                        format!("unknown mode `{other}`; use compact, compress or auto"),
                    ));
                }
            };
        }
        if let Some(t) = self.max_total_tokens {
            p.max_total_tokens = t;
        }
        if let Some(t) = self.max_tool_message_tokens {
            p.max_tool_message_tokens = t;
        }
        p.group_token_threshold = self.group_token_threshold.filter(|&t| t > 0);
        p.keep_recent_count = self.keep_recent_count;
        if let Some(r) = self.compact_ratio_threshold {
            if !(r.is_finite() && (0.0..=1.0).contains(&r)) {
                return Err(ContextError::field(
                    "compact_ratio_threshold",
                    "must be between 0 and 1",
                ));
            }
            p.compact_ratio_threshold = r;
        }
        if let Some(id) = self.chat_id.filter(|id| !id.is_empty()) {
            p.chat_id = id;
        }
        if let Some(n) = self.preview_char_length {
            p.preview_char_length = n;
        }
        p.exclude_tools = self.exclude_tools.unwrap_or_default();
        if let Some(f) = &self.preview_format {
            p.preview_format = match f.as_str() {
                "seed" => PreviewFormat::Seed,
                "reme" => PreviewFormat::Reme,
                other => {
                    return Err(ContextError::field(
                        "preview_format",
                        format!("unknown format `{other}`; use seed or reme"),
                    ));
                }
            };
        }
        let messages = match self.messages {
            Value::Null => return Err(ContextError::field("messages", "is required")),
            v => parse_messages(v)?,
        };
        Ok((messages, p))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(v: Value) -> Result<(Vec<Message>, Params), ContextError> {
        OffloadRequest::from_value(v)?.check()
    }

    #[test]
    fn defaults_are_remes() {
        let (msgs, p) = request(json!({"messages": [], "store_dir": "/s"})).unwrap();
        assert!(msgs.is_empty());
        assert_eq!(p.mode, Mode::Auto);
        assert_eq!(
            (p.max_total_tokens, p.max_tool_message_tokens),
            (20_000, 2_000)
        );
        assert_eq!(p.compact_ratio_threshold, 0.75);
        assert_eq!((p.keep_recent_count, p.group_token_threshold), (None, None));
        assert_eq!(p.chat_id.len(), 32);
    }

    #[test]
    fn bad_fields_are_named() {
        let err = |v| lro_core::error::chain(&request(v).unwrap_err()).to_string();
        assert_eq!(err(json!({"messages": []})), "`store_dir`: is required");
        assert!(
            err(json!({"messages": [], "store_dir": "/s", "working_summary_mode": "shrink"}))
                .starts_with("`context_manage_mode`: unknown mode `shrink`")
        );
        assert!(err(json!({"store_dir": "/s"})).starts_with("`messages`"));
        assert!(
            err(json!({"messages": [], "store_dir": "/s", "compact_ratio_threshold": 2.0}))
                .starts_with("`compact_ratio_threshold`")
        );
        assert_eq!(
            err(json!({"messages": [], "store_dir": "/s", "keep_recent_count": -1})),
            "`keep_recent_count`: invalid value: integer `-1`, expected usize"
        );
    }
}
