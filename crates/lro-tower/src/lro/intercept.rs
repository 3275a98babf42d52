//! The inline-or-offload decision for one tool result.

use std::{
    borrow::Cow,
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use lro_core::{
    Detail, RecordSet, TokenEstimator,
    error::chain,
    event::{self, LroEvent, OffloadWriteFailed, Offloaded, ToolOutcome, ToolResult},
    file::WriteError,
    metric::label::WriteFailureReason,
    object::ObjectError,
    offload::{OffloadInput, OffloadOutput, records_within_budget, truncation_warning},
    principal::Principal,
    records::RecordKind,
};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ResourceContents};
use serde_json::{Value, value::RawValue};
use tokio_util::sync::CancellationToken;

use super::{shared::Shared, tools::Listing};
use crate::scope::ScopeHints;

/// The result of [`Shared::process`].
pub(crate) struct Processed {
    pub(crate) result: CallToolResult,
    pub(crate) decision: ToolOutcome,
    pub(crate) estimated_tokens: usize,
    pub(crate) records: usize,
}

impl Processed {
    fn unchanged(result: CallToolResult, decision: ToolOutcome, estimated_tokens: usize) -> Self {
        Self {
            result,
            decision,
            estimated_tokens,
            records: 0,
        }
    }
}

/// Whether a text block already carries `structured`: its exact JSON text
/// (what `CallToolResult::structured` writes), the same JSON value in other
/// whitespace, or the text itself wrapped in an object of one field, as the
/// official Python SDK sends a `str` return (`{"result": text}`) and the
/// reference filesystem server its answers (`{"content": text}`).
fn carries(text: &str, structured: &Value, json: &str) -> bool {
    if text == json {
        return true;
    }
    if let Value::Object(map) = structured
        && map.len() == 1
        && let Some(Value::String(wrapped)) = map.values().next()
        && wrapped == text
    {
        return true;
    }
    let trimmed = text.trim_start();
    (trimmed.starts_with('{') || trimmed.starts_with('['))
        && serde_json::from_str::<Value>(text).is_ok_and(|v| {
            &v == structured
                || matches!(structured, Value::Object(m) if m.len() == 1 && m.get("result") == Some(&v))
        })
}

/// The text a model would read from a result: text blocks, embedded text
/// resources, and structured content unless a text block already carries it
/// (see [`carries`]), so one payload is counted once.
/// Images and audio are binary: they are neither counted nor offloaded.
fn readable_parts(result: &CallToolResult) -> (Vec<&str>, Option<String>) {
    let mut parts = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.as_str()),
            ContentBlock::Resource(r) => {
                if let ResourceContents::TextResourceContents { text, .. } = &r.resource {
                    parts.push(text.as_str());
                }
            }
            _ => {}
        }
    }
    let structured = result.structured_content.as_ref().and_then(|v| {
        let json = serde_json::to_string(v).ok()?;
        (!parts.iter().any(|p| carries(p, v, &json))).then_some(json)
    });
    (parts, structured)
}

/// The result's tokens, for the comparison with `threshold`: an exact
/// estimator is consulted only near it.
fn estimate_readable(
    estimator: &dyn TokenEstimator,
    parts: &[&str],
    structured: Option<&String>,
    threshold: usize,
) -> usize {
    let mut all = parts.to_vec();
    all.extend(structured.map(String::as_str));
    estimator.estimate_against(&all, threshold)
}

impl Shared {
    pub(crate) fn enabled_for(&self, tool: &str) -> bool {
        self.cfg.enabled_for(tool)
    }

    /// A result left as it is (proxy client, offloading off): counted the
    /// same way as any other, so the size histogram stays comparable.
    pub(crate) fn bypass(&self, tool: &str, result: CallToolResult) -> Processed {
        let (parts, structured) = readable_parts(&result);
        let tokens = estimate_readable(
            &*self.estimator,
            &parts,
            structured.as_ref(),
            self.cfg.threshold_for(tool),
        );
        Processed::unchanged(result, ToolOutcome::Bypassed, tokens)
    }

