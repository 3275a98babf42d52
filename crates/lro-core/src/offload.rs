//! The offload pipeline, free of any transport: records in, file and
//! descriptor out; and the truncation used when the write fails.
//!
//! ```
//! use lro_core::{offload::{Offloader, OffloadInput}, records::RecordSet, tokens::ScriptAware};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let offloader = Offloader::new(dir.path());
//! let text = serde_json::to_string(&(0..50).map(|i| serde_json::json!({"n": i, "msg": "hello"})).collect::<Vec<_>>()).unwrap();
//! let records = RecordSet::from_text(&text);
//! let out = offloader
//!     .offload(OffloadInput::new("fetch_logs", "fetch_logs", &records, 500), &|| false)
//!     .unwrap();
//! assert!(out.result.path.exists());
//! assert_eq!(out.result.header.count, 50);
//! assert!(out.text.contains("\"offloaded\":true"));
//! ```

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::Value;
use time::OffsetDateTime;

use crate::{
    config::DescriptorProfile,
    descriptor::{
        Detail, GuidanceInput, GuidanceStyle, Location, MinimalOffloadResponse, OffloadHeader,
        OffloadResponse, OffloadSummary, OffloadedResult,
    },
    example::WorkedExample,
    file::{OffloadFileName, WriteError, WrittenFile, encoded_len, write_in},
    fit, handle,
    object::ObjectSink,
    principal::Principal,
    quota::{Ledger, Quota, QuotaScope, measure},
    quote::cut,
    recipes::{RecipeSet, SAMPLE_SIZE, is_memory_sample},
    records::{RecordKind, RecordSet},
    room::make_room,
    root::{PrivateDir, default_output_dir},
    schema::descriptor_line_schema,
    tokens::TokenEstimator,
    upload::write_object,
};

/// Times a write at the total quota makes room before it is refused.
const MAKE_ROOM_TRIES: usize = 8;

/// What to offload.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OffloadInput<'a> {
    /// Tool name.
    pub tool: &'a str,
    /// Operation name for the file name and header.
    pub operation: &'a str,
    /// The query, when the call had one.
    pub query: Option<String>,
    /// Detail level the records were serialized at; inferred when `None`.
    pub detail: Option<Detail>,
    /// The records.
    pub records: &'a RecordSet<'a>,
    /// Estimated tokens of the whole result set.
    pub estimated_tokens: usize,
    /// Score range, when the tool knows one.
    pub score_range: Option<(f64, f64)>,
    /// Whose result this is: the file goes to [`Principal::dir`].
    pub principal: Principal,
}

impl<'a> OffloadInput<'a> {
    /// An input with no query, inferred detail and no score range.
    pub fn new(
        tool: &'a str,
        operation: &'a str,
        records: &'a RecordSet<'a>,
        estimated_tokens: usize,
    ) -> Self {
        Self {
            tool,
            operation,
            query: None,
            detail: None,
            records,
            estimated_tokens,
            score_range: None,
            principal: Principal::anonymous(),
        }
    }

    /// Sets whose result this is. Defaults to [`Principal::anonymous`]:
    /// the file goes straight into the output directory.
    #[must_use]
    pub fn principal(self, principal: Principal) -> Self {
        Self { principal, ..self }
    }

    /// Sets the query, for the file header. Defaults to none.
    #[must_use]
    pub fn query(self, query: Option<String>) -> Self {
        Self { query, ..self }
    }

    /// Sets the detail level the records were serialized at. Defaults to
    /// none: inferred from the records.
    #[must_use]
    pub fn detail(self, detail: Option<Detail>) -> Self {
        Self { detail, ..self }
    }

    /// Sets the score range. Defaults to none.
    #[must_use]
    pub fn score_range(self, score_range: Option<(f64, f64)>) -> Self {
        Self {
            score_range,
            ..self
        }
    }
}

