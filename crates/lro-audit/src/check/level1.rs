//! Level 1 (Basic): "MUST support threshold detection and JSONL output.
//! Descriptor contains file reference and summary statistics."

use std::{path::Path, sync::LazyLock};

use regex::Regex;
use serde_json::{Map, Value};

use super::{Verdict, count, fail, over_files, over_offloads, pass, skip};
use crate::{
    evidence::{Evidence, MIN_RECORDS},
    probe::{DETAILS, SPEC_TOOLS},
    result,
    target::Outcome,
};

/// Why threshold checks cannot run on a URL target.
const NEEDS_CONTROL: &str =
    "needs control of the server's threshold: launch it with `lro audit -- COMMAND`";

/// The audit needs calls to make. "LRO applies to the following MCP
/// tools: recall_memories, inject_context, list_memories, search queries";
/// other servers name theirs with `--probe`. Every call must succeed.
pub(super) fn probes(ev: &Evidence) -> Verdict {
    if ev.calls.is_empty() {
        let names: Vec<_> = SPEC_TOOLS.iter().map(|(t, _)| *t).collect();
        let mut why = format!(
            "the server lists none of {}; name calls with --probe 'TOOL {{json args}}'",
            names.join(", ")
        );
        for left in &ev.left_out {
            why.push_str("; ");
            why.push_str(left);
        }
        return fail(why);
    }
    for (i, call) in ev.calls.iter().enumerate() {
        match &ev.measured[i] {
            Outcome::Error(e) => return fail(format!("{call} failed: {e}")),
            Outcome::Result(v) if result::is_error(v) => {
                let text = result::texts(v).join(" ");
                return fail(format!(
                    "{call} returned a tool error: {}",
                    result::excerpt(&text, 200)
                ));
            }
            Outcome::Result(_) => {}
        }
    }
    let names: Vec<String> = ev.calls.iter().map(ToString::to_string).collect();
    pass(format!(
        "{}: {}",
        count(names.len(), "call"),
        names.join(", ")
    ))
}

/// "The threshold is evaluated against the total result set, not
/// individual memories. [...] many small memories exceeding the threshold
/// collectively are offloaded." Judged on the smallest inline result of at
/// least ten records, with the threshold at half its size; every other
/// result clearly over that threshold must be offloaded too.
pub(super) fn threshold_aggregate(ev: &Evidence) -> Verdict {
    if !ev.launched {
        return skip(NEEDS_CONTROL);
    }
    let (Some(b), Some(t)) = (ev.boundary, ev.t_lo) else {
        return skip(format!(
            "no call returned an inline result of at least {MIN_RECORDS} records; name one with --probe"
        ));
    };
    let Some(measured) = ev.measured_ok(b) else {
        return skip("the boundary call failed");
    };
    let records = result::records(measured);
    let largest = records
        .iter()
        .map(|r| result::tokens_of_chars(r.to_string().chars().count()))
        .max()
        .unwrap_or(0);
    let total = result::tokens(measured);
    let call = &ev.calls[b];
    let seen = format!(
        "{call}: {} records of at most {largest} tokens each, {total} in all,",
        records.len()
    );
    if largest * 2 > t {
        return skip(format!(
            "{seen} too large each to tell the aggregate rule at threshold_tokens = {t}"
        ));
    }
    match ev.at_lo.get(b) {
        None => fail(format!(
            "the server did not answer at threshold_tokens = {t}"
        )),
        Some(Outcome::Error(e)) => fail(format!("{call} failed at threshold_tokens = {t}: {e}")),
        Some(Outcome::Result(r)) if !result::is_offload(r) => fail(format!(
            "{seen} returned inline at threshold_tokens = {t}: the threshold is not applied to the aggregate"
        )),
        Some(Outcome::Result(_)) => {
            // Others clearly over the threshold (by a quarter, for
            // estimates that count differently) must be offloaded too.
            let missed: Vec<String> = (0..ev.calls.len())
                .filter(|&i| {
                    let over = ev.measured_ok(i).is_some_and(|v| result::tokens(v) > t + t / 4);
                    let inline = matches!(ev.at_lo.get(i), Some(Outcome::Result(r)) if !result::is_offload(r) && !result::is_error(r));
                    over && inline
                })
                .map(|i| {
                    let size = ev.measured_ok(i).map_or(0, result::tokens);
                    format!("{} ({size} tokens)", ev.calls[i])
                })
                .collect();
            if missed.is_empty() {
                pass(format!("{seen} offloaded at threshold_tokens = {t}"))
            } else {
                fail(format!(
                    "inline at threshold_tokens = {t} although over it: {}",
                    missed.join(", ")
                ))
            }
        }
    }
}