    /// Decides and, when over the threshold, offloads into the caller's own
    /// folder. Never fails: a write problem becomes a truncated inline result
    /// with a warning.
    pub(crate) async fn process(
        self: &Arc<Self>,
        tool: &str,
        arguments: Option<&JsonObject>,
        result: CallToolResult,
        hints: ScopeHints,
        call: Call<'_>,
    ) -> Processed {
        let Call {
            principal,
            ct,
            shadowed,
            listing,
        } = call;
        if result.is_error == Some(true) {
            // Errors are for the model to read in full; they are never offloaded.
            return Processed::unchanged(result, ToolOutcome::Inline, 0);
        }
        let threshold = self.cfg.threshold_for(tool);
        let (payload, estimated_tokens) = {
            let (parts, structured) = readable_parts(&result);
            match &hints.full_result {
                Some(full) => (None, self.estimator.estimate_against(&[full], threshold)),
                None => {
                    let tokens =
                        estimate_readable(&*self.estimator, &parts, structured.as_ref(), threshold);
                    let payload = match (&result.structured_content, parts.as_slice()) {
                        (Some(v), _) if RecordSet::structured_kind(v).is_some() => {
                            Some(Payload::Structured(v.clone()))
                        }
                        (_, [one]) => Some(Payload::Text((*one).to_owned())),
                        (_, []) => None,
                        (_, many) => Some(Payload::Text(many.join("\n"))),
                    };
                    (payload, tokens)
                }
            }
        };
        if estimated_tokens <= threshold {
            return Processed::unchanged(result, ToolOutcome::Inline, estimated_tokens);
        }
        let payload = match (hints.full_result.clone(), payload) {
            (Some(full), _) => Payload::Text(full),
            (None, Some(p)) => p,
            // Over the threshold with nothing readable: only binary content.
            (None, None) => {
                return Processed::unchanged(result, ToolOutcome::Inline, estimated_tokens);
            }
        };

        let operation = hints
            .operation
            .clone()
            .unwrap_or_else(|| self.cfg.operation_for(tool));
        let query = hints.query.clone().or_else(|| {
            arguments
                .and_then(|a| a.get("query"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let detail = hints.detail.or_else(|| {
            arguments
                .and_then(|a| a.get("detail"))
                .and_then(Value::as_str)
                .and_then(|d| d.parse::<Detail>().ok())
        });
        let job = Job {
            tool: tool.to_owned(),
            operation: operation.clone(),
            query,
            detail,
            score_range: hints.score_range,
            shadowed,
            estimated_tokens,
            threshold,
            payload,
            principal: principal.clone(),
        };

        let cancel = Arc::new(AtomicBool::new(false));
        let shared = self.clone();
        let flag = cancel.clone();
        let mut handle = tokio::task::spawn_blocking(move || shared.run_job(job, &flag));
        let outcome = tokio::select! {
            joined = &mut handle => joined,
            () = ct.cancelled() => {
                // Let the writer see the flag and remove its temp file before we return.
                cancel.store(true, Ordering::Relaxed);
                handle.await
            }
        };
        let outcome = match outcome {
            Ok(o) => o,
            Err(join) => JobOutcome::Failed {
                error: WriteError::Write {
                    path: self.output_dir.clone(),
                    source: std::io::Error::other(format!("offload task failed: {join}")),
                },
                truncated: None,
                kept: 0,
                total: 0,
            },
        };
        match outcome {
            JobOutcome::Offloaded { out, records } => {
                if ct.is_cancelled() {
                    // The rename won the race against cancellation: nobody will
                    // read this result, so do not leave it behind.
                    match (
                        &self.remote,
                        lro_store::Key::new(out.result.path.to_string_lossy()),
                    ) {
                        (Some(remote), Ok(key)) if out.result.handle.is_some() => {
                            if let Err(err) = remote.store.delete(&key).await {
                                tracing::debug!(error = %chain(&err), "a cancelled offload's object stays until cleanup");
                            }
                        }
                        _ => {
                            let _ = std::fs::remove_file(&out.result.path);
                        }
                    }
                    return Processed::unchanged(result, ToolOutcome::Inline, estimated_tokens);
                }
                let descriptor_tokens = self.estimator.estimate(&out.text);
                let offloaded = Offloaded::new(
                    tool,
                    out.result.header.operation.clone(),
                    out.result.path.clone(),
                )
                .records(records)
                .bytes(out.bytes)
                .estimated_tokens(estimated_tokens)
                .descriptor_tokens(descriptor_tokens)
                .write_duration(out.write_duration);
                event::emit(&*self.sink, LroEvent::Offloaded(offloaded));
                Processed {
                    result: offloaded_result(&out, result.meta, listing.declares_output(tool)),
                    decision: ToolOutcome::Offloaded,
                    estimated_tokens,
                    records,
                }
            }
            JobOutcome::Failed {
                error,
                truncated,
                kept,
                total,
            } => {
                if matches!(error, WriteError::Cancelled) {
                    return Processed::unchanged(result, ToolOutcome::Inline, estimated_tokens);
                }
                let failed = OffloadWriteFailed::new(
                    tool,
                    operation,
                    chain(&error).to_string(),
                    error.reason(),
                )
                .records_total(total)
                .records_kept(kept);
                event::emit(&*self.sink, LroEvent::OffloadWriteFailed(failed));
                let warning = truncation_warning(&error, kept, total);
                let mut content = vec![ContentBlock::text(warning)];
                content.extend(truncated.map(ContentBlock::text));
                // Binary blocks were never counted against the threshold; keep them.
                content.extend(
                    result
                        .content
                        .iter()
                        .filter(|b| matches!(b, ContentBlock::Image(_) | ContentBlock::Audio(_)))
                        .cloned(),
                );
                let mut out = CallToolResult::success(content);
                out.meta = result.meta;
                Processed {
                    result: out,
                    decision: ToolOutcome::Truncated,
                    estimated_tokens,
                    records: total,
                }
            }
        }
    }

    fn run_job(&self, job: Job, cancel: &AtomicBool) -> JobOutcome {
        let text;
        let records = match &job.payload {
            Payload::Structured(v) => {
                RecordSet::from_structured(v).expect("checked to hold an array before offloading")
            }
            Payload::Text(t) => {
                text = t;
                RecordSet::from_text(text)
            }
        };
        let input = OffloadInput::new(&job.tool, &job.operation, &records, job.estimated_tokens)
            .query(job.query.clone())
            .detail(job.detail)
            .score_range(job.score_range)
            .principal(job.principal.clone());
        let shell;
        let offloader = if job.shadowed {
            shell = self.offloader.clone().native_extract(false);
            &shell
        } else {
            &self.offloader
        };
        // A stored result is read only through the layer's own lro_extract:
        // with none, or the server's own in its place, nothing could read it.
        let offloaded = if self.remote.is_some() && (job.shadowed || self.extractor.is_none()) {
            Err(WriteError::Store(ObjectError::new(
                WriteFailureReason::StoreOther,
                "cannot store the offload object: results in the shared store are read only with \
                 this layer's lro_extract, which this server does not offer",
                None,
            )))
        } else {
            offloader.offload(input, &|| cancel.load(Ordering::Relaxed))
        };
        match offloaded {
            Ok(out) => JobOutcome::Offloaded {
                out: Box::new(out),
                records: records.len(),
            },
            Err(error) => {
                let total = records.len();
                // The warning itself costs tokens; keep it inside the threshold too.
                let warning_budget = 80;
                let budget = job.threshold.saturating_sub(warning_budget);
                let kept = records_within_budget(&records, budget, &*self.estimator);
                let truncated = rebuild_truncated(&job.payload, &records, kept);
                JobOutcome::Failed {
                    error,
                    truncated: Some(truncated),
                    kept,
                    total,
                }
            }
        }
    }
}

/// Who made the call and how it stands: what [`Shared::process`] needs
/// besides the result.
pub(crate) struct Call<'a> {
    /// Whose folder an offload goes to.
    pub(crate) principal: &'a Principal,
    /// Cancelled when the client cancels the request.
    pub(crate) ct: &'a CancellationToken,
    /// The inner server has a tool named `lro_extract`, so the guidance
    /// points at the jq recipes instead of ours.
    pub(crate) shadowed: bool,
    /// What the layer learned of the inner tools: whether a tool declared
    /// an `outputSchema`, so that its descriptor goes out as
    /// `structuredContent` too.
    pub(super) listing: &'a Listing,
}

enum Payload {
    Structured(Value),
    Text(String),
}

struct Job {
    tool: String,
    operation: String,
    query: Option<String>,
    detail: Option<Detail>,
    score_range: Option<(f64, f64)>,
    shadowed: bool,
    estimated_tokens: usize,
    threshold: usize,
    payload: Payload,
    principal: Principal,
}

enum JobOutcome {
    Offloaded {
        out: Box<OffloadOutput>,
        records: usize,
    },
    Failed {
        error: WriteError,
        truncated: Option<String>,
        kept: usize,
        total: usize,
    },
}

/// The first `kept` records in the shape the tool returned them.
fn rebuild_truncated(payload: &Payload, records: &RecordSet<'_>, kept: usize) -> String {
    let head = || records.records[..kept].join(",");
    match (&records.kind, payload) {
        (RecordKind::JsonArray, _) => format!("[{}]", head()),
        (RecordKind::ObjectField { field }, _) => {
            with_arrays(payload, [(field.clone(), format!("[{}]", head()))])
        }
        // Each array keeps its records among the first `kept`, untagged.
        (RecordKind::Arrays { names }, _) => {
            let kept =
                lro_core::records::untag(names, records.records[..kept].iter().map(|r| &**r));
            with_arrays(
                payload,
                kept.into_iter()
                    .map(|(name, items)| (name, Value::Array(items).to_string())),
            )
        }
        (RecordKind::JsonLines, _) => records.records[..kept].join("\n"),
        // As the records were split: at `\n`, a `\r` before it kept.
        (RecordKind::TextLines, Payload::Text(text)) => text
            .split_terminator('\n')
            .take(kept)
            .collect::<Vec<_>>()
            .join("\n"),
        (RecordKind::Blocks { start, .. }, Payload::Text(text)) => {
            lro_core::records::leading_blocks(text, start, kept).to_owned()
        }
        // The nesting is gone: the kept nodes, each with its path.
        (RecordKind::Tree { .. }, _) => format!("[{}]", head()),
        (RecordKind::TextLines | RecordKind::Blocks { .. }, Payload::Structured(_)) => {
            String::new()
        }
    }
}

/// The tool's object with each array field in `arrays` replaced by the
/// given JSON text, its other fields (totals, cursors) as the tool wrote
/// them; only the arrays when the text is no object.
fn with_arrays(payload: &Payload, arrays: impl IntoIterator<Item = (String, String)>) -> String {
    let arrays: BTreeMap<String, String> = arrays.into_iter().collect();
    let object = |map: BTreeMap<Cow<'_, str>, String>| {
        let fields: Vec<String> = map
            .iter()
            .map(|(k, v)| {
                let key = serde_json::to_string(k).expect("str serializes");
                let value = arrays.get(k.as_ref()).unwrap_or(v);
                format!("{key}:{value}")
            })
            .collect();
        format!("{{{}}}", fields.join(","))
    };
    match payload {
        Payload::Text(text) => {
            match serde_json::from_str::<BTreeMap<Cow<'_, str>, &RawValue>>(text) {
                Ok(map) => object(
                    map.into_iter()
                        .map(|(k, v)| (k, v.get().to_owned()))
                        .collect(),
                ),
                // Not an object after all: the arrays alone, as before.
                Err(_) => arrays.into_values().next().unwrap_or_default(),
            }
        }
        Payload::Structured(Value::Object(map)) => object(
            map.iter()
                .map(|(k, v)| (Cow::Borrowed(k.as_str()), v.to_string()))
                .collect(),
        ),
        Payload::Structured(_) => object(BTreeMap::new()),
    }
}

/// The offloaded tool result: the descriptor as JSON text (what the model
/// reads) and, only for a tool that declared an `outputSchema`, the same
/// object as structured content, as the spec asks of such a tool; for any
/// other, a second copy would only cost the model twice. No
/// `resource_link` to the file: a client follows one with
/// `resources/read`, which the inner server answers (it does not know the
/// file), and serving it here would put the whole result into the context
/// the offload kept it out of. `file_path` is the way in, with a shell or
/// `lro_extract`.
fn offloaded_result(
    out: &OffloadOutput,
    meta: Option<rmcp::model::MetaObject>,
    structured: bool,
) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(out.text.clone())]);
    if structured {
        result.structured_content = serde_json::from_str(&out.text).ok();
    }
    result.meta = meta;
    result
}

