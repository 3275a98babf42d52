//! Level 2 (Standard): "Level 1 plus schema definition and extraction
//! query library", the standard jq recipes and custodial cleanup.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{
    Verdict, compact_profile, count, fail, not_applicable, over_files, over_offloads, pass, skip,
};
use crate::{
    evidence::{Evidence, FileSeen, Offload},
    recipe, result,
};

/// The recipes of a descriptor: `(description, command)` of each entry.
fn recipes(o: &Offload) -> Option<Vec<(Option<&str>, Option<&str>)>> {
    let list = o.descriptor.get("jq_recipes")?.as_array()?;
    Some(
        list.iter()
            .map(|r| {
                let s = |k| r.get(k).and_then(Value::as_str);
                (s("description"), s("command"))
            })
            .collect(),
    )
}

/// "Implementations MUST include exactly 10 recipes in every
/// OffloadResponse", each with a description and a command, at every
/// detail level.
pub(super) fn recipes_count(ev: &Evidence) -> Verdict {
    let mut per_detail: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    let verdict = over_offloads(ev, "", |o| {
        let Some(list) = recipes(o) else {
            return Some("no jq_recipes array".to_owned());
        };
        per_detail
            .entry(o.detail().unwrap_or_else(|| "unknown".to_owned()))
            .or_default()
            .insert(list.len());
        if list.len() != 10 {
            return Some(count(list.len(), "recipe"));
        }
        list.iter()
            .position(|(d, c)| d.is_none() || c.is_none())
            .map(|i| format!("recipe #{} lacks a description or command string", i + 1))
    });
    match verdict {
        (crate::Status::Pass, _) => {
            let levels: Vec<&str> = per_detail.keys().map(String::as_str).collect();
            pass(format!("10 recipes at {}", levels.join(", ")))
        }
        other => other,
    }
}

/// "Every recipe runs and succeeds on the file", in the spec's shape
/// (`tail -n +2 {file} | jq …`, "The {file} placeholder MUST be replaced
/// with the actual file path"), never given to a shell.
pub(super) fn recipes_run(ev: &Evidence) -> Verdict {
    if let Some(v) = compact_profile(ev) {
        return v;
    }
    let mut engine = "";
    let verdict = over_files(ev, "every recipe ran and succeeded", |o, _| {
        let runs = o.runs.as_ref()?;
        runs.iter().find_map(|run| match &run.outcome {
            Ok(e) => {
                engine = e;
                None
            }
            Err(why) => Some(format!(
                "recipe #{} `{}`: {why}",
                run.index + 1,
                result::excerpt(&run.command, 120)
            )),
        })
    });
    match verdict {
        (crate::Status::Pass, d) => pass(format!("{d}, run by {engine}")),
        other => other,
    }
}

/// Every field path the lines of `f` hold: top-level keys and the keys of
/// nested objects (`provenance.confidence`).
fn present_paths(f: &FileSeen) -> BTreeSet<String> {
    fn walk(prefix: &str, map: &Map<String, Value>, depth: usize, out: &mut BTreeSet<String>) {
        for (k, v) in map {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            if let (Value::Object(inner), true) = (v, depth < 3) {
                walk(&path, inner, depth + 1, out);
            }
            out.insert(path);
        }
    }
    let mut out = BTreeSet::new();
    for line in f.records() {
        if let Ok(m) = serde_json::from_str::<Map<String, Value>>(line) {
            walk("", &m, 0, &mut out);
        }
    }
    out
}

/// The field paths each recipe's filter reads, for recipes in the shape.
fn read_paths(o: &Offload, f: &FileSeen) -> Vec<(usize, BTreeSet<String>)> {
    let file = f.path.to_string_lossy();
    recipes(o)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(i, (_, cmd))| {
            let parsed = recipe::parse((*cmd)?, &file).ok()?;
            Some((i, recipe::fields(&parsed.filter)))
        })
        .collect()
}