/// "If estimated_tokens <= threshold_tokens, return results inline as
/// usual": the answer is the one the server gives with no threshold in
/// reach, unchanged.
pub(super) fn threshold_inline(ev: &Evidence) -> Verdict {
    if !ev.launched {
        return skip(NEEDS_CONTROL);
    }
    let (Some(b), Some((t, outcome))) = (ev.boundary, &ev.at) else {
        return skip(format!(
            "no call returned an inline result of at least {MIN_RECORDS} records"
        ));
    };
    let call = &ev.calls[b];
    if let Some(why) = varies(ev, b) {
        return skip(why);
    }
    let Some(measured) = ev.measured_ok(b) else {
        return skip("the boundary call failed");
    };
    match outcome {
        Outcome::Error(e) => fail(format!("{call} failed at threshold_tokens = {t}: {e}")),
        Outcome::Result(r) if result::is_offload(r) => fail(format!(
            "{call} was offloaded at threshold_tokens = {t}, which its estimate does not exceed"
        )),
        Outcome::Result(r) if !result::same_answer(r, measured) => fail(format!(
            "{call} came back inline but changed at threshold_tokens = {t}: {}",
            result::excerpt(&result::texts(r).join(" "), 160)
        )),
        Outcome::Result(_) => pass(format!(
            "{call}: inline and unchanged at threshold_tokens = {t}{}",
            not_judged_on(ev)
        )),
    }
}

/// Why the boundary call `b` cannot show whether an inline answer is
/// unchanged: it answers differently at each launch by itself.
fn varies(ev: &Evidence, b: usize) -> Option<String> {
    ev.varying.contains(&b).then(|| {
        format!(
            "{} answers differently at each launch, with no threshold in reach too, and no other call returned an inline result of at least {MIN_RECORDS} records to judge on: name one that answers the same each time with --probe",
            ev.calls[b]
        )
    })
}

/// The calls left out as the boundary call because their answers vary, as
/// a clause for a verdict's detail.
fn not_judged_on(ev: &Evidence) -> String {
    if ev.varying.is_empty() {
        return String::new();
    }
    let names: Vec<String> = ev
        .varying
        .iter()
        .map(|&i| ev.calls[i].to_string())
        .collect();
    format!(
        " (not judged on {}: answers differently at each launch, with no threshold in reach too)",
        names.join(", ")
    )
}

