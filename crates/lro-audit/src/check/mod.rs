//! The checks: one function per requirement of the spec, named after it,
//! with the spec's sentence in its doc comment. Each judges the evidence
//! the audit gathered and returns its verdict with what it saw.
//!
//! Where the spec is ambiguous the checks take the strict reading, and
//! their doc comments say so.

mod level1;
mod level2;
mod level3;
mod reported;

use crate::{
    Check, Status,
    evidence::{Evidence, FileSeen, Offload},
};

/// The checks judged so far, in order.
#[derive(Debug, Default)]
pub(crate) struct Judged(Vec<Check>);

/// A check's judgement: its status and evidence.
type Verdict = (Status, String);

fn pass(detail: impl Into<String>) -> Verdict {
    (Status::Pass, detail.into())
}

fn fail(detail: impl Into<String>) -> Verdict {
    (Status::Fail, detail.into())
}

fn skip(detail: impl Into<String>) -> Verdict {
    (Status::Skip, detail.into())
}

fn not_applicable(detail: impl Into<String>) -> Verdict {
    (Status::NotApplicable, detail.into())
}

/// A skip when the server answers in the compact guidance profile, which
/// is this project's own and outside the spec: the requirements on the
/// spec's recipes, line schema and guidance are not judged on it (a Level 3
/// verdict needs the spec guidance, the default).
fn compact_profile(ev: &Evidence) -> Option<Verdict> {
    ev.offloads
        .iter()
        .any(|o| lro_core::descriptor::is_compact(&o.descriptor))
        .then(|| {
            skip(
                "compact guidance profile (outside the spec, not a failure): judged on the \
                 spec guidance only; audit with guidance = \"spec\" (the default)",
            )
        })
}

/// `n` and `noun`, plural unless `n` is 1: "1 call", "6 offloads".
fn count(n: usize, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{n} {noun}{s}")
}

/// Every check: its id, level and judge, in the order they run.
type Judge = fn(&Evidence) -> Verdict;

const LEVEL1: [(&str, Judge); 12] = [
    ("probes", level1::probes),
    ("threshold-aggregate", level1::threshold_aggregate),
    ("threshold-inline", level1::threshold_inline),
    ("threshold-boundary", level1::threshold_boundary),
    ("jsonl-header", level1::jsonl_header),
    ("jsonl-count", level1::jsonl_count),
    ("jsonl-lines", level1::jsonl_lines),
    ("jsonl-detail", level1::jsonl_detail),
    ("file-name", level1::file_name),
    ("descriptor-offloaded", level1::descriptor_offloaded),
    ("descriptor-summary", level1::descriptor_summary),
    ("descriptor-file-path", level1::descriptor_file_path),
];

const LEVEL2: [(&str, Judge); 7] = [
    ("recipes-count", level2::recipes_count),
    ("recipes-run", level2::recipes_run),
    ("recipes-fields", level2::recipes_fields),
    ("recipes-confidence", level2::recipes_confidence),
    ("line-schema", level2::line_schema),
    ("guidance", level2::guidance),
    ("cleanup", level2::cleanup),
];

const LEVEL3: [(&str, Judge); 3] = [
    ("write-failure-fallback", level3::write_failure_fallback),
    ("write-failure-event", level3::write_failure_event),
    ("file-expired-event", level3::file_expired_event),
];

const REPORTED: [(&str, Judge); 5] = [
    ("pagination-precedence", reported::pagination_precedence),
    ("proxy-flag", reported::proxy_flag),
    ("native-guidance", reported::native_guidance),
    ("descriptor-tokens", reported::descriptor_tokens),
    ("file-mode", reported::file_mode),
];

/// The id and level of every check, in the order they run.
pub fn catalogue() -> impl Iterator<Item = (&'static str, u8)> {
    let ids = |checks: &'static [(&'static str, Judge)], level| {
        checks.iter().map(move |(id, _)| (*id, level))
    };
    ids(&LEVEL1, 1)
        .chain(ids(&LEVEL2, 2))
        .chain(ids(&LEVEL3, 3))
        .chain(ids(&REPORTED, 0))
}

