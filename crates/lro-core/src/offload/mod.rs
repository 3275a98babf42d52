//! The offload pipeline, free of any transport and of any file system:
//! records in, descriptor out, the bytes written through an
//! [`ObjectSink`] (lro-store's `DirSink` for the local directory, its
//! `BlockingSink` for an object store); and the truncation used when the
//! write fails (`truncate.rs`).
//!
//! ```
//! # use std::sync::{Arc, Mutex};
//! # use lro_core::object::{ObjectError, ObjectSink, ObjectWriter};
//! # #[derive(Debug, Default)]
//! # struct Memory(Arc<Mutex<Vec<u8>>>);
//! # struct W(Arc<Mutex<Vec<u8>>>);
//! # impl ObjectWriter for W {
//! #     fn write(&mut self, chunk: Vec<u8>) -> Result<(), ObjectError> { self.0.lock().unwrap().extend(chunk); Ok(()) }
//! #     fn finish(self: Box<Self>) -> Result<u64, ObjectError> { Ok(self.0.lock().unwrap().len() as u64) }
//! #     fn abort(self: Box<Self>) {}
//! # }
//! # impl ObjectSink for Memory {
//! #     fn create(&self, _: &str, _: u64) -> Result<Box<dyn ObjectWriter>, ObjectError> { Ok(Box::new(W(self.0.clone()))) }
//! #     fn chunk_size(&self) -> usize { 1024 }
//! # }
//! use lro_core::{offload::{Offloader, OffloadInput}, records::RecordSet};
//!
//! // `Memory`: an object store kept in memory (see `lro_core::object`).
//! let store = Memory::default();
//! let bytes = store.0.clone();
//! let offloader = Offloader::new(store);
//! let text = serde_json::to_string(&(0..50).map(|i| serde_json::json!({"n": i, "msg": "hello"})).collect::<Vec<_>>()).unwrap();
//! let records = RecordSet::from_text(&text);
//! let out = offloader
//!     .offload(OffloadInput::new("fetch_logs", "fetch_logs", &records, 500), &|| false)
//!     .unwrap();
//! assert!(out.result.handle.as_deref().unwrap().starts_with("lro:fetch_logs-"));
//! assert_eq!(out.result.header.count, 50);
//! assert_eq!(bytes.lock().unwrap().len() as u64, out.bytes);
//! assert!(out.text.contains("\"offloaded\":true"));
//! ```

mod input;
#[cfg(test)]
#[path = "../../tests/support/sink.rs"]
mod test_sink;
mod truncate;
mod write;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::Value;
use time::OffsetDateTime;

use crate::{
    config::DescriptorProfile,
    descriptor::{
        Detail, GuidanceInput, GuidanceStyle, Location, MinimalOffloadResponse, OffloadHeader,
        OffloadSummary, OffloadedResult,
    },
    example::WorkedExample,
    file::{OffloadFileName, WriteError},
    fit, handle,
    object::ObjectSink,
    quote::cut,
    recipes::{RecipeSet, SAMPLE_SIZE, is_memory_sample},
    records::{RecordKind, RecordSet},
    schema::descriptor_line_schema,
};
pub use input::{Descriptor, OffloadInput, OffloadOutput};
pub use truncate::{records_within_budget, truncation_warning};
pub use write::write_object;

/// Builds descriptors and writes results through its [`ObjectSink`].
///
/// Clones share the sink (and so, for the local directory, its open handle
/// and quota ledger).
#[derive(Debug, Clone)]
pub struct Offloader {
    ttl: Duration,
    profile: DescriptorProfile,
    native_extract: bool,
    guidance: GuidanceStyle,
    sink: Arc<dyn ObjectSink>,
}

impl Offloader {
    /// Writes through `sink`, TTL one hour, full profile, the spec's shell
    /// guidance for a local sink (`lro_extract`'s otherwise).
    pub fn new(sink: impl ObjectSink + 'static) -> Self {
        Self {
            ttl: Duration::from_secs(crate::config::DEFAULT_TTL_SECONDS),
            profile: DescriptorProfile::Full,
            native_extract: false,
            guidance: GuidanceStyle::Spec,
            sink: Arc::new(sink),
        }
        .checked_native()
    }

    /// Writes through `sink` instead. A sink that is not local (an object
    /// store) makes the descriptor carry a handle (see [`handle`]) where it
    /// carried the path, and its guidance `lro_extract`'s, since there is
    /// no file to pipe into `jq`.
    #[must_use]
    pub fn sink(self, sink: Arc<dyn ObjectSink>) -> Self {
        Self { sink, ..self }.checked_native()
    }

    /// `lro_extract`'s guidance when results have no path.
    fn checked_native(mut self) -> Self {
        self.native_extract |= !self.sink.is_local();
        self
    }

    /// Whether results go to an object store (see [`Offloader::sink`]).
    pub fn is_remote(&self) -> bool {
        !self.sink.is_local()
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
        self.native_extract = on;
        self.checked_native()
    }

    /// Sets how much the guidance says. Defaults to [`GuidanceStyle::Spec`]
    /// (the spec's templates).
    #[must_use]
    pub fn guidance(mut self, style: GuidanceStyle) -> Self {
        self.guidance = style;
        self
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
        // The principal's folder, then the name: the same layout in the
        // directory and in a store.
        let key = handle::key(&input.principal, &name);
        let written = write_object(
            &*self.sink,
            &key,
            &header,
            &input.records.records,
            cancelled,
        )?;
        let write_duration = started.elapsed();
        let handle = self.is_remote().then(|| handle::of(&name));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{config::DescriptorProfile, descriptor::OffloadResponse};
    use serde_json::json;
    use test_sink::Files;

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
        let out = Offloader::new(Files(dir.path().to_owned()))
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
        let out = Offloader::new(Files(dir.path().to_owned()))
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
        let out = Offloader::new(Files(dir.path().to_owned()))
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
}