/// "If estimated_tokens > threshold_tokens, offload [...]. If
/// estimated_tokens <= threshold_tokens, return results inline." Strict
/// reading: the header's `estimated_tokens` ("Estimated total tokens of
/// the result set") is the estimate compared, so the same call is offloaded
/// at a threshold of E − 1 and inline at E.
pub(super) fn threshold_boundary(ev: &Evidence) -> Verdict {
    if !ev.launched {
        return skip(NEEDS_CONTROL);
    }
    let Some(b) = ev.boundary else {
        return skip(format!(
            "no call returned an inline result of at least {MIN_RECORDS} records"
        ));
    };
    let call = &ev.calls[b];
    if let Some(why) = varies(ev, b) {
        return skip(why);
    }
    let Some(e) = ev.estimate else {
        return fail(format!(
            "{call} was never offloaded with an estimated_tokens to test the boundary at"
        ));
    };
    let measured = ev.measured_ok(b).map_or(0, result::tokens);
    let offloaded = |o: &Outcome| matches!(o, Outcome::Result(r) if result::is_offload(r));
    let inline = |o: &Outcome| matches!(o, Outcome::Result(r) if !result::is_offload(r) && !result::is_error(r));
    if e == 0 {
        return fail(format!("{call} reports estimated_tokens = 0"));
    }
    match (&ev.below, &ev.at) {
        (Some(below), _) if !offloaded(below) => fail(format!(
            "{call}: estimated_tokens = {e}, yet not offloaded at threshold_tokens = {}",
            e - 1
        )),
        (_, Some((_, at))) if !inline(at) => fail(format!(
            "{call}: estimated_tokens = {e}, yet not inline at threshold_tokens = {e}"
        )),
        (Some(_), Some(_)) => pass(format!(
            "{call}: estimated_tokens = {e} (characters / 4 of the inline answer: {measured}); offloaded at threshold_tokens = {}, inline at {e}{}",
            e - 1,
            not_judged_on(ev)
        )),
        _ => fail("the boundary launches did not run"),
    }
}

/// The eight fields of `OffloadHeader`, in the spec's order.
const HEADER_FIELDS: [&str; 8] = [
    "type",
    "operation",
    "query",
    "count",
    "schema_version",
    "timestamp",
    "estimated_tokens",
    "detail",
];

/// "The first line is a metadata header conforming to OffloadHeader": a
/// `type` of `"lro_header"` and all eight fields, with the spec's types
/// (`query` may be null; `timestamp` is ISO 8601).
pub(super) fn jsonl_header(ev: &Evidence) -> Verdict {
    over_files(ev, "each has a header with all eight fields", |_, f| {
        let Some(first) = f.lines.first() else {
            return Some("the file is empty".to_owned());
        };
        let Some(h) = f.header() else {
            return Some(format!(
                "line 1 is not a header with type \"lro_header\": {}",
                result::excerpt(first, 120)
            ));
        };
        header_fault(&h)
    })
}

fn header_fault(h: &Map<String, Value>) -> Option<String> {
    let missing: Vec<_> = HEADER_FIELDS
        .iter()
        .filter(|k| !h.contains_key(**k))
        .collect();
    if !missing.is_empty() {
        return Some(format!("the header lacks {missing:?}"));
    }
    let is_str = |k: &str| h[k].is_string();
    let wrong = if !is_str("operation") || !is_str("schema_version") {
        Some("operation and schema_version must be strings")
    } else if !(h["query"].is_string() || h["query"].is_null()) {
        Some("query must be a string or null")
    } else if !h["count"].is_u64() || !h["estimated_tokens"].is_u64() {
        Some("count and estimated_tokens must be non-negative integers")
    } else if !h["detail"].as_str().is_some_and(|d| DETAILS.contains(&d)) {
        Some("detail must be light, medium or full")
    } else {
        None
    };
    if let Some(w) = wrong {
        return Some(w.to_owned());
    }
    let ts = h["timestamp"].as_str().unwrap_or_default();
    let iso = time::format_description::well_known::Iso8601::DEFAULT;
    if time::OffsetDateTime::parse(ts, &iso).is_err() {
        return Some(format!("timestamp {ts:?} is not ISO 8601"));
    }
    None
}

/// "count: Total number of memory lines following the header."
pub(super) fn jsonl_count(ev: &Evidence) -> Verdict {
    over_files(ev, "count equals the lines after the header", |_, f| {
        let Some(h) = f.header() else {
            return Some("no header, so no count".to_owned());
        };
        let count = h.get("count").and_then(Value::as_u64);
        let lines = f.records().len() as u64;
        match count {
            Some(c) if c == lines => None,
            Some(c) => Some(format!("header count {c}, {lines} lines follow")),
            None => Some("the header has no count".to_owned()),
        }
    })
}

