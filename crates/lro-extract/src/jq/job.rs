//! A jq job over one file: records read line by line (or slurped), each
//! run through the filter, results handed to the collector.

use std::{borrow::Cow, io::Read, rc::Rc};

use jaq_core::{Ctx, Exn, Vars};
use jaq_json::Val;
use serde_json::Value;

use super::{
    compile::Program,
    emit::{emit, emit_elements},
    lines::Lines,
    message::jq_message,
    originals::{ManyOriginals, NoOriginals, OneOriginal, Originals},
    print::Render,
    read::{ReadError, high_surrogate, parse as read_record, too_deep},
    stop::{Guard, GuardedData, JqData},
};
use crate::{
    ExtractError,
    failures::{Message, Unread},
    output::{Collector, Flow, Window, floor_char_boundary},
};

/// Longest error message kept from jaq (its messages embed values).
const MAX_MESSAGE: usize = 400;

/// A jq job over one file.
pub(crate) struct Job<'g> {
    pub(crate) program: &'g Program,
    /// Parse only these fields, when the filter allows it.
    pub(crate) projection: Option<super::project::Projection>,
    /// Run simple shapes on the raw line (per-record mode only).
    pub(crate) fast: Option<crate::fast::FastFilter>,
    pub(crate) vars: Vec<String>,
    pub(crate) slurp: bool,
    /// `offset`/`limit` of the request; with `slurp`, they page the
    /// elements of a single array (or object) result.
    pub(crate) window: Window,
    pub(crate) render: Render,
    pub(crate) guard: &'g Guard,
}

impl Job<'_> {
    /// Runs over the records of `reader`, which is positioned after the
    /// header; `first_line` is the file line number of the first record.
    pub(crate) fn run(
        &self,
        reader: impl Read,
        first_line: usize,
        out: &mut Collector,
    ) -> Result<(), ExtractError> {
        let data = GuardedData {
            lut: &self.program.lut,
            guard: self.guard,
        };
        let vars = Vars::new(self.vars.iter().map(|s| Val::from(s.clone())));
        let ctx = Ctx::<JqData>::new(data, vars);
        let mut lines = Lines::new(reader, first_line);
        let fields = self.projection.as_ref().map(|p| p.paths.as_slice());
        // A line jq may refuse is read whole, never projected.
        let parse = |line: &[u8]| -> Result<Val, ReadError> {
            let fields = fields.filter(|_| !high_surrogate(line));
            match fields.and_then(|f| super::project::project_line(line, f)) {
                Some(v) => Ok(v),
                None => read_record(line),
            }
        };
        if self.slurp {
            let keep_lines = self.projection.as_ref().is_some_and(|p| p.passes_records);
            let mut originals = ManyOriginals::default();
            let mut all = Vec::new();
            while let Some((line_no, line)) = lines.next_line()? {
                if self.guard.cancelled() {
                    return Err(cancelled());
                }
                if too_deep(line) {
                    out.failures.unread(line_no, Unread::Deep);
                    continue;
                }
                let Some(v) = read_or_note(parse(line), line_no, out) else {
                    continue;
                };
                if keep_lines {
                    originals.add(&v, line);
                }
                all.push(v);
            }
            // Held until the end so record addresses stay unique (see
            // `ManyOriginals`).
            let records = Val::Arr(Rc::new(all));
            let originals: &dyn Originals = if keep_lines { &originals } else { &NoOriginals };
            // What the filter printed before an error is printed, as jq does.
            let mut results = Vec::new();
            let mut failure = None;
            for y in self.program.id.run((ctx.clone(), records.clone())) {
                match y {
                    Ok(y) => results.push(y),
                    Err(e) => {
                        failure = exn_message(e);
                        break;
                    }
                }
            }
            if results.len() == 1 && failure.is_none() {
                out.single_result();
            }
            match results.as_slice() {
                [one @ (Val::Arr(_) | Val::Obj(_))] if self.window != Window::default() => {
                    emit_elements(one, self.window, out, originals)?;
                }
                _ => {
                    for y in &results {
                        if emit(y, self.render, out, originals)? == Flow::Stop {
                            break;
                        }
                    }
                }
            }
            drop(results);
            drop(records);
            match failure {
                Some(message) => out.failures.failed(None, lines.read(), message),
                None => out.failures.succeeded(),
            }
            return Ok(());
        }
        'records: while let Some((line_no, line)) = lines.next_line()? {
            if self.guard.cancelled() {
                return Err(cancelled());
            }
            if too_deep(line) {
                out.failures.unread(line_no, Unread::Deep);
                continue;
            }
            if let Some(fast) = self.fast.as_ref().filter(|_| !high_surrogate(line)) {
                match fast.apply(line) {
                    Some(crate::fast::FastOut::Skip) => {
                        out.failures.succeeded();
                        continue;
                    }
                    Some(crate::fast::FastOut::Line) if out.fits(line) => {
                        out.failures.succeeded();
                        if push_fast(out, line, false) == Flow::Stop {
                            break 'records;
                        }
                        continue;
                    }
                    Some(crate::fast::FastOut::Bytes(b)) if out.fits(&b) => {
                        out.failures.succeeded();
                        if push_fast(out, &b, self.render.raw) == Flow::Stop {
                            break 'records;
                        }
                        continue;
                    }
                    // Unusual record, or too big to fit: the general path
                    // decides (and cuts or shortens).
                    _ => {}
                }
            }
            let Some(input) = read_or_note(parse(line), line_no, out) else {
                continue;
            };
            let originals = OneOriginal {
                record: &input,
                line,
            };
            for y in self.program.id.run((ctx.clone(), input.clone())) {
                match y {
                    Ok(y) => {
                        if emit(&y, self.render, out, &originals)? == Flow::Stop {
                            break 'records;
                        }
                    }
                    // jq prints the error and goes on with the next record.
                    Err(e) => {
                        match exn_message(e) {
                            Some(m) => out.failures.failed(Some(line_no), line_no, m),
                            None => out.failures.succeeded(),
                        }
                        continue 'records;
                    }
                }
            }
            out.failures.succeeded();
        }
        Ok(())
    }
}

