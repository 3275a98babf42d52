//! Compact, compress and auto: the semantics of ReMe's `MessageOffloadOp`.
//!
//! Both steps follow ReMe's skip rule: they count the messages that could
//! change (neither system messages nor the recent ones) and do nothing when
//! those are at most `max_total_tokens`. Neither ever separates a tool call
//! from its results, and neither replaces a message by a pointer to a file
//! that was not written.

use std::{
    borrow::Cow,
    collections::{BTreeMap, HashSet},
    io,
    path::PathBuf,
    sync::{Arc, LazyLock},
};

use cap_std::fs::Dir;
use regex::Regex;
use serde_json::{Map, Value};

use lro_core::{
    config::{DEFAULT_MAX_PRINCIPAL_BYTES, DEFAULT_MAX_TOTAL_BYTES},
    error::chain,
    principal::Principal,
    quota::Quota,
};

use crate::{
    ContextError, FileContents, Message, Mode, Params, PreviewFormat, Roots,
    params::{KEEP_RECENT_COMPACT, KEEP_RECENT_COMPRESS},
    scope::{Located, Place},
    store::{self, Written},
    summary::{Extractive, Summariser},
    tokens::{self, CharsPerToken, TokenCounter},
};

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A compacted tool result, exactly as the message held it.
    ToolResult,
    /// A compressed group of messages, as a JSON array.
    Group,
}

/// A file the returned messages point at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// Where it is.
    pub path: PathBuf,
    /// What it holds.
    pub content: String,
    /// Whether this call wrote it (`false`: it was already there, the same).
    pub new: bool,
    /// What it is.
    pub kind: FileKind,
}

/// Counts of one call.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Tokens of the whole history before.
    pub tokens_before: u64,
    /// Tokens of the whole history after.
    pub tokens_after: u64,
    /// Tool messages compacted.
    pub compacted: usize,
    /// Groups compressed.
    pub groups: usize,
    /// Messages compressed into those groups.
    pub compressed: usize,
    /// The summariser that wrote the snapshots, if compression ran.
    pub summariser: Option<&'static str>,
    /// Every summariser call: which one, whether it succeeded, how long.
    pub summariser_calls: Vec<SummariserCall>,
    /// Files that could not be written.
    pub write_failures: usize,
}

/// One call of a summariser.
#[derive(Debug, Clone, PartialEq)]
pub struct SummariserCall {
    /// The summariser's kind (`extractive`, `llm`, …).
    pub kind: &'static str,
    /// Whether it returned a summary (else the extractive one was used).
    pub ok: bool,
    /// How long it took.
    pub duration: std::time::Duration,
}

/// The processed history and what was stored.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Offloaded {
    /// The history to use from now on.
    pub messages: Vec<Message>,
    /// The files the changes point at.
    pub files: Vec<StoredFile>,
    /// What happened, one line each (ReMe's `answer` lines among them).
    pub notes: Vec<String>,
    /// Problems that left messages as they were (failed writes, a
    /// summariser that failed).
    pub warnings: Vec<String>,
    /// The counts.
    pub stats: Stats,
}

impl Offloaded {
    /// ReMe's `answer`: a line per file written, then what else happened.
    pub fn answer(&self) -> String {
        let mut lines: Vec<String> = self
            .files
            .iter()
            .map(|f| {
                if f.new {
                    format!(
                        "Successfully created and wrote to new file: {}",
                        f.path.display()
                    )
                } else {
                    format!("Already stored, unchanged: {}", f.path.display())
                }
            })
            .collect();
        lines.extend(self.notes.iter().cloned());
        lines.extend(self.warnings.iter().map(|w| format!("warning: {w}")));
        lines.join("\n")
    }