/// "Each subsequent line is a complete MIF Memory object serialized as
/// JSON": every line after the header parses as a JSON object.
pub(super) fn jsonl_lines(ev: &Evidence) -> Verdict {
    over_files(ev, "every line is a JSON object", |_, f| {
        let skip = usize::from(f.header().is_some());
        f.records().iter().enumerate().find_map(|(i, line)| {
            match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(_)) => None,
                Ok(_) => Some(format!("line {} is JSON but not an object", i + 1 + skip)),
                Err(e) => Some(format!("line {} is not JSON: {e}", i + 1 + skip)),
            }
        })
    })
}

/// "The JSONL file MUST serialize memories at the detail level specified
/// in the original tool call [...] If no detail level is specified, the
/// tool's default applies (light for recall_memories, medium for
/// inject_context)." For the spec's tools the lines must hold that level:
/// no `content` at light, `content` at medium, `provenance` at full.
pub(super) fn jsonl_detail(ev: &Evidence) -> Verdict {
    over_files(ev, "the detail level of each call", |o, f| {
        let call = &ev.calls[o.call];
        let Some(h) = f.header() else {
            return Some("no header to state the detail level".to_owned());
        };
        let detail = h.get("detail").and_then(Value::as_str).unwrap_or_default();
        if let Some(want) = &call.detail
            && want != detail
        {
            return Some(format!(
                "the call asked for {want}, the header says {detail}"
            ));
        }
        call.operation?;
        let has = |key: &str| {
            f.records().iter().any(|l| {
                serde_json::from_str::<Map<String, Value>>(l).is_ok_and(|m| m.contains_key(key))
            })
        };
        match detail {
            "light" if has("content") => Some("light lines carry content".to_owned()),
            "medium" if !has("content") => Some("medium lines lack content".to_owned()),
            "full" if !has("provenance") => Some("full lines lack provenance".to_owned()),
            _ => None,
        }
    })
}

/// "Files MUST be written to a configurable output directory using the
/// following naming convention: {output_dir}/atlatl-{operation}-{ulid}.jsonl",
/// with the operation of the call (recall, search, inject, list).
pub(super) fn file_name(ev: &Evidence) -> Verdict {
    static NAME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^atlatl-([A-Za-z0-9_]+)-([0-9A-Z]{26})\.jsonl$").expect("valid")
    });
    over_files(
        ev,
        "atlatl-{operation}-{ulid}.jsonl in the output directory",
        |o, f| {
            let name = f
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())?;
            let Some(caps) = NAME.captures(&name) else {
                return Some(format!("{name} is not atlatl-{{operation}}-{{ulid}}.jsonl"));
            };
            if ulid::Ulid::from_string(&caps[2]).is_err() {
                return Some(format!("{} in {name} is not a ULID", &caps[2]));
            }
            let op = &caps[1];
            if let Some(want) = ev.calls[o.call].operation
                && op != want
            {
                return Some(format!("{name} names operation {op}, the spec's is {want}"));
            }
            let header_op = f.header().and_then(|h| {
                h.get("operation")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            // A file name keeps the first NAME_OPERATION_LEN characters of
            // the operation; the header keeps it whole.
            if let Some(h) = header_op
                && op != h
                && op
                    != h.char_indices()
                        .nth(lro_core::file::NAME_OPERATION_LEN)
                        .map_or(h.as_str(), |(at, _)| &h[..at])
                        .trim_end_matches('_')
            {
                return Some(format!("{name} names operation {op}, the header {h}"));
            }
            if let Some(dir) = &ev.output_dir {
                let parent = f.path.parent().map(canonical);
                if parent.as_deref() != Some(canonical(dir).as_path()) {
                    return Some(format!(
                        "{} is not in the configured output_dir {}",
                        f.path.display(),
                        dir.display()
                    ));
                }
            }
            None
        },
    )
}

fn canonical(p: &Path) -> std::path::PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_owned())
}