impl Shared {
    /// Reports what happened to one tool result: the [`ToolResult`] event,
    /// and through it the result metrics.
    pub(crate) fn report(&self, tool: &str, processed: &Processed) {
        let e = ToolResult::new(tool, processed.decision, processed.estimated_tokens)
            .records(processed.records);
        event::emit(&*self.sink, LroEvent::ToolResult(e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lro_core::OffloadConfig;

    fn shared(dir: &std::path::Path) -> Arc<Shared> {
        let cfg = OffloadConfig::default()
            .threshold_tokens(100)
            .output_dir(dir)
            .extract(false);
        let mut shared = Shared::new(cfg);
        shared.set_estimator(Arc::new(()));
        Arc::new(shared)
    }

    fn big_result() -> CallToolResult {
        let items: Vec<Value> = (0..5000)
            .map(|i| serde_json::json!({"i": i, "pad": "p".repeat(50)}))
            .collect();
        CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string(&items).unwrap(),
        )])
    }

    #[test]
    fn one_payload_sent_twice_is_counted_once() {
        let text = "line one\nline two";
        let mut python_str = CallToolResult::success(vec![ContentBlock::text(text)]);
        python_str.structured_content = Some(serde_json::json!({"result": text}));
        assert!(readable_parts(&python_str).1.is_none());
        let pretty = "{\n  \"a\": [1, 2]\n}";
        let mut python_dict = CallToolResult::success(vec![ContentBlock::text(pretty)]);
        python_dict.structured_content = Some(serde_json::json!({"a": [1, 2]}));
        assert!(readable_parts(&python_dict).1.is_none());
        // A dict `{"result": "x"}` returned as such: pretty-printed text.
        let mut python_result_dict =
            CallToolResult::success(vec![ContentBlock::text("{\n  \"result\": \"x\"\n}")]);
        python_result_dict.structured_content = Some(serde_json::json!({"result": "x"}));
        assert!(readable_parts(&python_result_dict).1.is_none());
        let mut python_list = CallToolResult::success(vec![ContentBlock::text("[1, 2]")]);
        python_list.structured_content = Some(serde_json::json!({"result": [1, 2]}));
        assert!(readable_parts(&python_list).1.is_none());
        let mut typescript_str = CallToolResult::success(vec![ContentBlock::text(text)]);
        typescript_str.structured_content = Some(serde_json::json!({"content": text}));
        assert!(readable_parts(&typescript_str).1.is_none());
        let mut different = CallToolResult::success(vec![ContentBlock::text(text)]);
        different.structured_content = Some(serde_json::json!({"result": "other"}));
        assert_eq!(
            readable_parts(&different).1.as_deref(),
            Some(r#"{"result":"other"}"#)
        );
    }

    #[test]
    fn a_truncated_object_keeps_its_other_fields_in_text_and_structured_content() {
        let object = r#"{"total":3,"items":[{"x":1},{"x":2},{"x":3}],"next":null}"#;
        let graph = r#"{"total":3,"relations":[{"f":"a"}],"entities":[{"n":"a"},{"n":"b"}]}"#;
        for (text, kept, want) in [
            (
                object,
                2,
                r#"{"items":[{"x":1},{"x":2}],"next":null,"total":3}"#,
            ),
            (
                graph,
                1,
                r#"{"entities":[{"n":"a"}],"relations":[],"total":3}"#,
            ),
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            let structured = RecordSet::from_structured(&value).unwrap();
            let payload = Payload::Structured(value);
            assert_eq!(rebuild_truncated(&payload, &structured, kept), want);
            let payload = Payload::Text(text.to_owned());
            let from_text = RecordSet::from_text(text);
            assert_eq!(rebuild_truncated(&payload, &from_text, kept), want);
        }
    }

    #[test]
    fn truncated_lines_keep_their_bytes() {
        let text = "a\r\nb\r\n\r\n\nc d\r\n";
        let records = RecordSet::from_text(text);
        assert_eq!(records.kind, RecordKind::TextLines);
        let payload = Payload::Text(text.to_owned());
        assert_eq!(rebuild_truncated(&payload, &records, 4), "a\r\nb\r\n\r\n");
        assert_eq!(
            rebuild_truncated(&payload, &records, 5),
            "a\r\nb\r\n\r\n\nc d\r"
        );
    }

    #[tokio::test]
    async fn a_cancelled_request_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let ct = CancellationToken::new();
        ct.cancel();
        let p = shared(dir.path())
            .process(
                "t",
                None,
                big_result(),
                ScopeHints::default(),
                Call {
                    principal: &Principal::anonymous(),
                    ct: &ct,
                    shadowed: false,
                    listing: &Listing::default(),
                },
            )
            .await;
        assert_eq!(p.decision, ToolOutcome::Inline);
        assert_eq!(
            std::fs::read_dir(dir.path())
                .map(|d| d.count())
                .unwrap_or(0),
            0
        );
    }