/// The descriptor that replaces the result.
#[derive(Debug, Clone, PartialEq)]
pub enum Descriptor {
    /// The spec's full descriptor.
    Full(OffloadResponse),
    /// The bare pointer.
    Minimal(MinimalOffloadResponse),
}

/// A finished offload.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OffloadOutput {
    /// The descriptor.
    pub descriptor: Descriptor,
    /// The descriptor as JSON text, what the model reads.
    pub text: String,
    /// The file.
    pub result: OffloadedResult,
    /// Bytes written.
    pub bytes: u64,
    /// Time spent writing the file.
    pub write_duration: Duration,
    /// The recipes in the descriptor.
    pub recipes: RecipeSet,
}

/// Writes offload files and builds descriptors.
///
/// The output directory is opened once, on the first write, as a
/// [`PrivateDir`] (and again only if it was removed meanwhile); clones
/// share the handle and the quota [`Ledger`].
#[derive(Debug, Clone)]
pub struct Offloader {
    dir: PathBuf,
    ttl: Duration,
    profile: DescriptorProfile,
    native_extract: bool,
    guidance: GuidanceStyle,
    quota: Quota,
    root: Arc<Mutex<Option<Arc<OpenRoot>>>>,
    sink: Option<Arc<dyn ObjectSink>>,
}

/// One file to write, as [`Offloader::offload`] hands it on.
struct WriteJob<'a> {
    principal: &'a Principal,
    name: &'a OffloadFileName,
    header: &'a OffloadHeader,
    records: &'a RecordSet<'a>,
    cancelled: &'a dyn Fn() -> bool,
}

/// The output directory, open, and its ledger.
#[derive(Debug)]
struct OpenRoot {
    dir: PrivateDir,
    ledger: Arc<Ledger>,
}