    /// ReMe's response: `{success: true, answer, messages, metadata:
    /// {write_file_dict, stored_files, stats, warnings}}`, what every front
    /// answers. `write_file_dict` (path → content) is there only with
    /// [`FileContents::Included`]; `stored_files` lists the paths always.
    pub fn to_response(&self, contents: FileContents) -> Value {
        let messages: Vec<Value> = self
            .messages
            .iter()
            .cloned()
            .map(Message::into_json)
            .collect();
        let stored: Vec<String> = self
            .files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        let mut response = serde_json::json!({
            "success": true,
            "answer": self.answer(),
            "messages": messages,
            "metadata": {
                "stored_files": stored,
                "stats": {
                    "tokens_before": self.stats.tokens_before,
                    "tokens_after": self.stats.tokens_after,
                    "compacted": self.stats.compacted,
                    "compressed_groups": self.stats.groups,
                    "compressed_messages": self.stats.compressed,
                    "summariser": self.stats.summariser,
                },
                "warnings": self.warnings,
            },
        });
        if contents == FileContents::Included {
            response["metadata"]["write_file_dict"] = Value::Object(self.write_file_dict());
        }
        response
    }

    /// ReMe's `metadata.write_file_dict`: path → content of every file the
    /// messages point at.
    pub fn write_file_dict(&self) -> Map<String, Value> {
        self.files
            .iter()
            .map(|f| {
                (
                    f.path.display().to_string(),
                    Value::String(f.content.clone()),
                )
            })
            .collect()
    }
}

/// The offloader: a token counter, a summariser and the roots `store_dir`
/// must lie in.
///
/// ```
/// use lro_context::{ContextOffloader, Message, Mode, Params};
/// use lro_core::principal::Principal;
///
/// let dir = tempfile::tempdir().unwrap();
/// let call = serde_json::json!({"role": "assistant", "content": null,
///     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}]});
/// let history = lro_context::parse_messages(serde_json::json!([
///     {"role": "system", "content": "You are helpful."},
///     {"role": "user", "content": "Fetch it."},
///     call,
///     {"role": "tool", "tool_call_id": "c1", "content": "x".repeat(20_000)},
///     {"role": "assistant", "content": "Done."},
/// ])).unwrap();
/// let params = Params::new(dir.path()).mode(Mode::Compact).max_total_tokens(1_000);
/// let out = ContextOffloader::new().offload(&Principal::anonymous(), history, &params).unwrap();
/// assert_eq!(out.stats.compacted, 1);
/// assert!(out.messages[3].text().contains("(detailed result is stored in "));
/// ```
#[derive(Clone)]
pub struct ContextOffloader {
    counter: Arc<dyn TokenCounter>,
    summariser: Arc<dyn Summariser>,
    roots: Roots,
    quota: Quota,
}

impl std::fmt::Debug for ContextOffloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextOffloader")
            .field("summariser", &self.summariser.kind())
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl Default for ContextOffloader {
    fn default() -> Self {
        Self {
            counter: Arc::new(CharsPerToken),
            summariser: Arc::new(Extractive),
            roots: Roots::any(),
            quota: Quota::new()
                .per_principal(Some(DEFAULT_MAX_PRINCIPAL_BYTES))
                .total(Some(DEFAULT_MAX_TOTAL_BYTES)),
        }
    }
}