impl Judged {
    fn judge(&mut self, checks: &[(&'static str, Judge)], level: u8, ev: &Evidence) {
        for (id, judge) in checks {
            let (status, detail) = judge(ev);
            self.0.push(Check::new(id, level, status, detail));
        }
    }

    /// Judges Level 1.
    pub(crate) fn level1(&mut self, ev: &Evidence) {
        self.judge(&LEVEL1, 1, ev);
    }

    /// Judges Level 2.
    pub(crate) fn level2(&mut self, ev: &Evidence) {
        self.judge(&LEVEL2, 2, ev);
    }

    /// Judges Level 3.
    pub(crate) fn level3(&mut self, ev: &Evidence) {
        self.judge(&LEVEL3, 3, ev);
    }

    /// Judges the reported checks.
    pub(crate) fn reported(&mut self, ev: &Evidence) {
        self.judge(&REPORTED, 0, ev);
    }

    /// Marks `level` as not run because `failed` was not proven.
    pub(crate) fn not_run(&mut self, level: u8, failed: u8) {
        let checks: &[(&str, Judge)] = match level {
            2 => &LEVEL2,
            _ => &LEVEL3,
        };
        for (id, _) in checks {
            self.0.push(Check::new(
                id,
                level,
                Status::Skip,
                format!("not run: Level {failed} is not proven (--keep-going runs every check)"),
            ));
        }
    }

    /// Whether every check of `level` passed or does not apply.
    pub(crate) fn passed(&self, level: u8) -> bool {
        self.0
            .iter()
            .filter(|c| c.level == level)
            .all(|c| c.status.is_met())
    }

    pub(crate) fn into_checks(self) -> Vec<Check> {
        self.0
    }
}

/// `{what}` for each offload that `bad` finds fault with, or `None`.
fn faults<'a>(
    ev: &'a Evidence,
    mut bad: impl FnMut(&'a Offload) -> Option<String>,
) -> Option<String> {
    let found: Vec<String> = ev
        .offloads
        .iter()
        .filter_map(|o| bad(o).map(|why| format!("{}: {why}", ev.calls[o.call])))
        .collect();
    match found.len() {
        0 => None,
        1 => Some(found.into_iter().next().unwrap_or_default()),
        n => Some(format!("{} (and {} more)", found[0], n - 1)),
    }
}

/// The verdict for a requirement on every offload: skip without offloads,
/// fail with the first fault, else pass with `ok`.
fn over_offloads<'a>(
    ev: &'a Evidence,
    ok: &str,
    bad: impl FnMut(&'a Offload) -> Option<String>,
) -> Verdict {
    if ev.offloads.is_empty() {
        return no_offloads(ev);
    }
    match faults(ev, bad) {
        Some(f) => fail(f),
        None => pass(format!("{}: {ok}", count(ev.offloads.len(), "offload"))),
    }
}

/// Like [`over_offloads`], for requirements on the files. An unreadable
/// file is a fault when the auditor launched the server (the file is on
/// its host); for a URL target it cannot be judged.
fn over_files<'a>(
    ev: &'a Evidence,
    ok: &str,
    mut bad: impl FnMut(&'a Offload, &'a FileSeen) -> Option<String>,
) -> Verdict {
    if !ev.launched && !ev.offloads.is_empty() && ev.offloads.iter().all(|o| o.file.is_err()) {
        let why = ev.offloads[0]
            .file
            .as_ref()
            .err()
            .cloned()
            .unwrap_or_default();
        return skip(format!(
            "the files are not reachable from the auditor ({why}); run it on the server's host or a shared mount"
        ));
    }
    over_offloads(ev, ok, |o| match &o.file {
        Ok(f) => bad(o, f),
        Err(e) if ev.launched => Some(e.clone()),
        Err(_) => None,
    })
}

/// Why a check about offloads has nothing to judge.
fn no_offloads(ev: &Evidence) -> Verdict {
    if ev.launched {
        fail(match ev.t_lo {
            Some(t) => format!("no result was offloaded at threshold_tokens = {t}"),
            None => "no call returned a result to offload".to_owned(),
        })
    } else {
        skip("no probe result was offloaded at the server's own threshold")
    }
}

/// Evidence builders for the judges' unit tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use std::path::PathBuf;

    use serde_json::{Value, json};

    use crate::{
        evidence::{Evidence, FileSeen, Offload},
        probe::{self, Call},
        target::Outcome,
    };

    pub(crate) const PATH: &str = "/out/atlatl-recall-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl";

    /// A recall at `detail` whose descriptor and file are well formed.
    pub(crate) fn offload(detail: &str, recipes: &[&str]) -> Offload {
        let header = json!({"type": "lro_header", "operation": "recall", "query": "q", "count": 2,
            "schema_version": "1.0", "timestamp": "2026-01-01T00:00:00Z", "estimated_tokens": 40, "detail": detail});
        let line = json!({"id": "a", "title": "t", "namespace": "_semantic", "confidence": 0.5,
            "provenance": {"confidence": 0.5}});
        let recipes: Vec<Value> = recipes
            .iter()
            .map(|f| json!({"description": "d", "command": format!("tail -n +2 {PATH} | jq {f}")}))
            .collect();
        let descriptor = json!({"offloaded": true, "file_path": PATH, "jq_recipes": recipes,
            "summary": {"count": 2, "estimated_tokens": 40, "operation": "recall", "top_namespaces": [],
                        "score_range": null, "detail": detail}});
        Offload {
            call: 0,
            result: json!({"content": [{"type": "text", "text": descriptor.to_string()}]}),
            descriptor: descriptor.as_object().cloned().unwrap_or_default(),
            file: Ok(FileSeen {
                path: PathBuf::from(PATH),
                lines: vec![header.to_string(), line.to_string(), line.to_string()],
                mode: 0o600,
            }),
            runs: None,
        }
    }

    /// Evidence of a launched target with one call and these offloads.
    pub(crate) fn evidence(offloads: Vec<Offload>) -> Evidence {
        let mut args = serde_json::Map::new();
        args.insert("query".to_owned(), "q".into());
        let (calls, _) = probe::plan(
            &[probe::Probe {
                tool: "recall_memories".to_owned(),
                args,
            }],
            &[],
        );
        Evidence {
            launched: true,
            calls: calls.into_iter().collect::<Vec<Call>>(),
            measured: vec![Outcome::Result(json!({"content": []}))],
            offloads,
            ..Evidence::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_counts_read_as_english() {
        assert_eq!(
            [count(0, "call"), count(1, "offload"), count(9, "recipe")],
            ["0 calls", "1 offload", "9 recipes"]
        );
    }

    #[test]
    fn catalogue_ids_are_unique_kebab_case() {
        let ids: Vec<_> = catalogue().map(|(id, _)| id).collect();
        let unique: std::collections::BTreeSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        assert!(
            ids.iter()
                .all(|id| id.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        );
        assert_eq!(ids.len(), 27);
    }
}