/// "Recipes MUST only reference fields that exist at the given detail
/// level. Recipes MUST NOT reference .score (which is a SearchHit field,
/// never serialized into JSONL)." Strict reading: a field exists when at
/// least one line of the file holds it.
pub(super) fn recipes_fields(ev: &Evidence) -> Verdict {
    if let Some(v) = compact_profile(ev) {
        return v;
    }
    over_files(
        ev,
        "recipes read only fields the lines hold, never .score",
        |o, f| {
            let present = present_paths(f);
            read_paths(o, f).into_iter().find_map(|(i, paths)| {
                paths.iter().find_map(|p| {
                    if p == "score" || p.starts_with("score.") {
                        Some(format!("recipe #{} references .score", i + 1))
                    } else if !present.contains(p) {
                        let detail = o.detail().unwrap_or_default();
                        Some(format!(
                            "recipe #{} reads .{p}, which no {detail} line holds",
                            i + 1
                        ))
                    } else {
                        None
                    }
                })
            })
        },
    )
}

/// Where confidence is at a detail level: flattened at medium, under
/// `provenance` at full, nowhere at light.
fn confidence_path(detail: Option<&str>) -> Option<&'static str> {
    match detail {
        Some("medium") => Some("confidence"),
        Some("full") => Some("provenance.confidence"),
        _ => None,
    }
}

/// Whether the file's first lines hold a value at the dotted `path`.
fn holds(f: &FileSeen, path: &str) -> bool {
    f.records().iter().take(SAMPLED_LINES).any(|line| {
        serde_json::from_str::<Value>(line).is_ok_and(|v| {
            path.split('.')
                .try_fold(&v, |v, k| v.get(k))
                .is_some_and(|c| !c.is_null())
        })
    })
}

/// Lines read to see whether records carry confidence, or are memories.
const SAMPLED_LINES: usize = 32;

/// The fields of a memory at every detail level (the spec's Light fields
/// that its recipes 1 and 2 read).
const MEMORY_FIELDS: [&str; 3] = ["id", "title", "namespace"];

/// Whether the file's first lines are memories: JSON objects with
/// [`MEMORY_FIELDS`].
fn holds_memories(f: &FileSeen) -> bool {
    f.records().iter().take(SAMPLED_LINES).any(|line| {
        serde_json::from_str::<Map<String, Value>>(line)
            .is_ok_and(|m| MEMORY_FIELDS.iter().all(|k| m.contains_key(*k)))
    })
}

/// "At Full detail, confidence MUST be accessed via .provenance.confidence;
/// at Medium detail, via the flattened .confidence field." Recipe 9 sorts
/// by confidence at both levels, so a recipe must read it, and only there.
/// The requirement presumes memories: records that are not (a proxied
/// server's lines, commits, files, a graph's entities) make it not
/// applicable, said so; and memories that carry no confidence pass it, as
/// "Recipes MUST only reference fields that exist" forbids reading it.
pub(super) fn recipes_confidence(ev: &Evidence) -> Verdict {
    if let Some(v) = compact_profile(ev) {
        return v;
    }
    let memories = |o: &Offload| o.file.as_ref().map_or(true, holds_memories);
    if !ev.offloads.is_empty() && !ev.offloads.iter().any(memories) {
        return not_applicable(format!(
            "no offload holds memories (records with {}): the confidence sort presumes them",
            MEMORY_FIELDS.join(", ")
        ));
    }
    let at_level = |o: &Offload| memories(o) && confidence_path(o.detail().as_deref()).is_some();
    if !ev.offloads.is_empty() && !ev.offloads.iter().any(at_level) {
        return skip("no offload of memories at medium or full detail");
    }
    let carries = |o: &Offload| {
        let want = confidence_path(o.detail().as_deref());
        o.file
            .as_ref()
            .map_or(true, |f| want.is_some_and(|w| holds(f, w)))
    };
    // Nothing to read is no failure to prove: the requirement is met.
    if !ev.offloads.is_empty() && !ev.offloads.iter().any(|o| at_level(o) && carries(o)) {
        return pass(
            "no offload at medium or full detail has records with confidence: no recipe may read it",
        );
    }
    over_files(
        ev,
        "confidence read from the path of each detail level",
        |o, f| {
            let want = confidence_path(o.detail().as_deref())?;
            if !holds_memories(f) || !holds(f, want) {
                return None;
            }
            let reads: Vec<(usize, String)> = read_paths(o, f)
                .into_iter()
                .flat_map(|(i, paths)| paths.into_iter().map(move |p| (i, p)))
                .filter(|(_, p)| p.ends_with("confidence"))
                .collect();
            if let Some((i, p)) = reads.iter().find(|(_, p)| p != want) {
                return Some(format!(
                    "recipe #{} reads .{p}; at this detail it is .{want}",
                    i + 1
                ));
            }
            reads
                .is_empty()
                .then(|| format!("no recipe sorts by confidence (.{want})"))
        },
    )
}