fn push_fast(out: &mut Collector, bytes: &[u8], raw: bool) -> Flow {
    if out.admit() == Flow::Stop {
        return Flow::Stop;
    }
    let bytes: &[u8] = &if raw {
        Cow::Borrowed(bytes)
    } else {
        super::canonical(bytes)
    };
    if out.count() > 0 && !out.fits(bytes) && !out.skips_next() {
        out.cut_budget();
        return Flow::Stop;
    }
    let keep = out.keeps_values();
    out.push(bytes, || {
        if !keep {
            Value::Null
        } else if raw {
            Value::String(String::from_utf8_lossy(bytes).into_owned())
        } else {
            serde_json::from_slice(bytes).unwrap_or(Value::Null)
        }
    })
}

fn cancelled() -> ExtractError {
    ExtractError::Timeout {
        limit: std::time::Duration::ZERO,
    }
}

/// The record read from file line `line_no`; `None` when jq 1.6 cannot
/// read it (nested too deep, or a lone high surrogate escape), which is
/// noted: it is left out and named.
fn read_or_note(read: Result<Val, ReadError>, line_no: usize, out: &mut Collector) -> Option<Val> {
    match read {
        Ok(v) => Some(v),
        Err(ReadError::Deep) => {
            out.failures.unread(line_no, Unread::Deep);
            None
        }
        Err(ReadError::Bad(message)) => {
            out.failures.unread(line_no, Unread::Refused(message));
            None
        }
    }
}

fn short(mut s: String) -> String {
    if s.len() > MAX_MESSAGE {
        let cut = floor_char_boundary(&s, MAX_MESSAGE).len();
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// jq 1.6's report of an exception; `None` for an error whose value is
/// null, which fails no record (jq 1.6's `error(null)` is `empty`, as the
/// rewrite makes it).
pub(crate) fn exn_message(e: Exn<'_, Val>) -> Option<Message> {
    match e.get_err() {
        Ok(err) => jq_message(err).map(|m| match m {
            Message::Text(t) => Message::Text(short(t)),
            Message::NotAString(v) => Message::NotAString(short(v)),
        }),
        Err(other) => Some(Message::Text(match other.get_halt() {
            Ok(code) => format!("halt({code}) is not available in lro_extract"),
            Err(_) => "internal jaq control flow escaped".to_owned(),
        })),
    }
}

/// Runs `code` on each of `inputs` with no bounds and returns every output:
/// a convenience for tests, not for untrusted filters.
#[cfg(test)]
pub(crate) fn eval_values(code: &str, inputs: &[Value]) -> Result<Vec<Value>, ExtractError> {
    use super::{
        compile::compile,
        convert::{from_value, to_value},
    };

    let program = compile(code)?;
    let guard = Guard::unbounded();
    let data = GuardedData {
        lut: &program.lut,
        guard: &guard,
    };
    let ctx = Ctx::<JqData>::new(data, Vars::new([]));
    let mut out = Vec::new();
    for input in inputs {
        for y in program.id.run((ctx.clone(), from_value(input))) {
            let y = match y {
                Ok(y) => y,
                Err(e) => match exn_message(e) {
                    Some(m) => {
                        return Err(ExtractError::Runtime {
                            line: None,
                            message: m.text(),
                        });
                    }
                    None => break,
                },
            };
            out.push(to_value(&y, 0, &NoOriginals)?);
        }
    }
    Ok(out)
}