/// "offloaded: Indicates this is an offloaded result." It is `true`.
pub(super) fn descriptor_offloaded(ev: &Evidence) -> Verdict {
    over_offloads(ev, "offloaded is true", |o| {
        (o.descriptor.get("offloaded") != Some(&Value::Bool(true)))
            .then(|| format!("offloaded is {:?}", o.descriptor.get("offloaded")))
    })
}

/// `OffloadSummary`: count, estimated_tokens, operation, "Top namespaces
/// represented (up to 5)", score_range ("(min, max) if applicable": the
/// key is present, null or a pair) and detail, agreeing with the file.
pub(super) fn descriptor_summary(ev: &Evidence) -> Verdict {
    over_offloads(ev, "summary with all six fields", |o| {
        let Some(s) = o.descriptor.get("summary").and_then(Value::as_object) else {
            return Some("no summary object".to_owned());
        };
        let fields = [
            "count",
            "estimated_tokens",
            "operation",
            "top_namespaces",
            "score_range",
            "detail",
        ];
        let missing: Vec<_> = fields.iter().filter(|k| !s.contains_key(**k)).collect();
        if !missing.is_empty() {
            return Some(format!("the summary lacks {missing:?}"));
        }
        if !s["count"].is_u64() || !s["estimated_tokens"].is_u64() {
            return Some("count and estimated_tokens must be non-negative integers".to_owned());
        }
        if !s["operation"].is_string() || !s["detail"].is_string() {
            return Some("operation and detail must be strings".to_owned());
        }
        match s["top_namespaces"].as_array() {
            Some(ns) if ns.len() <= 5 && ns.iter().all(Value::is_string) => {}
            Some(ns) if ns.len() > 5 => {
                return Some(format!("{} top_namespaces, at most 5", ns.len()));
            }
            _ => return Some("top_namespaces must be an array of strings".to_owned()),
        }
        let range_ok = match &s["score_range"] {
            Value::Null => true,
            Value::Array(p) => {
                p.len() == 2 && p.iter().all(Value::is_number) && p[0].as_f64() <= p[1].as_f64()
            }
            _ => false,
        };
        if !range_ok {
            return Some(format!(
                "score_range {} is neither null nor [min, max]",
                s["score_range"]
            ));
        }
        let f = o.file.as_ref().ok()?;
        if let Some(h) = f.header() {
            for key in ["count", "detail", "operation"] {
                if h.get(key) != s.get(key) {
                    return Some(format!(
                        "summary {key} {} but header {key} {}",
                        s[key],
                        h.get(key).unwrap_or(&Value::Null)
                    ));
                }
            }
        }
        None
    })
}