/// "line_schema: JSON Schema describing each memory line in the JSONL
/// file": a valid schema that every line validates against.
pub(super) fn line_schema(ev: &Evidence) -> Verdict {
    if let Some(v) = compact_profile(ev) {
        return v;
    }
    over_files(ev, "every line validates against line_schema", |o, f| {
        let Some(schema) = o.descriptor.get("line_schema") else {
            return Some("no line_schema".to_owned());
        };
        let validator = match jsonschema::validator_for(schema) {
            Ok(v) => v,
            Err(e) => return Some(format!("line_schema is not a valid JSON Schema: {e}")),
        };
        let skip = usize::from(f.header().is_some());
        f.records().iter().enumerate().find_map(|(i, line)| {
            let value: Value = serde_json::from_str(line).ok()?;
            validator.validate(&value).err().map(|e| {
                format!(
                    "line {} does not validate: {} at {}",
                    i + 1 + skip,
                    result::excerpt(&e.to_string(), 120),
                    e.instance_path()
                )
            })
        })
    })
}

/// "The guidance field MUST contain a brief instruction block", and the
/// template names the count, "Detail level: {detail}" and the path.
pub(super) fn guidance(ev: &Evidence) -> Verdict {
    if let Some(v) = compact_profile(ev) {
        return v;
    }
    over_offloads(ev, "guidance names the count, detail level and path", |o| {
        let Some(g) = o.descriptor.get("guidance").and_then(Value::as_str) else {
            return Some("no guidance string".to_owned());
        };
        let summary = o.descriptor.get("summary");
        let count = summary
            .and_then(|s| s.get("count"))
            .map(ToString::to_string)
            .unwrap_or_default();
        let path = o
            .descriptor
            .get("file_path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let detail = o.detail().unwrap_or_default();
        let missing: Vec<&str> = [
            ("the count", count.as_str()),
            ("the detail level", &detail),
            ("the path", path),
        ]
        .into_iter()
        .filter(|(_, v)| v.is_empty() || !g.contains(v))
        .map(|(name, _)| name)
        .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "the guidance does not name {}: {}",
                missing.join(", "),
                result::excerpt(g, 160)
            )
        })
    })
}

