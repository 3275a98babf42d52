//! Level 3 (Full): "error fallback to inline truncation, and observability
//! events."

use std::collections::BTreeSet;

use super::{Verdict, fail, pass, skip};
use crate::{
    events::{self, Event, Samples},
    evidence::Evidence,
    result,
    target::Outcome,
};

/// Tokens a warning may add to a truncated result on top of the threshold.
const WARNING_ALLOWANCE: u64 = 256;

/// Words a fallback warning is recognised by (lowercase).
const WARNING_WORDS: [&str; 2] = ["warn", "truncat"];

/// "If the temporary file write fails [...] implementations MUST fall back
/// to returning an inline truncated result: 1. Truncate the result set to
/// fit within threshold_tokens. 2. Include a warning in the response [...]
/// Implementations MUST NOT fail the entire operation." Strict reading:
/// the answer, measured like any other (characters / 4 of its text), fits
/// the threshold plus a warning's worth of tokens and is smaller than the
/// full answer, and it carries a warning the full answer does not.
pub(super) fn write_failure_fallback(ev: &Evidence) -> Verdict {
    let Some(w) = &ev.write_failure else {
        return not_seen(ev);
    };
    let t = w.threshold;
    let full = ev
        .boundary
        .and_then(|b| ev.measured_ok(b))
        .map_or(0, result::tokens);
    let full_text = ev
        .boundary
        .and_then(|b| ev.measured_ok(b))
        .map(|v| result::texts(v).join("\n").to_lowercase())
        .unwrap_or_default();
    let r = match &w.outcome {
        Outcome::Error(e) => return fail(format!("the call failed: {e}")),
        Outcome::Result(r) if result::is_error(r) => {
            return fail(format!(
                "the call returned isError: {}",
                result::excerpt(&result::texts(r).join(" "), 160)
            ));
        }
        Outcome::Result(r) if result::is_offload(r) => {
            return fail(
                "an offload descriptor came back although the output directory cannot exist",
            );
        }
        Outcome::Result(r) => r,
    };
    let tokens = result::tokens(r);
    if tokens > t + WARNING_ALLOWANCE || tokens >= full {
        return fail(format!(
            "{tokens} tokens came back inline (threshold_tokens = {t}, the full answer {full}): not truncated to fit"
        ));
    }
    // A warning is a line with a warning word that the full answer does not
    // have: a source file that speaks of warnings or truncation (any
    // generic server's) still tells its own lines from the server's.
    let full_lines: BTreeSet<&str> = full_text.lines().map(str::trim).collect();
    let warning = result::texts(r).into_iter().find(|text| {
        text.to_lowercase().lines().any(|line| {
            WARNING_WORDS.iter().any(|w| line.contains(w)) && !full_lines.contains(line.trim())
        })
    });
    match warning {
        None => fail(format!(
            "truncated to {tokens} tokens (threshold_tokens = {t}) with no warning: silent truncation"
        )),
        Some(text) => pass(format!(
            "not an error; {tokens} tokens (threshold_tokens = {t}, full answer {full}); warning: {}",
            result::excerpt(text, 120)
        )),
    }
}

/// "3. Emit an OffloadWriteFailed event with the error details."
pub(super) fn write_failure_event(ev: &Evidence) -> Verdict {
    let Some(w) = &ev.write_failure else {
        return not_seen(ev);
    };
    observed(Event::WriteFailed, &w.stderr, w.metrics.as_ref())
}

/// The offload_cleanup task "Emits OffloadFileExpired events for
/// observability."
pub(super) fn file_expired_event(ev: &Evidence) -> Verdict {
    if !ev.launched {
        return skip("needs control of the server's TTL: launch it with `lro audit -- COMMAND`");
    }
    let Some(c) = &ev.cleanup else {
        return skip("no call was offloaded to test cleanup with");
    };
    if let Err(why) = &c.expired {
        return fail(format!("no file was seen to expire: {why}"));
    }
    observed(Event::FileExpired, &c.stderr, c.metrics.as_ref())
}

fn observed(event: Event, stderr: &str, metrics: Option<&(Samples, Samples)>) -> Verdict {
    if let Some(line) = events::in_stderr(stderr, event) {
        return pass(format!("on stderr: {}", result::excerpt(line.trim(), 160)));
    }
    if let Some(series) =
        metrics.and_then(|(before, after)| events::in_metrics(before, after, event))
    {
        return pass(format!("in the metrics: {series}"));
    }
    let where_ = if metrics.is_some() {
        "on stderr or in the metrics"
    } else {
        "on stderr (add --metrics URL to look at a Prometheus endpoint too)"
    };
    fail(format!("no {} event {where_}", event.name()))
}

fn not_seen(ev: &Evidence) -> Verdict {
    if ev.launched {
        skip("no call returned an inline result of many records to make fail")
    } else {
        skip(
            "needs control of the server's output directory: launch it with `lro audit -- COMMAND`",
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Status, check::fixtures::evidence, evidence::WriteFailureSeen};

    fn seen(text: &str, stderr: &str) -> Evidence {
        seen_after(&"x".repeat(4000), text, stderr)
    }

    /// The write-failure launch answered `text` where the full answer was `full`.
    fn seen_after(full: &str, text: &str, stderr: &str) -> Evidence {
        let mut ev = evidence(vec![]);
        ev.measured = vec![Outcome::Result(
            json!({"content": [{"type": "text", "text": full}]}),
        )];
        ev.boundary = Some(0);
        ev.write_failure = Some(WriteFailureSeen {
            threshold: 500,
            outcome: Outcome::Result(json!({"content": [{"type": "text", "text": text}]})),
            stderr: stderr.to_owned(),
            metrics: None,
        });
        ev
    }

    #[test]
    fn fallback_is_truncated_and_warned() {
        let ok = seen(
            &format!("WARNING: offload failed; truncated {}", "y".repeat(1900)),
            "",
        );
        assert_eq!(write_failure_fallback(&ok).0, Status::Pass);
        let silent = seen(&"y".repeat(1900), "");
        assert!(
            write_failure_fallback(&silent)
                .1
                .contains("silent truncation")
        );
        let whole = seen(&format!("warning {}", "y".repeat(4000)), "");
        assert!(write_failure_fallback(&whole).1.contains("not truncated"));
    }

    #[test]
    fn a_warning_is_told_from_the_results_own_words() {
        // The full answer is a file that speaks of warnings and truncation.
        let full = (0..400)
            .map(|i| format!("line {i}: log a warning when the text is truncated"))
            .collect::<Vec<_>>()
            .join("\n");
        let with = |text: String| seen_after(&full, &text, "");
        let head: String = full.lines().take(30).collect::<Vec<_>>().join("\n");
        let silent = with(head.clone());
        assert!(
            write_failure_fallback(&silent)
                .1
                .contains("silent truncation")
        );
        let warned = with(format!(
            "Warning: the offload failed; kept 30 lines\n{head}"
        ));
        let (status, detail) = write_failure_fallback(&warned);
        assert_eq!(status, Status::Pass, "{detail}");
    }

    #[test]
    fn events_are_seen_in_any_case_style() {
        let ev = seen("", "WARN event=offload_write_failed reason=not_a_directory");
        assert_eq!(write_failure_event(&ev).0, Status::Pass);
        let (status, detail) = write_failure_event(&seen("", "INFO nothing here"));
        assert_eq!(status, Status::Fail);
        assert!(detail.contains("--metrics"), "{detail}");
    }
}