/// "file_path: Absolute path to the JSONL file."
pub(super) fn descriptor_file_path(ev: &Evidence) -> Verdict {
    over_offloads(ev, "an absolute file_path to the file", |o| {
        let Some(p) = o.descriptor.get("file_path").and_then(Value::as_str) else {
            return Some("no file_path string".to_owned());
        };
        if !Path::new(p).is_absolute() {
            return Some(format!("file_path {p} is not absolute"));
        }
        match &o.file {
            Err(e) if ev.launched => Some(e.clone()),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{
        Status,
        check::fixtures::{evidence, offload},
    };

    #[test]
    fn a_well_formed_offload_passes_the_file_checks() {
        let ev = evidence(vec![offload("light", &[])]);
        for judge in [
            jsonl_header,
            jsonl_count,
            jsonl_lines,
            descriptor_offloaded,
            descriptor_summary,
        ] {
            let (status, detail) = judge(&ev);
            assert_eq!(status, Status::Pass, "{detail}");
        }
    }

    #[test]
    fn a_file_name_keeps_the_first_16_characters_of_the_operation() {
        let named = |file: &str| {
            let mut o = offload("light", &[]);
            if let Ok(f) = &mut o.file {
                f.path = std::path::PathBuf::from(format!(
                    "/out/atlatl-{file}-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl"
                ));
                let mut h: Value = serde_json::from_str(&f.lines[0]).unwrap();
                h["operation"] = "list_directory_with_sizes".into();
                f.lines[0] = h.to_string();
            }
            let mut ev = evidence(vec![o]);
            ev.calls[0].operation = None;
            file_name(&ev)
        };
        let (status, detail) = named("list_directory_w");
        assert_eq!(status, Status::Pass, "{detail}");
        let (status, detail) = named("list_directory");
        assert_eq!(status, Status::Fail, "{detail}");
        assert!(
            detail.contains("the header list_directory_with_sizes"),
            "{detail}"
        );
    }

    #[test]
    fn header_faults_name_the_field() {
        let mut h = json!({"type": "lro_header", "operation": "list", "query": null, "count": 1,
            "schema_version": "1", "timestamp": "2026-01-01T00:00:00Z", "estimated_tokens": 3, "detail": "light"});
        assert_eq!(header_fault(h.as_object().unwrap()), None);
        h["timestamp"] = json!("yesterday");
        assert!(
            header_fault(h.as_object().unwrap())
                .unwrap()
                .contains("ISO 8601")
        );
        h.as_object_mut().unwrap().remove("query");
        assert!(
            header_fault(h.as_object().unwrap())
                .unwrap()
                .contains("query")
        );
    }

    #[test]
    fn count_must_match_the_lines() {
        let mut o = offload("light", &[]);
        if let Ok(f) = &mut o.file {
            f.lines.pop();
        }
        let (status, detail) = jsonl_count(&evidence(vec![o]));
        assert_eq!(status, Status::Fail);
        assert!(
            detail.contains("header count 2, 1 lines follow"),
            "{detail}"
        );
    }

    #[test]
    fn the_boundary_is_the_servers_own_estimate() {
        let offloaded =
            Outcome::Result(json!({"content": [{"type": "text", "text": "{\"offloaded\":true}"}]}));
        let inline = Outcome::Result(json!({"content": [{"type": "text", "text": "[1]"}]}));
        let mut ev = evidence(vec![]);
        ev.boundary = Some(0);
        ev.estimate = Some(40);
        ev.below = Some(offloaded.clone());
        ev.at = Some((40, inline.clone()));
        assert_eq!(threshold_boundary(&ev).0, Status::Pass);
        ev.at = Some((40, offloaded));
        let (status, detail) = threshold_boundary(&ev);
        assert_eq!(status, Status::Fail);
        assert!(
            detail.contains("not inline at threshold_tokens = 40"),
            "{detail}"
        );
        ev.below = Some(inline);
        assert!(
            threshold_boundary(&ev)
                .1
                .contains("not offloaded at threshold_tokens = 39")
        );
    }

    #[test]
    fn an_answer_that_varies_by_itself_is_told_apart_from_a_changed_inline_one() {
        let measured = json!({"content": [{"type": "text", "text": "[\"PWD=/a\"]"}]});
        let changed =
            Outcome::Result(json!({"content": [{"type": "text", "text": "[\"PWD=/b\"]"}]}));
        let mut ev = evidence(vec![]);
        ev.measured = vec![Outcome::Result(measured)];
        ev.boundary = Some(0);
        ev.estimate = Some(40);
        ev.at = Some((40, changed));
        let (status, detail) = threshold_inline(&ev);
        assert_eq!(status, Status::Fail);
        assert!(detail.contains("came back inline but changed"), "{detail}");
        // The second launch with no threshold in reach answered otherwise too.
        ev.varying = vec![0];
        for judge in [threshold_inline, threshold_boundary] {
            let (status, detail) = judge(&ev);
            assert_eq!(status, Status::Skip, "{detail}");
            assert!(
                detail
                    .contains("answers differently at each launch, with no threshold in reach too"),
                "{detail}"
            );
        }
    }

    #[test]
    fn url_targets_skip_what_needs_control() {
        let mut ev = evidence(vec![]);
        ev.launched = false;
        for judge in [threshold_aggregate, threshold_inline, threshold_boundary] {
            assert_eq!(judge(&ev).0, Status::Skip);
        }
    }
}