/// A compacted message's pointer, in either format.
static POINTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\(detailed result is stored in [^\s)]+\)\s*$|^tool call=\S+ result is stored in file path=`[^`]+`",
    )
    .expect("valid")
});

impl ContextOffloader {
    /// Characters / 4, the extractive summariser, any `store_dir`.
    pub fn new() -> Self {
        Self::default()
    }

    /// [`ContextOffloader::new`] with the LLM summariser when the
    /// environment configures one ([`crate::OpenAiSummariser::from_env`]).
    pub fn from_env() -> Self {
        match crate::OpenAiSummariser::from_env() {
            Some(llm) => Self::new().summariser(llm),
            None => Self::new(),
        }
    }

    /// Sets the token counter. Defaults to [`CharsPerToken`].
    #[must_use]
    pub fn counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// Sets the summariser. Defaults to [`Extractive`].
    #[must_use]
    pub fn summariser(mut self, summariser: impl Summariser + 'static) -> Self {
        self.summariser = Arc::new(summariser);
        self
    }

    /// Confines `store_dir` to `roots`. Defaults to no confinement.
    #[must_use]
    pub fn roots(mut self, roots: Roots) -> Self {
        self.roots = roots;
        self
    }

    /// Sets the byte quotas of the store, per principal and per root; a
    /// write past one is a failed write (the message stays whole, with a
    /// warning). Defaults to 256 MiB per principal and 1 GiB per root.
    #[must_use]
    pub fn quota(mut self, quota: Quota) -> Self {
        self.quota = quota;
        self
    }

    /// The roots.
    pub fn store_roots(&self) -> &Roots {
        &self.roots
    }

    /// Processes `messages` as `params` say, storing files in `principal`'s
    /// own area of the roots (a relative `store_dir` is taken from it).
    ///
    /// # Errors
    ///
    /// [`ContextError::OutsideRoots`] when `store_dir` is outside the roots
    /// or in another principal's area.
    /// A failed write is not an error: the message stays whole and a
    /// warning says so.
    pub fn offload(
        &self,
        principal: &Principal,
        messages: Vec<Message>,
        params: &Params,
    ) -> Result<Offloaded, ContextError> {
        let dir = match self
            .roots
            .place(principal, "store_dir", &params.store_dir)?
        {
            Place::Own(at) => at,
            Place::Foreign(path) => {
                return Err(ContextError::OutsideRoots {
                    field: "store_dir",
                    path,
                });
            }
        };
        let span = tracing::info_span!(
            "context_offload",
            mode = params.mode.as_str(),
            messages = messages.len(),
            tokens_before = tracing::field::Empty,
            tokens_after = tracing::field::Empty,
            compacted = tracing::field::Empty,
            groups = tracing::field::Empty,
        );
        let _entered = span.enter();
        let mut run = Run {
            counter: &*self.counter,
            summariser: &*self.summariser,
            params,
            dir: &dir,
            store: Store {
                at: &dir,
                quota: &self.quota,
                open: None,
            },
            out: Offloaded {
                messages,
                ..Offloaded::default()
            },
        };
        run.out.stats.tokens_before = tokens::of_messages(run.counter, &run.out.messages);
        match params.mode {
            Mode::Compact => run.compact(),
            Mode::Compress => run.compress(),
            Mode::Auto => {
                run.compact();
                let before = run.out.stats.tokens_before;
                let after = tokens::of_messages(run.counter, &run.out.messages);
                let ratio = if before == 0 {
                    0.0
                } else {
                    after as f64 / before as f64
                };
                if ratio > params.compact_ratio_threshold {
                    run.out.notes.push(format!(
                        "Compaction kept {:.0}% of the tokens (over compact_ratio_threshold {}): compressing.",
                        ratio * 100.0,
                        params.compact_ratio_threshold
                    ));
                    run.compress();
                }
            }
        }
        run.out.stats.tokens_after = tokens::of_messages(run.counter, &run.out.messages);
        let stats = &run.out.stats;
        span.record("tokens_before", stats.tokens_before);
        span.record("tokens_after", stats.tokens_after);
        span.record("compacted", stats.compacted);
        span.record("groups", stats.groups);
        crate::telemetry::record(params.mode, stats);
        Ok(run.out)
    }
}

struct Run<'a> {
    counter: &'a dyn TokenCounter,
    summariser: &'a dyn Summariser,
    params: &'a Params,
    dir: &'a Located,
    store: Store<'a>,
    out: Offloaded,
}

/// Where one run stores its files: the directory is created and opened on
/// the run's first write and kept open for the others.
struct Store<'a> {
    at: &'a Located,
    quota: &'a Quota,
    open: Option<Dir>,
}

impl Store<'_> {
    /// Stores `content` as `name` (see [`store::write`]).
    fn write(&mut self, name: &str, content: &[u8]) -> io::Result<(PathBuf, Written)> {
        let dir = match &mut self.open {
            Some(dir) => dir,
            empty => empty.insert(self.at.open_dir(true)?),
        };
        store::write(dir, self.at, name, content, self.quota)
    }
}

impl Run<'_> {
    /// Indices of the non-system messages, and where the recent `keep` of
    /// them begin.
    fn split(&self, keep: usize) -> (Vec<usize>, usize) {
        let non_system: Vec<usize> = (0..self.out.messages.len())
            .filter(|&i| !self.out.messages[i].is_system())
            .collect();
        let recent_from = non_system.len().saturating_sub(keep);
        (non_system, recent_from)
    }

    /// ReMe's skip rule on the changeable messages; notes the skip.
    fn under_limit(&mut self, step: &str, changeable: &[usize]) -> bool {
        let total = tokens::of_messages(
            self.counter,
            changeable.iter().map(|&i| &self.out.messages[i]),
        );
        let under = total <= self.params.max_total_tokens;
        if under {
            self.out.notes.push(format!(
                "No {step}: the messages it could change hold {total} tokens, within max_total_tokens {}.",
                self.params.max_total_tokens
            ));
        }
        under
    }

    fn compact(&mut self) {
        let keep = self.params.keep_recent_count.unwrap_or(KEEP_RECENT_COMPACT);
        let (non_system, recent_from) = self.split(keep);
        let changeable = &non_system[..recent_from];
        if self.under_limit("compaction", changeable) {
            return;
        }
        let names: BTreeMap<String, String> = self
            .out
            .messages
            .iter()
            .flat_map(|m| {
                m.tool_call_ids()
                    .into_iter()
                    .filter_map(|id| Some((id.to_owned(), m.tool_call_name(id)?.to_owned())))
                    .collect::<Vec<_>>()
            })
            .collect();
        for &i in changeable {
            let m = &self.out.messages[i];
            let Some(id) = m.tool_call_id().map(str::to_owned) else {
                continue;
            };
            if tokens::of_message(self.counter, m) <= self.params.max_tool_message_tokens
                || POINTER.is_match(&m.text_ref())
                || names
                    .get(&id)
                    .is_some_and(|n| self.params.exclude_tools.contains(n))
            {
                continue;
            }
            let stored = m.stored_content();
            let name = store::tool_file_name(&id, stored.as_bytes());
            let result = self.store.write(&name, stored.as_bytes());
            // A string is moved out of the message below, not copied.
            let copied = match stored {
                Cow::Owned(json) => Some(json),
                Cow::Borrowed(_) => None,
            };
            match result {
                Ok((path, written)) => {
                    let preview: String = self.out.messages[i]
                        .text_ref()
                        .chars()
                        .take(self.params.preview_char_length)
                        .collect();
                    let pointer = match self.params.preview_format {
                        PreviewFormat::Seed => format!(
                            "{preview} (detailed result is stored in {})",
                            path.display()
                        ),
                        // ReMe's wording: the pointer first, a preview after it.
                        PreviewFormat::Reme if preview.is_empty() => format!(
                            "tool call={id} result is stored in file path=`{}`",
                            path.display()
                        ),
                        PreviewFormat::Reme => format!(
                            "tool call={id} result is stored in file path=`{}`\npreview: {preview}...",
                            path.display()
                        ),
                    };
                    let content = match (copied, self.out.messages[i].set_content(pointer)) {
                        (Some(json), _) | (None, Some(Value::String(json))) => json,
                        // No content at all: stored as an empty file.
                        _ => String::new(),
                    };
                    self.out.stats.compacted += 1;
                    self.out.files.push(StoredFile {
                        path,
                        content,
                        new: written == Written::New,
                        kind: FileKind::ToolResult,
                    });
                }
                Err(e) => {
                    self.out.stats.write_failures += 1;
                    tracing::warn!(event = "context_write_failed", tool_call_id = %id, dir = %self.dir.full.display(), error = %chain(&e),
                        "cannot store a tool result; the message was kept whole");
                    self.out.warnings.push(format!(
                        "cannot store the result of tool call {id} in {}: {}; the message was kept whole",
                        self.dir.full.display(),
                        chain(&e)
                    ));
                }
            }
        }
    }

    fn compress(&mut self) {
        let keep = self
            .params
            .keep_recent_count
            .unwrap_or(KEEP_RECENT_COMPRESS);
        let (non_system, mut recent_from) = self.split(keep);
        // A tool result stays with its call: when the recent ones would
        // begin with results, they begin with the call instead.
        while recent_from > 0
            && recent_from < non_system.len()
            && self.out.messages[non_system[recent_from]].role() == "tool"
        {
            recent_from -= 1;
        }
        let old = non_system[..recent_from].to_vec();
        if old.is_empty() || self.under_limit("compression", &old) {
            return;
        }
        let groups = self.groups(&old);
        let mut snapshots = Vec::new();
        let mut removed = HashSet::new();
        for (idx, group) in groups.iter().enumerate() {
            let msgs: Vec<Message> = group
                .iter()
                .map(|&i| self.out.messages[i].clone())
                .collect();
            let json = Value::Array(msgs.iter().cloned().map(Message::into_json).collect());
            let content = serde_json::to_string_pretty(&json).unwrap_or_default();
            let name = store::group_file_name(&self.params.chat_id, idx, content.as_bytes());
            let (path, written) = match self.store.write(&name, content.as_bytes()) {
                Ok(ok) => ok,
                Err(e) => {
                    self.out.stats.write_failures += 1;
                    tracing::warn!(event = "context_write_failed", group = idx, dir = %self.dir.full.display(), error = %chain(&e),
                        "cannot store a compressed group; its messages were kept whole");
                    self.out.warnings.push(format!(
                        "cannot store compressed group {idx} in {}: {}; its {} messages were kept whole",
                        self.dir.full.display(),
                        chain(&e),
                        group.len()
                    ));
                    continue;
                }
            };
            let started = std::time::Instant::now();
            let summarised = self.summariser.summarise(&msgs);
            self.out.stats.summariser_calls.push(SummariserCall {
                kind: self.summariser.kind(),
                ok: summarised.is_ok(),
                duration: started.elapsed(),
            });
            let (summary, kind) = match summarised {
                Ok(s) => (s, self.summariser.kind()),
                Err(why) => {
                    self.out.warnings.push(format!(
                        "the {} summariser failed ({why}); group {idx} has the extractive summary",
                        self.summariser.kind()
                    ));
                    (
                        Extractive.summarise(&msgs).unwrap_or_default(),
                        Extractive.kind(),
                    )
                }
            };
            self.out.stats.summariser = Some(kind);
            snapshots.push(format!(
                "<state_snapshot>\n{summary}\n<original_messages>{}</original_messages>\n</state_snapshot>",
                path.display()
            ));
            removed.extend(group.iter().copied());
            self.out.stats.groups += 1;
            self.out.stats.compressed += group.len();
            self.out.files.push(StoredFile {
                path,
                content,
                new: written == Written::New,
                kind: FileKind::Group,
            });
        }
        if snapshots.is_empty() {
            return;
        }
        let mut kept: Vec<Message> = std::mem::take(&mut self.out.messages)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !removed.contains(i))
            .map(|(_, m)| m)
            .collect();
        let block = snapshots.join("\n\n");
        match kept.iter_mut().find(|m| m.is_system()) {
            Some(system) => {
                let text = system.text();
                system.set_content(if text.is_empty() {
                    block
                } else {
                    format!("{text}\n\n{block}")
                });
            }
            None => kept.insert(0, Message::new("system", block)),
        }
        self.out.notes.push(format!(
            "Compressed {} messages in {} group(s) into the system message ({} summary).",
            self.out.stats.compressed,
            self.out.stats.groups,
            self.out.stats.summariser.unwrap_or("no")
        ));
        self.out.messages = kept;
    }

    /// `old` cut into groups of at most `group_token_threshold` tokens (one
    /// group when unset); a call and its results are one unit, never split,
    /// and a unit over the threshold is a group of its own.
    fn groups(&self, old: &[usize]) -> Vec<Vec<usize>> {
        let msgs = &self.out.messages;
        let mut units: Vec<Vec<usize>> = Vec::new();
        let mut open_calls: HashSet<String> = HashSet::new();
        for &i in old {
            let m = &msgs[i];
            let answers_open = m.tool_call_id().is_some_and(|id| open_calls.contains(id));
            if answers_open && let Some(unit) = units.last_mut() {
                unit.push(i);
                continue;
            }
            open_calls = m.tool_call_ids().into_iter().map(str::to_owned).collect();
            units.push(vec![i]);
        }
        let Some(limit) = self.params.group_token_threshold else {
            return vec![units.into_iter().flatten().collect()];
        };
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut size = 0;
        for unit in units {
            let t = tokens::of_messages(self.counter, unit.iter().map(|&i| &msgs[i]));
            match groups.last_mut() {
                Some(g) if size + t <= limit => {
                    g.extend(unit);
                    size += t;
                }
                _ => {
                    groups.push(unit);
                    size = t;
                }
            }
        }
        groups
    }
}
