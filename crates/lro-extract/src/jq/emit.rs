//! Handing results to the collector: each rendered whole while it fits, a
//! first result too big on its own shown in part (elements of an array or
//! object, a prefix of a string), never broken JSON.

use jaq_json::Val;
use serde_json::Value;

use super::{
    convert::{to_value, write_json},
    originals::{NoOriginals, Originals},
    print::Render,
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
    // A record read only in the fields the filter needs (a projection of
    // `.`, whose line is printed as it is) is shortened from its whole line:
    // the projection has none of its fields.
    if let Some(line) = orig.original(y)
        && let Ok(whole) = super::read::parse(line)
    {
        return shorten(&whole, render, out, &NoOriginals);
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

/// The elements of one array (or entries of one object) result, rendered
/// one at a time, so a result too big for the budget is shown in part.
pub(crate) trait Elements {
    /// How many elements there are.
    fn len(&self) -> usize;
    /// Whether they are an object's entries (printed between braces).
    fn is_object(&self) -> bool;
    /// Renders element `i` (an entry with its key) onto `out`; `Ok(false)`
    /// as soon as `out` is longer than `room` bytes.
    fn write(&self, i: usize, out: &mut Vec<u8>, room: usize) -> Result<bool, ExtractError>;
    /// The bytes of the whole rendering, when known without rendering it
    /// (a capacity to reserve).
    fn size(&self) -> usize {
        0
    }
    /// The elements `kept`, rendered as `text`, as one value.
    fn value(&self, kept: &[usize], text: &[u8]) -> Result<Value, ExtractError>;
}

/// The elements of a jaq array or the entries of a jaq object.
struct ValElements<'a> {
    entries: Vec<(Option<&'a Val>, &'a Val)>,
    object: bool,
    orig: &'a dyn Originals,
}

impl<'a> ValElements<'a> {
    fn new(y: &'a Val, orig: &'a dyn Originals) -> Option<Self> {
        let (entries, object) = match y {
            Val::Arr(items) => (items.iter().map(|v| (None, v)).collect(), false),
            Val::Obj(map) => (map.iter().map(|(k, v)| (Some(k), v)).collect(), true),
            _ => return None,
        };
        Some(Self {
            entries,
            object,
            orig,
        })
    }
}

impl Elements for ValElements<'_> {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn is_object(&self) -> bool {
        self.object
    }

    fn write(&self, i: usize, out: &mut Vec<u8>, room: usize) -> Result<bool, ExtractError> {
        let (key, item) = self.entries[i];
        match key {
            None => {}
            Some(Val::TStr(s) | Val::BStr(s)) => render::write_str(out, s),
            Some(other) => {
                // jaq allows non-string keys; JSON does not.
                let mut text = Vec::new();
                write_json(&mut text, other, 1, usize::MAX, &NoOriginals)?;
                render::write_str(out, &text);
            }
        }
        if key.is_some() {
            out.push(b':');
        }
        write_json(out, item, 1, room, self.orig)
    }

    fn value(&self, kept: &[usize], text: &[u8]) -> Result<Value, ExtractError> {
        if self.object {
            return Ok(serde_json::from_slice(text).unwrap_or(Value::Null));
        }
        Ok(Value::Array(
            kept.iter()
                .map(|&i| to_value(self.entries[i].1, 1, self.orig))
                .collect::<Result<_, _>>()?,
        ))
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
    let elements = ValElements::new(y, orig).ok_or_else(|| ExtractError::OutputLimit {
        limit: out.remaining_bytes(),
    })?;
    emit_parts(&elements, window, out)
}

/// Hands one array (or object) result to the collector whole while it
/// fits, else as many of its first elements as fit: what [`emit`] does
/// with a jaq array.
pub(crate) fn emit_whole(
    elements: &dyn Elements,
    out: &mut Collector,
) -> Result<Flow, ExtractError> {
    if out.admit() == Flow::Stop {
        return Ok(Flow::Stop);
    }
    let cap = out.remaining_bytes();
    let (open, close) = brackets(elements);
    let mut buf = Vec::with_capacity(elements.size().min(cap));
    buf.push(open);
    let mut rendered = true;
    for i in 0..elements.len() {
        if i > 0 {
            buf.push(b',');
        }
        if !elements.write(i, &mut buf, cap)? {
            rendered = false;
            break;
        }
    }
    buf.push(close);
    if (rendered && out.fits(&buf)) || out.skips_next() {
        let value = if out.keeps_values() {
            let all: Vec<usize> = (0..elements.len()).collect();
            elements.value(&all, &buf)?
        } else {
            Value::Null
        };
        return Ok(out.push(&buf, || value));
    }
    drop(buf);
    if out.count() > 0 {
        out.cut_budget();
        return Ok(Flow::Stop);
    }
    emit_parts(elements, Window::default(), out)?;
    Ok(Flow::Stop)
}

fn brackets(elements: &dyn Elements) -> (u8, u8) {
    if elements.is_object() {
        (b'{', b'}')
    } else {
        (b'[', b']')
    }
}

/// [`emit_elements`] over any [`Elements`].
pub(crate) fn emit_parts(
    elements: &dyn Elements,
    window: Window,
    out: &mut Collector,
) -> Result<(), ExtractError> {
    let total = elements.len();
    let (open, close) = brackets(elements);
    let from = window.offset.min(total);
    let end = window
        .limit
        .map_or(total, |l| from.saturating_add(l).min(total));
    let mut buf = vec![open];
    let mut tokens = out.tokens_of(b"[]");
    let mut kept = Vec::new();
    let mut elem = Vec::new();
    for i in from..end {
        elem.clear();
        let room = out.remaining_bytes().saturating_sub(buf.len() + 2);
        if !elements.write(i, &mut elem, room)? {
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
            elements.value(&kept, &buf)?
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