impl Offloader {
    /// Writes into `dir`, TTL one hour, full profile, the spec's shell
    /// guidance.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            ttl: Duration::from_secs(crate::config::DEFAULT_TTL_SECONDS),
            profile: DescriptorProfile::Full,
            native_extract: false,
            guidance: GuidanceStyle::Spec,
            quota: Quota::new(),
            root: Arc::default(),
            sink: None,
        }
    }

    /// Writes results into an object store instead of the directory: the
    /// descriptor then carries a handle (see [`handle`]) where it carried
    /// the path, and its guidance is `lro_extract`'s, since there is no file
    /// to pipe into `jq`. The directory's quotas do not apply; the store's
    /// lifecycle and cleanup bound it. Defaults to none (the directory).
    #[must_use]
    pub fn sink(mut self, sink: Arc<dyn ObjectSink>) -> Self {
        self.native_extract = true;
        self.sink = Some(sink);
        self
    }

    /// Whether results go to an object store (see [`Offloader::sink`]).
    pub fn is_remote(&self) -> bool {
        self.sink.is_some()
    }

    /// Sets the byte quotas checked before each write; a write over one
    /// fails with [`WriteError::Quota`]. Defaults to none (the layer sets
    /// the configuration's, 256 MiB per principal and 1 GiB in total).
    #[must_use]
    pub fn quota(mut self, quota: Quota) -> Self {
        self.quota = quota;
        self
    }

    /// Sets the TTL recorded in results. Defaults to 3600 s.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets the descriptor profile. Defaults to [`DescriptorProfile::Full`].
    #[must_use]
    pub fn profile(mut self, profile: DescriptorProfile) -> Self {
        self.profile = profile;
        self
    }

    /// Uses the `lro_extract` guidance template. Defaults to `false` (shell);
    /// always on with an object store, whose results have no path.
    #[must_use]
    pub fn native_extract(mut self, on: bool) -> Self {
        self.native_extract = on || self.sink.is_some();
        self
    }

    /// Sets how much the guidance says. Defaults to [`GuidanceStyle::Spec`]
    /// (the spec's templates).
    #[must_use]
    pub fn guidance(mut self, style: GuidanceStyle) -> Self {
        self.guidance = style;
        self
    }

    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The output directory, opened on first use: the default one without
    /// following a symlink in its place (see [`PrivateDir::open_nofollow`]).
    fn open_root(&self, fresh: bool) -> Result<Arc<OpenRoot>, WriteError> {
        let mut cached = self.root.lock().unwrap_or_else(|e| e.into_inner());
        // One stat per write: the handle is kept only while the path still
        // names the same directory. One renamed away (or replaced) must not
        // receive files the descriptor would place at the path.
        if let Some(root) = cached.as_ref().filter(|_| !fresh)
            && std::fs::metadata(&self.dir).is_ok_and(|m| root.dir.is_same(&m))
        {
            return Ok(root.clone());
        }
        let dir = if self.dir == default_output_dir() {
            PrivateDir::open_nofollow(&self.dir)?
        } else {
            PrivateDir::open(&self.dir)?
        };
        let ledger = Ledger::for_root(dir.path());
        let root = Arc::new(OpenRoot { dir, ledger });
        *cached = Some(root.clone());
        Ok(root)
    }

    /// Writes into the principal's folder, within the quota. A directory
    /// removed since it was opened (a temp cleaner) is opened once more.
    fn write(&self, job: &WriteJob<'_>) -> Result<WrittenFile, WriteError> {
        if let Some(sink) = &self.sink {
            let key = handle::key(job.principal, job.name);
            let records = &job.records.records;
            let bytes = write_object(&**sink, &key, job.header, records, job.cancelled)?;
            return Ok(WrittenFile::new(PathBuf::from(key), bytes));
        }
        let root = self.open_root(false)?;
        match self.write_under(&root, job) {
            Err(WriteError::Create { source, .. } | WriteError::CreateDir { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                let root = self.open_root(true)?;
                self.write_under(&root, job)
            }
            other => other,
        }
    }

    fn write_under(&self, root: &OpenRoot, job: &WriteJob<'_>) -> Result<WrittenFile, WriteError> {
        let WriteJob {
            principal,
            name,
            header,
            records,
            cancelled,
        } = *job;
        let (key, sub) = if let Some(key) = principal.folder() {
            let sub = root
                .dir
                .subdir(&key)
                .map_err(|source| WriteError::CreateDir {
                    path: principal.dir(root.dir.path()),
                    source,
                })?;
            (key, Some(sub))
        } else {
            (String::new(), None)
        };
        let reservation = if self.quota.is_limited() {
            let bytes = encoded_len(header, &records.records);
            let reserve = || {
                root.ledger
                    .reserve(&self.quota, &key, bytes, || measure(root.dir.dir()))
            };
            // The principals over their share make room (see `quota`); a
            // few times, as writers that fit may take the room meanwhile.
            // Nothing freed once may mean the room is there already (made
            // by a writer at the same moment, not yet reserved): reserve
            // again before giving up.
            let mut tries = 0;
            let mut stalled = false;
            Some(loop {
                match reserve() {
                    Err(full) if full.scope == QuotaScope::Total && tries < MAKE_ROOM_TRIES => {
                        tries += 1;
                        let freed =
                            make_room(&root.ledger, root.dir.dir(), &self.quota, &key, bytes);
                        if freed.files == 0 {
                            if stalled {
                                return Err(full.into());
                            }
                            stalled = true;
                            continue;
                        }
                        stalled = false;
                        tracing::info!(
                            files = freed.files,
                            bytes = freed.bytes,
                            "total offload quota reached: deleted the oldest results of principals over their share"
                        );
                    }
                    other => break other?,
                }
            })
        } else {
            None
        };
        let dir = sub.as_ref().unwrap_or(&root.dir);
        let written = write_in(dir, name, header, &records.records, cancelled);
        if written.is_err()
            && let Some(r) = reservation
        {
            r.release();
        }
        written
    }

    /// Writes the file and builds the descriptor. `cancelled` is polled during
    /// the write; a cancelled write leaves no file.
    pub fn offload(
        &self,
        input: OffloadInput<'_>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<OffloadOutput, WriteError> {
        let sample = input.records.head();
        let memories = is_memory_sample(sample);
        let detail = input
            .detail
            .unwrap_or_else(|| infer_detail(sample, memories));
        let header = OffloadHeader::new(
            input.operation,
            input.query.clone(),
            input.records.len(),
            input.estimated_tokens,
            detail,
        );
        let name = OffloadFileName::new(input.operation);
        let started = Instant::now();
        let job = WriteJob {
            principal: &input.principal,
            name: &name,
            header: &header,
            records: input.records,
            cancelled,
        };
        let written = self.write(&job)?;
        let write_duration = started.elapsed();
        let handle = self.sink.is_some().then(|| handle::of(&name));
        // With a store, the handle stands wherever the path would.
        let file_path = handle
            .clone()
            .unwrap_or_else(|| written.path.to_string_lossy().into_owned());

        let recipes = RecipeSet::derive(sample, detail);
        let descriptor = match self.profile {
            DescriptorProfile::Minimal => Descriptor::Minimal(MinimalOffloadResponse {
                offloaded: true,
                file_path: if handle.is_some() {
                    String::new()
                } else {
                    file_path.clone()
                },
                handle: handle.clone(),
                count: header.count,
                detail: header.detail,
            }),
            DescriptorProfile::Full => {
                let example = self
                    .native_extract
                    .then(|| WorkedExample::derive(sample))
                    .flatten();
                let (heading, arrays) = match &input.records.kind {
                    RecordKind::Blocks { heading, .. } => (heading.as_deref(), &[][..]),
                    RecordKind::Arrays { names } => (None, names.as_slice()),
                    _ => (None, &[][..]),
                };
                let guidance = GuidanceInput {
                    count: header.count,
                    tokens: input.estimated_tokens,
                    path: &file_path,
                    location: if handle.is_some() {
                        Location::Handle
                    } else {
                        Location::FilePath
                    },
                    detail,
                    memories,
                    what: &input.records.what,
                    heading,
                    arrays,
                    recipes: &[],
                    style: self.guidance,
                    example: example.as_ref(),
                    brief: false,
                    path_free: false,
                };
                let summary = OffloadSummary {
                    count: header.count,
                    records: (!memories).then(|| input.records.what.to_string()),
                    estimated_tokens: input.estimated_tokens,
                    operation: cut(input.operation),
                    top_namespaces: input
                        .records
                        .top_namespaces(5)
                        .iter()
                        .map(|ns| cut(ns))
                        .collect(),
                    // Scanning every record for a score is only worth it
                    // when the sample shows records carry one.
                    score_range: input.score_range.or_else(|| {
                        sample
                            .iter()
                            .any(|r| r.get("score").is_some())
                            .then(|| input.records.score_range())
                            .flatten()
                    }),
                    detail,
                };
                let schema = |chars| line_schema(input.records, sample, chars);
                // A handle has no file to pipe into jq: each recipe is its
                // jq arguments, run by `lro_extract` as `recipe=N`.
                Descriptor::Full(fit::full(&fit::Parts {
                    summary,
                    file_path: if handle.is_some() {
                        String::new()
                    } else {
                        file_path.clone()
                    },
                    handle: handle.clone(),
                    recipes: &recipes,
                    guidance,
                    native: self.native_extract,
                    schema: &schema,
                }))
            }
        };
        let text = match &descriptor {
            Descriptor::Full(d) => serde_json::to_string(d),
            Descriptor::Minimal(d) => serde_json::to_string(d),
        }
        .expect("descriptors always serialize");
        let created_at = OffsetDateTime::from(name.created_at());
        Ok(OffloadOutput {
            descriptor,
            text,
            result: OffloadedResult {
                path: written.path,
                handle,
                header,
                ttl: self.ttl,
                created_at,
            },
            bytes: written.bytes,
            write_duration,
            recipes,
        })
    }
}