    #[tokio::test]
    async fn scope_hints_decide_what_is_offloaded() {
        let dir = tempfile::tempdir().unwrap();
        // The tool returned a small, budgeted text, but handed over 5000 records.
        let small = CallToolResult::success(vec![ContentBlock::text("budgeted summary")]);
        let items: Vec<Value> = (0..5000).map(|i| serde_json::json!({"i": i})).collect();
        let hints = ScopeHints {
            full_result: Some(serde_json::to_string(&items).unwrap()),
            detail: Some(Detail::Medium),
            query: Some("q".into()),
            operation: Some("inject".into()),
            score_range: Some((0.1, 0.9)),
        };
        let p = shared(dir.path())
            .process(
                "inject_context",
                None,
                small,
                hints,
                Call {
                    principal: &Principal::anonymous(),
                    ct: &CancellationToken::new(),
                    shadowed: false,
                    listing: &Listing::default(),
                },
            )
            .await;
        assert_eq!(p.decision, ToolOutcome::Offloaded);
        let d: Value = serde_json::from_str(&p.result.content[0].as_text().unwrap().text).unwrap();
        assert_eq!(d["summary"]["count"], 5000);
        assert_eq!(d["summary"]["operation"], "inject");
        assert_eq!(d["summary"]["detail"], "medium");
        assert_eq!(d["summary"]["score_range"], serde_json::json!([0.1, 0.9]));
        assert!(d["file_path"].as_str().unwrap().contains("atlatl-inject-"));
    }
}
