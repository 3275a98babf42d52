//! Reported, not part of a level: behaviour the spec describes that no
//! conformance level names.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Verdict, fail, over_files, over_offloads, pass, skip};

/// Reported checks have nothing to say without an offload; that is no fault.
fn without_offloads(ev: &Evidence) -> Option<Verdict> {
    ev.offloads
        .is_empty()
        .then(|| skip("no offload to look at"))
}
use crate::{evidence::Evidence, result, target::Outcome};

/// Keys that carry a pagination cursor.
const CURSOR_KEYS: [&str; 8] = [
    "nextCursor",
    "next_cursor",
    "cursor",
    "next_offset",
    "nextOffset",
    "next_page",
    "next_page_token",
    "nextPageToken",
];

/// "A result set MUST NOT simultaneously be offloaded to JSONL and have an
/// active pagination cursor."
pub(super) fn pagination_precedence(ev: &Evidence) -> Verdict {
    if let Some(v) = without_offloads(ev) {
        return v;
    }
    over_offloads(ev, "no pagination cursor", |o| {
        let in_result = o.result.as_object().into_iter().flatten();
        o.descriptor
            .iter()
            .chain(in_result)
            .find(|(k, v)| CURSOR_KEYS.contains(&k.as_str()) && !v.is_null())
            .map(|(k, v)| format!("an offloaded result carries {k} = {v}"))
    })
}

/// "When a proxy client connects to a remote server, the remote server
/// detects clientInfo.proxy: true and returns full results inline." The
/// auditor declares itself a proxy in both forms: `clientInfo.proxy` and
/// the [`lro_core::proxy_flag::PROXY_EXTENSION`] capability extension.
pub(super) fn proxy_flag(ev: &Evidence) -> Verdict {
    match &ev.flagged {
        None => skip("no offloaded call to repeat as a proxy"),
        Some(Outcome::Error(e)) => fail(format!("the call failed as a proxy: {e}")),
        Some(Outcome::Result(r)) if result::is_offload(r) => {
            fail("offloaded although the client declared itself a proxy")
        }
        Some(Outcome::Result(r)) => pass(format!(
            "the full result came back inline ({} tokens) to a client declared a proxy",
            result::tokens(r)
        )),
    }
}

/// "When an implementation provides native extraction, the tool MUST
/// generate its own guidance prompt that directs the LLM to the extraction
/// MCP tool."
pub(super) fn native_guidance(ev: &Evidence) -> Verdict {
    if let Some(v) = without_offloads(ev) {
        return v;
    }
    if !ev.tools.iter().any(|t| t == "lro_extract") {
        return skip("the server lists no lro_extract tool");
    }
    over_offloads(ev, "the guidance directs to lro_extract", |o| {
        let g = o.descriptor.get("guidance").and_then(Value::as_str)?;
        (!g.contains("lro_extract")).then(|| {
            format!(
                "lro_extract is listed but the guidance does not name it: {}",
                result::excerpt(g, 120)
            )
        })
    })
}

/// The descriptor's cost in the spec's tokens, largest per detail level
/// (the paper measured about 800).
pub(super) fn descriptor_tokens(ev: &Evidence) -> Verdict {
    if let Some(v) = without_offloads(ev) {
        return v;
    }
    let mut per_detail: BTreeMap<String, u64> = BTreeMap::new();
    for o in &ev.offloads {
        let tokens = result::tokens(&o.result);
        let slot = per_detail
            .entry(o.detail().unwrap_or_else(|| "unknown".to_owned()))
            .or_default();
        *slot = (*slot).max(tokens);
    }
    let figures: Vec<String> = per_detail.iter().map(|(d, t)| format!("{d} {t}")).collect();
    pass(format!(
        "{} tokens (characters / 4 of the answer; the paper's descriptor ≈ 800)",
        figures.join(", ")
    ))
}

/// Offload files hold the tool's data: readable by their owner only.
pub(super) fn file_mode(ev: &Evidence) -> Verdict {
    if let Some(v) = without_offloads(ev) {
        return v;
    }
    over_files(ev, "mode 0600", |_, f| {
        (f.mode != 0o600).then(|| format!("{} has mode {:o}", f.path.display(), f.mode))
    })
}