/// The descriptor's line schema: of `sample`, or, for records of several
/// arrays, of the front of each array (the sample may hold the first array
/// only), so that every array's fields are described.
fn line_schema(records: &RecordSet<'_>, sample: &[Value], chars: usize) -> Value {
    match records.kind {
        RecordKind::Arrays { .. } => {
            descriptor_line_schema(&records.spread_sample(SAMPLE_SIZE), chars)
        }
        _ => descriptor_line_schema(sample, chars),
    }
}

/// Detail level from the fields present: nested provenance means full, a
/// flattened confidence or content means medium, otherwise light. Records
/// that are not memories are kept whole, so they count as full.
pub fn infer_detail(sample: &[Value], memories: bool) -> Detail {
    if !memories {
        return Detail::Full;
    }
    let has = |k: &str| sample.iter().any(|r| r.get(k).is_some());
    if has("provenance") {
        Detail::Full
    } else if has("confidence") || has("content") {
        Detail::Medium
    } else {
        Detail::Light
    }
}

/// How many records from the front fit in `budget` tokens. Each record is
/// estimated on its own, which rounds up per record and so errs on the side
/// of staying under the budget.
pub fn records_within_budget(
    records: &RecordSet<'_>,
    budget: usize,
    estimator: &dyn TokenEstimator,
) -> usize {
    let mut used = 0;
    for (i, record) in records.records.iter().enumerate() {
        // One extra token per record for the separator between records.
        used += estimator.estimate(record) + 1;
        if used > budget {
            return i;
        }
    }
    records.len()
}