/// "Offloaded JSONL files are ephemeral and MUST be cleaned up after their
/// TTL expires [...] Deletes files whose created_at + ttl has elapsed": an
/// expired file is gone within the wait, and a fresh one is not.
pub(super) fn cleanup(ev: &Evidence) -> Verdict {
    if !ev.launched {
        return skip("needs control of the server's TTL: launch it with `lro audit -- COMMAND`");
    }
    let Some(c) = &ev.cleanup else {
        return skip("no call was offloaded to test cleanup with");
    };
    match (&c.expired, c.fresh_deleted) {
        (Err(why), _) => fail(format!(
            "{why}; the spec says expired files MUST be cleaned up. For a target that cleans on a slower schedule, pass its own knob with --env or wait longer with --cleanup-wait"
        )),
        (Ok(_), Some(age)) => fail(format!(
            "a fresh file was deleted {:.1}s after it was written, before its TTL of {}s",
            age.as_secs_f64(),
            c.ttl
        )),
        (Ok(late), None) => pass(format!(
            "with ttl_seconds = {}, the expired file was gone {:.1}s after expiry; the fresh one stayed",
            c.ttl,
            late.as_secs_f64()
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{
        Status,
        check::fixtures::{evidence, offload},
        evidence::CleanupSeen,
    };

    #[test]
    fn recipes_read_fields_of_the_lines_never_score() {
        let ok = evidence(vec![offload(
            "medium",
            &["'{id, title}'", "-s 'sort_by(-.confidence)'"],
        )]);
        assert_eq!(
            recipes_fields(&ok).0,
            Status::Pass,
            "{}",
            recipes_fields(&ok).1
        );
        let score = evidence(vec![offload("medium", &["-s 'sort_by(.score)'"])]);
        assert!(
            recipes_fields(&score)
                .1
                .contains("recipe #1 references .score")
        );
        let absent = evidence(vec![offload("light", &["'.content'"])]);
        assert!(
            recipes_fields(&absent)
                .1
                .contains("reads .content, which no light line holds")
        );
    }

    #[test]
    fn confidence_path_follows_the_detail_level() {
        let medium = evidence(vec![offload(
            "medium",
            &["-s 'sort_by(-.provenance.confidence)'"],
        )]);
        let (status, detail) = recipes_confidence(&medium);
        assert_eq!(status, Status::Fail);
        assert!(
            detail.contains("at this detail it is .confidence"),
            "{detail}"
        );
        let full = evidence(vec![offload(
            "full",
            &["-s 'sort_by(-.provenance.confidence)'"],
        )]);
        assert_eq!(recipes_confidence(&full).0, Status::Pass);
        let none = evidence(vec![offload("full", &["'.id'"])]);
        assert!(
            recipes_confidence(&none)
                .1
                .contains("no recipe sorts by confidence")
        );
        // Records that are not memories (commits through a proxy): not
        // applicable, and the report says why.
        let commits = || {
            let mut o = offload("full", &["'.commit'"]);
            if let Ok(f) = &mut o.file {
                let header = f.lines[0].clone();
                f.lines = vec![header, r#"{"commit":"a1","message":"fix"}"#.to_owned()];
            }
            o
        };
        let (status, detail) = recipes_confidence(&evidence(vec![commits()]));
        assert_eq!(status, Status::NotApplicable, "{detail}");
        assert!(
            detail.contains("no offload holds memories") && detail.contains("presumes"),
            "{detail}"
        );
        // Memories without confidence pass: no recipe may read it.
        let bare = || {
            let mut o = offload("full", &["'.id'"]);
            if let Ok(f) = &mut o.file {
                f.lines[1] = r#"{"id":"a","title":"t","namespace":"_semantic"}"#.to_owned();
                f.lines.truncate(2);
            }
            o
        };
        let (status, detail) = recipes_confidence(&evidence(vec![bare()]));
        assert_eq!(status, Status::Pass, "{detail}");
        assert!(detail.contains("records with confidence"), "{detail}");
        // Next to a memory file that has it, the memory file is judged.
        let both = evidence(vec![commits(), offload("full", &["'.id'"])]);
        assert_eq!(recipes_confidence(&both).0, Status::Fail);
    }

    #[test]
    fn cleanup_needs_the_expired_gone_and_the_fresh_kept() {
        let seen = |expired: Result<Duration, String>, fresh_deleted| CleanupSeen {
            ttl: 3,
            expired,
            fresh_deleted,
            stderr: String::new(),
            metrics: None,
        };
        let mut ev = evidence(vec![]);
        ev.cleanup = Some(seen(Ok(Duration::from_millis(400)), None));
        assert_eq!(cleanup(&ev).0, Status::Pass);
        ev.cleanup = Some(seen(Err("still there".to_owned()), None));
        let (status, detail) = cleanup(&ev);
        assert_eq!(status, Status::Fail);
        assert!(
            detail.contains("--env") && detail.contains("--cleanup-wait"),
            "{detail}"
        );
        ev.cleanup = Some(seen(Ok(Duration::ZERO), Some(Duration::from_secs(1))));
        assert!(cleanup(&ev).1.contains("fresh file was deleted"));
    }
}
