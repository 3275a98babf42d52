//! Handing results to the collector: each rendered whole while it fits, a
//! first result too big on its own shown in part (elements of an array or
//! object, a prefix of a string), never broken JSON.

use jaq_json::Val;
use serde_json::Value;

use super::{
    convert::{to_value, write_json},
    job::Render,
    originals::{NoOriginals, Originals},
};
use crate::{
    ExtractError,
    output::{Collector, Flow, Window, floor_char_boundary},
    render,
};

/// Renders one result and hands it to the collector. A first result that
/// is too big on its own is shown in part: an array or object cut at an
/// element, a string shortened (raw text at a line end), never broken JSON.
pub(super) fn emit(
    y: &Val,
    render: Render,
    out: &mut Collector,
    orig: &dyn Originals,
) -> Result<Flow, ExtractError> {
    if out.admit() == Flow::Stop {
        return Ok(Flow::Stop);
    }
    let cap = out.remaining_bytes();
    let mut buf = Vec::new();
    let raw_str = match (render.raw, y) {
        (true, Val::TStr(s) | Val::BStr(s)) => Some(s),
        _ => None,
    };
    let rendered = match raw_str {
        Some(s) => {
            buf.extend_from_slice(s);
            buf.len() < cap
        }
        None => write_json(&mut buf, y, 0, cap, orig)?,
    };
    if (rendered && out.fits(&buf)) || out.skips_next() {
        let keep = out.keeps_values();
        let value = if keep {
            to_value(y, 0, orig)?
        } else {
            Value::Null
        };
        return Ok(out.push(&buf, || value));
    }
    if out.count() > 0 {
        out.cut_budget();
        return Ok(Flow::Stop);
    }
    shorten(y, render, out, orig)
}

/// Shows as much of a first result that does not fit as fits.
fn shorten(
    y: &Val,
    render: Render,
    out: &mut Collector,
    orig: &dyn Originals,
) -> Result<Flow, ExtractError> {
    match y {
        Val::Arr(_) | Val::Obj(_) => {
            emit_elements(y, Window::default(), out, orig)?;
            Ok(Flow::Stop)
        }
        Val::TStr(s) | Val::BStr(s) => {
            let text = String::from_utf8_lossy(s);
            // The prefix shown and its rendered line.
            let (prefix, line): (&str, Vec<u8>) = if render.raw {
                // Raw text is cut at a line end, never inside a line.
                let end = text
                    .match_indices('\n')
                    .map(|(i, _)| i)
                    .take_while(|&i| out.fits(&text.as_bytes()[..i]))
                    .last()
                    .unwrap_or(0);
                (&text[..end], text.as_bytes()[..end].to_vec())
            } else {
                // The longest prefix that still fits as a JSON string.
                let quoted = |n: usize| {
                    let mut q = Vec::new();
                    render::write_str(&mut q, floor_char_boundary(&text, n).as_bytes());
                    q
                };
                // A prefix longer than the bytes left can never fit.
                let (mut lo, mut hi) = (0, text.len().min(out.remaining_bytes()));
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if out.fits(&quoted(mid)) {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                (floor_char_boundary(&text, lo), quoted(lo))
            };
            let shown = if prefix.is_empty() {
                "none".to_owned()
            } else {
                let value = Value::String(prefix.to_owned());
                out.push_unpaged(&line, || value);
                format!("the first {}", prefix.chars().count())
            };
            out.cut(format!(
                "the result is a string of {} characters; {shown} fit {}. Narrow it, e.g. .[0:2000] or one field of it",
                text.chars().count(),
                out.budget_name()
            ));
            Ok(Flow::Stop)
        }
        _ => Err(ExtractError::OutputLimit {
            limit: out.remaining_bytes(),
        }),
    }
}

/// Shows the elements of an array (entries of an object) in `window`, as
/// many as fit, as one valid array (object); records the cut when some
/// are left out.
pub(crate) fn emit_elements(
    y: &Val,
    window: Window,
    out: &mut Collector,
    orig: &dyn Originals,
) -> Result<(), ExtractError> {
    let (total, open, close) = match y {
        Val::Arr(items) => (items.len(), b'[', b']'),
        Val::Obj(map) => (map.len(), b'{', b'}'),
        _ => {
            return Err(ExtractError::OutputLimit {
                limit: out.remaining_bytes(),
            });
        }
    };
    let entries: Vec<(Option<&Val>, &Val)> = match y {
        Val::Arr(items) => items.iter().map(|v| (None, v)).collect(),
        Val::Obj(map) => map.iter().map(|(k, v)| (Some(k), v)).collect(),
        _ => unreachable!("checked above"),
    };
    let from = window.offset.min(total);
    let end = window
        .limit
        .map_or(total, |l| from.saturating_add(l).min(total));
    let mut buf = vec![open];
    let mut tokens = out.tokens_of(b"[]");
    let mut kept = Vec::new();
    let mut elem = Vec::new();
    for (i, (key, item)) in entries.iter().enumerate().take(end).skip(from) {
        elem.clear();
        match key {
            None => {}
            Some(Val::TStr(s) | Val::BStr(s)) => render::write_str(&mut elem, s),
            Some(other) => {
                // jaq allows non-string keys; JSON does not.
                let mut text = Vec::new();
                write_json(&mut text, other, 1, usize::MAX, &NoOriginals)?;
                render::write_str(&mut elem, &text);
            }
        }
        if key.is_some() {
            elem.push(b':');
        }
        let room = out.remaining_bytes().saturating_sub(buf.len() + 2);
        if !write_json(&mut elem, item, 1, room, orig)? {
            break;
        }
        let elem_tokens = out.tokens_of(&elem);
        if !out.fits_size(buf.len() + elem.len() + 2, tokens + elem_tokens) {
            break;
        }
        if !kept.is_empty() {
            buf.push(b',');
        }
        buf.extend_from_slice(&elem);
        tokens += elem_tokens;
        kept.push(i);
    }
    buf.push(close);
    let shown = kept.len();
    if shown > 0 {
        let value = if out.keeps_values() {
            match y {
                Val::Arr(items) => Value::Array(
                    kept.iter()
                        .map(|&i| to_value(&items[i], 1, orig))
                        .collect::<Result<_, _>>()?,
                ),
                _ => serde_json::from_slice(&buf).unwrap_or(Value::Null),
            }
        } else {
            Value::Null
        };
        out.push_unpaged(&buf, || value);
    }
    if shown < end - from || end < total {
        // A full page of a longer result is not a cut, only a next part.
        out.cut_elements(from, shown, total, shown < end - from);
    }
    Ok(())
}