/// The warning prepended to a truncated result.
pub fn truncation_warning(error: &WriteError, kept: usize, total: usize) -> String {
    format!(
        "WARNING: large result offloading failed ({error}); results are truncated: \
         showing {kept} of {total} records, {} left out. Narrow the query (filters, limit) \
         to see the rest.",
        total - kept
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DescriptorProfile;
    use serde_json::json;

    fn memories(n: usize, detail: Detail) -> String {
        let items: Vec<Value> = (0..n)
            .map(|i| {
                let mut m = json!({"id": format!("m{i}"), "title": format!("Title {i}"),
                    "namespace": if i % 3 == 0 { "_semantic/knowledge" } else { "_episodic/sessions" },
                    "memory_type": "semantic", "tags": ["t"], "created": "2025-01-01"});
                if detail != Detail::Light {
                    m["content"] = json!("content");
                }
                if detail == Detail::Medium {
                    m["confidence"] = json!(0.5);
                }
                if detail == Detail::Full {
                    m["provenance"] = json!({"confidence": 0.5});
                }
                m
            })
            .collect();
        serde_json::to_string(&items).unwrap()
    }

    #[test]
    fn full_descriptor_has_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let text = memories(30, Detail::Medium);
        let records = RecordSet::from_text(&text);
        let out = Offloader::new(dir.path())
            .offload(
                OffloadInput::new("list_memories", "list", &records, 2000),
                &|| false,
            )
            .unwrap();
        let Descriptor::Full(d) = &out.descriptor else {
            panic!("expected full descriptor")
        };
        assert_eq!(d.summary.detail, Detail::Medium);
        assert_eq!(
            d.summary.top_namespaces,
            ["_episodic/sessions", "_semantic/knowledge"]
        );
        assert_eq!(d.jq_recipes.len(), 10);
        assert!(d.guidance.contains("Detail level: medium"));
        assert!(d.file_path.ends_with(".jsonl"));
        // Memories get the spec's summary: no word on what the records are.
        assert_eq!(d.summary.records, None);
        assert!(!out.text.contains("\"records\""), "{}", out.text);
        let written = std::fs::read_to_string(&out.result.path).unwrap();
        assert_eq!(written.lines().count(), 31);
    }

    /// The full descriptor of `text`'s records offloaded into a fresh
    /// directory by `tool` (also its operation), `tokens` large.
    fn full_descriptor(text: &str, tool: &str, tokens: usize) -> OffloadResponse {
        let dir = tempfile::tempdir().unwrap();
        let records = RecordSet::from_text(text);
        let out = Offloader::new(dir.path())
            .offload(OffloadInput::new(tool, tool, &records, tokens), &|| false)
            .unwrap();
        match out.descriptor {
            Descriptor::Full(d) => d,
            Descriptor::Minimal(_) => panic!("expected full descriptor"),
        }
    }

    #[test]
    fn other_records_are_named_in_the_summary_and_the_guidance() {
        let log: String = (0..40)
            .map(|i| {
                format!(
                    "Commit: {i:040x}\nAuthor: Dev {}\nMessage: fix {i}\n\n",
                    i % 3
                )
            })
            .collect();
        let d = full_descriptor(&format!("Commit history:\n{log}"), "git_log", 2000);
        assert_eq!(d.summary.records.as_deref(), Some("commits"));
        assert_eq!(d.summary.count, 40);
        assert!(
            d.guidance.contains("(40 commits, ~2000 tokens saved)"),
            "{}",
            d.guidance
        );
        assert!(d.guidance.contains("\"Commit history:\""), "{}", d.guidance);
        // The guidance names the recipes it points at.
        assert!(d.guidance.contains(&d.jq_recipes[0].description));
    }

    #[test]
    fn records_of_several_arrays_are_named_with_the_field_that_tells_them_apart() {
        // More entities than a sample holds, so only the schema's spread
        // sample sees a relation.
        let entities: Vec<Value> = (0..40)
            .map(|i| json!({"name": format!("e{i}"), "entityType": "person"}))
            .collect();
        let graph = json!({"entities": entities, "relations": [{"from": "e0", "to": "e1"}]});
        let d = full_descriptor(
            &serde_json::to_string_pretty(&graph).unwrap(),
            "read_graph",
            900,
        );
        assert_eq!(d.summary.records.as_deref(), Some("entities and relations"));
        assert_eq!(d.summary.count, 41);
        assert!(
            d.guidance
                .contains("Field \"array\" names each one's array: entities (40), relations (1)."),
            "{}",
            d.guidance
        );
        let props = &d.line_schema["properties"];
        assert_eq!(props["array"], json!({"type": "string"}));
        assert!(
            props.get("entityType").is_some() && props.get("from").is_some(),
            "{props}"
        );
    }

    #[test]
    fn minimal_profile_is_a_bare_pointer() {
        let dir = tempfile::tempdir().unwrap();
        let text = memories(5, Detail::Light);
        let records = RecordSet::from_text(&text);
        let out = Offloader::new(dir.path())
            .profile(DescriptorProfile::Minimal)
            .offload(OffloadInput::new("t", "t", &records, 10), &|| false)
            .unwrap();
        let v: Value = serde_json::from_str(&out.text).unwrap();
        assert_eq!(
            v,
            json!({"offloaded": true, "file_path": out.result.path.to_string_lossy(), "count": 5, "detail": "light"})
        );
    }

    #[test]
    fn detail_inference() {
        for d in Detail::ALL {
            let text = memories(2, d);
            let sample: Vec<Value> = serde_json::from_str(&text).unwrap();
            assert_eq!(infer_detail(&sample, true), d);
        }
    }

    #[test]
    fn budget_cuts_at_record_boundaries() {
        let text = serde_json::to_string(&vec!["x".repeat(38); 10]).unwrap();
        let records = RecordSet::from_text(&text);
        // Each record is 40 chars = 10 tokens + 1 separator.
        assert_eq!(records_within_budget(&records, 33, &()), 3);
        assert_eq!(records_within_budget(&records, 1000, &()), 10);
        assert_eq!(records_within_budget(&records, 5, &()), 0);
    }
}
