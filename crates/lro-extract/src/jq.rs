//! jq filters over offload files, run by jaq, stoppable at any step.
//!
//! # How a runaway query is stopped
//!
//! jaq evaluates a filter as a tree of iterators on the calling thread; it
//! has no cancellation hook. Two facts make one:
//!
//! * jaq looks up every term it evaluates through the context's data
//!   ([`jaq_core::data::HasLut::lut`]), which is ours ([`GuardedData`]). That
//!   lookup checks a cancel flag (one relaxed atomic load) and the stack
//!   depth (one address comparison). When the flag is set, it unwinds the
//!   evaluation with [`std::panic::resume_unwind`] (which skips the panic
//!   hook, so nothing is printed); the worker catches the unwind, every
//!   value is dropped, and the thread ends. `repeat(.)`,
//!   `last(range(infinite))` via `reduce`-like natives calling back into
//!   terms, `def f: f; f`, `[limit(1e8; repeat(1))]`: all evaluate terms at
//!   every step, so all stop within microseconds of the flag.
//! * The one native generator that yields without evaluating terms is
//!   `range/3` (a Rust loop in jaq-core): it is replaced by our own `range`
//!   that checks the flag before every number, so `[range(1e9)]` and
//!   `last(range(infinite))` stop too.
//!
//! The limits: a single native operation on a huge value (sorting a
//! 10-million-element array, `"x" * 1e9`) runs to its end before the next
//! check, and dropping a value nested millions of levels deep recurses on
//! the worker's stack, which is sized from the timeout ([`worker_stack`]) so
//! that whatever a query can build in its time can also be dropped. Both
//! are bounded by what a query can build before its timeout; memory is
//! not capped separately (`[range(1e9)]` reaches ~2 GB in 5 s here). Unwinding needs `panic = "unwind"` (the
//! default); under `panic = "abort"` a timed-out worker is abandoned instead
//! and finishes on its own.
//!
//! Deep recursion (`def f: [f]; f`) is caught by the stack check and
//! reported as a runtime error instead of overflowing the stack.
//!
//! Not available to queries: `env`/`$ENV` (would leak the server's
//! environment), `input`/`inputs`, `halt`, module imports.

use std::{
    borrow::Cow,
    io::{BufRead, BufReader, Read},
    rc::Rc,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use jaq_core::{
    Ctx, DataT, Exn, Native, Vars,
    box_iter::box_once,
    data::HasLut,
    load::{Arena, File, Loader, lex, parse},
    native::v,
};
use jaq_json::Val;
use serde_json::Value;

use crate::{
    ExtractError,
    output::{Collector, Flow, Window, floor_char_boundary},
    render,
};

/// Smallest stack of a worker thread. Stacks are reserved address space;
/// only the pages a query touches are ever backed by memory.
pub(crate) const WORKER_STACK: usize = 256 * 1024 * 1024;
/// Largest stack of a worker thread (see [`worker_stack`]).
pub(crate) const MAX_WORKER_STACK: usize = 8 * 1024 * 1024 * 1024;

/// The worker stack for a given timeout.
///
/// jaq drops values recursively, and a query can build a value nested as
/// deep as its time allows (`reduce range(1e9) as $i (null; [.])` nests
/// about 1.5 million levels a second here, each needing ~64 bytes of stack
/// to drop). Dropping it when the query ends or is cancelled must not
/// overflow the stack, which would abort the whole process. So the stack
/// grows with the timeout: 200 MiB per second (about twice what that
/// query needs), between [`WORKER_STACK`] and [`MAX_WORKER_STACK`].
pub(crate) fn worker_stack(timeout: std::time::Duration) -> usize {
    let per_second = 200.0 * 1024.0 * 1024.0;
    let want = timeout.as_secs_f64() * per_second;
    (want as usize).clamp(WORKER_STACK, MAX_WORKER_STACK)
}
/// Stack a query may use before it is stopped as too deeply recursive; the
/// rest is headroom for natives and for dropping values.
pub(crate) const STACK_BUDGET: usize = 128 * 1024 * 1024;
/// Deepest value nesting rendered or converted.
pub(crate) const MAX_DEPTH: usize = 10_000;
/// Longest error message kept from jaq (its messages embed values).
const MAX_MESSAGE: usize = 400;

/// Where records that pass through a filter unchanged came from: their
/// original line is printed instead of re-rendering the value (which, for a
/// projected record, holds only some fields).
pub(crate) trait Originals {
    /// The original JSON text of `v`, when `v` is a record from the file.
    fn original(&self, v: &Val) -> Option<&[u8]>;
}

/// No record has an original line.
pub(crate) struct NoOriginals;

impl Originals for NoOriginals {
    fn original(&self, _: &Val) -> Option<&[u8]> {
        None
    }
}

/// The record being processed (non-slurp) and its line.
struct OneOriginal<'a> {
    record: &'a Val,
    line: &'a [u8],
}

impl Originals for OneOriginal<'_> {
    fn original(&self, v: &Val) -> Option<&[u8]> {
        same_value(v, self.record).then_some(self.line)
    }
}

/// Every record of a slurped file, by the address of its object. The
/// records are kept alive for the whole evaluation, so an address can never
/// be reused by a new object.
#[derive(Default)]
struct ManyOriginals {
    text: Vec<u8>,
    spans: std::collections::HashMap<usize, (usize, usize)>,
}

impl ManyOriginals {
    fn add(&mut self, v: &Val, line: &[u8]) {
        if let Val::Obj(rc) = v {
            let start = self.text.len();
            self.text.extend_from_slice(line);
            self.spans.insert(obj_addr(rc), (start, line.len()));
        }
    }
}

impl Originals for ManyOriginals {
    fn original(&self, v: &Val) -> Option<&[u8]> {
        let Val::Obj(rc) = v else { return None };
        let (start, len) = *self.spans.get(&obj_addr(rc))?;
        Some(&self.text[start..start + len])
    }
}

fn obj_addr(rc: &Rc<jaq_json::Map>) -> usize {
    Rc::as_ptr(rc) as *const () as usize
}

/// Why an evaluation unwound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The cancel flag was set (timeout).
    Cancelled,
    /// The stack budget was exceeded.
    TooDeep,
}

/// The cancel flag and stack budget of one evaluation.
#[derive(Debug)]
pub(crate) struct Guard {
    cancel: Arc<AtomicBool>,
    stack_base: usize,
}

fn stack_address() -> usize {
    let marker = 0u8;
    // The address of a local is the current stack position; black_box keeps
    // the local from being optimized away.
    std::hint::black_box(&marker) as *const u8 as usize
}

impl Guard {
    /// A guard for the current thread, stopping when `cancel` is set.
    pub(crate) fn new(cancel: Arc<AtomicBool>) -> Self {
        Self {
            cancel,
            stack_base: stack_address(),
        }
    }

    /// A guard that is never cancelled (for tests).
    #[cfg(test)]
    pub(crate) fn unbounded() -> Self {
        Self::new(Arc::new(AtomicBool::new(false)))
    }

    /// Whether cancellation was requested.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Unwinds the evaluation when cancelled or too deep. Called by jaq for
    /// every term it evaluates.
    #[inline]
    fn check(&self) {
        if self.cancel.load(Ordering::Relaxed) {
            std::panic::resume_unwind(Box::new(Stop::Cancelled));
        }
        if self.stack_base.abs_diff(stack_address()) > STACK_BUDGET {
            std::panic::resume_unwind(Box::new(Stop::TooDeep));
        }
    }
}

/// The jaq data kind of our evaluations: JSON values, plus a guard reached
/// on every term lookup.
pub(crate) struct JqData;

impl DataT for JqData {
    type V<'a> = Val;
    type Data<'a> = GuardedData<'a>;
}

/// The run-time data: the program's look-up table and the guard.
#[derive(Clone)]
pub(crate) struct GuardedData<'a> {
    lut: &'a jaq_core::Lut<JqData>,
    guard: &'a Guard,
}

impl<'a> HasLut<'a, JqData> for GuardedData<'a> {
    fn lut(&self) -> &'a jaq_core::Lut<JqData> {
        self.guard.check();
        self.lut
    }
}

/// A compiled filter.
pub(crate) type Program = jaq_core::Filter<JqData>;

/// Our natives: jaq-core's, jaq-std's and jaq-json's, minus the ones a query
/// must not reach, with a cancellable `range`.
fn natives() -> Vec<jaq_core::native::Fun<JqData>> {
    const BLOCKED: &[&str] = &["range", "env", "halt", "input", "inputs"];
    let ours: [jaq_core::native::Fun<JqData>; 6] = [
        ("test", v(1), Native::<JqData>::new(test1_native)),
        ("test", v(2), Native::<JqData>::new(test2_native)),
        ("range", v(3), Native::<JqData>::new(range_native)),
        ("halt", v(1), Native::<JqData>::new(halt_native)),
        ("@tsv", v(0), Native::<JqData>::new(tsv_native)),
        ("@csv", v(0), Native::<JqData>::new(csv_native)),
    ];
    ours.into_iter()
        .chain(
            jaq_core::funs::<JqData>()
                .chain(jaq_std::funs())
                .chain(jaq_json::funs())
                .filter(|(name, _, _)| !BLOCKED.contains(name)),
        )
        .collect()
}

fn range_native<'a>(
    mut cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    let by = cv.0.pop_var();
    let to = cv.0.pop_var();
    let from = cv.0.pop_var();
    let guard = cv.0.data().guard;
    Box::new(range(from, to, by).inspect(move |_| guard.check()))
}

fn halt_native<'a>(_cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    box_once(Err(Exn::from(jaq_core::Error::str(
        "halt is not available in lro_extract",
    ))))
}

fn test1_native<'a>(
    mut cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    let re = cv.0.pop_var();
    box_once(regex_test(&cv.1, &re, "").map_err(Exn::from))
}

fn test2_native<'a>(
    mut cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    let flags = cv.0.pop_var();
    let re = cv.0.pop_var();
    let flags = match &flags {
        Val::TStr(f) => String::from_utf8_lossy(f).into_owned(),
        Val::Null => String::new(),
        other => {
            return box_once(Err(Exn::from(jaq_core::Error::str(format_args!(
                "{other} is not a string of regex flags"
            )))));
        }
    };
    box_once(regex_test(&cv.1, &re, &flags).map_err(Exn::from))
}

thread_local! {
    /// The last regex compiled on this thread: a per-record `test($kw)`
    /// compiles its pattern once per query instead of once per record.
    static LAST_REGEX: std::cell::RefCell<Option<(Vec<u8>, String, regex::Regex)>> =
        const { std::cell::RefCell::new(None) };
}

/// jq's `test(re; flags)`: whether the input string matches. Flags: `i`
/// (case-insensitive), `x` (extended), `s` (`.` matches newline), `p` (`s`
/// plus multi-line); `g`, `n`, `l` do not change a yes/no answer.
fn regex_test(input: &Val, re: &Val, flags: &str) -> Result<Val, jaq_core::Error<Val>> {
    let Val::TStr(text) = input else {
        return Err(jaq_core::Error::str(format_args!(
            "{input} cannot be matched, as it is not a string"
        )));
    };
    let Val::TStr(pattern) = re else {
        return Err(jaq_core::Error::str(format_args!("{re} is not a string")));
    };
    LAST_REGEX.with(|cache| {
        let mut cache = cache.borrow_mut();
        let hit = matches!(&*cache, Some((p, f, _)) if p.as_slice() == &pattern[..] && f == flags);
        if !hit {
            let mut builder = regex::RegexBuilder::new(&String::from_utf8_lossy(pattern));
            for c in flags.chars() {
                match c {
                    'i' => builder.case_insensitive(true),
                    'x' => builder.ignore_whitespace(true),
                    's' => builder.dot_matches_new_line(true),
                    'p' => builder.dot_matches_new_line(true).multi_line(true),
                    'g' | 'n' | 'l' => &mut builder,
                    other => {
                        return Err(jaq_core::Error::str(format_args!(
                            "{other} is not a valid regex flag"
                        )));
                    }
                };
            }
            let re = builder
                .build()
                .map_err(|e| jaq_core::Error::str(format_args!("invalid regex: {e}")))?;
            *cache = Some((pattern.to_vec(), flags.to_owned(), re));
        }
        let (_, _, re) = cache.as_ref().expect("just filled");
        Ok(Val::Bool(re.is_match(&String::from_utf8_lossy(text))))
    })
}

fn tsv_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    box_once(format_row(&cv.1, "tsv").map_err(Exn::from))
}

fn csv_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    box_once(format_row(&cv.1, "csv").map_err(Exn::from))
}

/// jq's `@tsv` / `@csv` (not provided by jaq's libraries): an array of
/// scalars to one row. `@tsv` escapes `\\`, tab, newline and CR; `@csv`
/// quotes strings, doubling quotes; null is empty.
fn format_row(v: &Val, kind: &str) -> Result<Val, jaq_core::Error<Val>> {
    let Val::Arr(items) = v else {
        return Err(jaq_core::Error::str(format_args!(
            "cannot {kind}-format {v}, only an array can be"
        )));
    };
    let mut row = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            row.push(if kind == "tsv" { b'\t' } else { b',' });
        }
        match item {
            Val::Null => {}
            Val::Bool(b) => row.extend_from_slice(if *b { b"true" } else { b"false" }),
            Val::Num(n) => write_num(&mut row, n),
            Val::TStr(s) | Val::BStr(s) if kind == "tsv" => {
                for &b in s.iter() {
                    match b {
                        b'\\' => row.extend_from_slice(b"\\\\"),
                        b'\t' => row.extend_from_slice(b"\\t"),
                        b'\n' => row.extend_from_slice(b"\\n"),
                        b'\r' => row.extend_from_slice(b"\\r"),
                        b => row.push(b),
                    }
                }
            }
            Val::TStr(s) | Val::BStr(s) => {
                row.push(b'"');
                for &b in s.iter() {
                    if b == b'"' {
                        row.push(b'"');
                    }
                    row.push(b);
                }
                row.push(b'"');
            }
            other => {
                return Err(jaq_core::Error::str(format_args!(
                    "{other} is not valid in a {kind} row"
                )));
            }
        }
    }
    Ok(Val::utf8_str(row))
}

/// `range($from; $to; $by)` as in jq: numbers from `from` stepping by `by`
/// while before `to` (or after it, for a negative step).
fn range<'a>(from: Val, to: Val, by: Val) -> impl Iterator<Item = Result<Val, Exn<'a, Val>>> + 'a {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let dir = by.partial_cmp(&Val::from(0isize)).unwrap_or(Equal);
    let mut next = Some(from);
    std::iter::from_fn(move || {
        let x = next.take()?;
        let go_on = match dir {
            Greater => x < to,
            Less => x > to,
            Equal => x != to,
        };
        if !go_on {
            return None;
        }
        match x.clone() + by.clone() {
            Ok(n) => next = Some(n),
            Err(e) => return Some(Err(Exn::from(e))),
        }
        Some(Ok(x))
    })
}

/// Compiles `code` with the given global variables (names without `$`).
pub(crate) fn compile_with_vars(code: &str, vars: &[&str]) -> Result<Program, ExtractError> {
    // `test` is ours (native, with a compiled-regex cache).
    let defs = jaq_core::defs()
        .chain(jaq_std::defs().filter(|d| d.name != "test"))
        .chain(jaq_json::defs());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
        .load(&arena, File { code, path: () })
        .map_err(|errs| ExtractError::Compile(load_errors(code, errs)))?;
    let dollar: Vec<String> = vars.iter().map(|v| format!("${v}")).collect();
    jaq_core::Compiler::default()
        .with_funs(natives())
        .with_global_vars(dollar.iter().map(String::as_str))
        .compile(modules)
        .map_err(|errs| {
            let msgs: Vec<String> = errs
                .into_iter()
                .flat_map(|(_, es)| es)
                .map(|(name, undefined)| match undefined {
                    jaq_core::compile::Undefined::Filter(arity) => {
                        format!("undefined filter {name}/{arity}")
                    }
                    other => format!("undefined {} {name}", other.as_str()),
                })
                .collect();
            ExtractError::Compile(msgs.join("; "))
        })
}

/// Compiles `code` with no variables.
#[cfg(test)]
pub(crate) fn compile(code: &str) -> Result<Program, ExtractError> {
    compile_with_vars(code, &[])
}

fn load_errors(code: &str, errs: jaq_core::load::Errors<&str, ()>) -> String {
    let at = |part: &str| {
        // `part` is a slice of `code` (the rest of the input at the error).
        let start = (part.as_ptr() as usize).saturating_sub(code.as_ptr() as usize);
        let snippet: String = part.chars().take(20).collect();
        if snippet.is_empty() {
            format!("at end of filter (offset {start})")
        } else {
            format!("at offset {start} near {snippet:?}")
        }
    };
    let mut msgs = Vec::new();
    for (_, err) in errs {
        match err {
            jaq_core::load::Error::Io(es) => {
                msgs.extend(
                    es.into_iter()
                        .map(|(p, e)| format!("cannot import {p}: {e}")),
                );
            }
            jaq_core::load::Error::Lex(es) => msgs.extend(es.into_iter().map(
                |(expect, part): (lex::Expect<&str>, &str)| {
                    format!("expected {} {}", expect.as_str(), at(part))
                },
            )),
            jaq_core::load::Error::Parse(es) => msgs.extend(es.into_iter().map(
                |(expect, part): (parse::Expect<&str>, &str)| {
                    format!("expected {} {}", expect.as_str(), at(part))
                },
            )),
        }
    }
    msgs.join("; ")
}

fn short(mut s: String) -> String {
    if s.len() > MAX_MESSAGE {
        let cut = floor_char_boundary(&s, MAX_MESSAGE).len();
        s.truncate(cut);
        s.push('…');
    }
    s
}

fn exn_message(e: Exn<'_, Val>) -> String {
    match e.get_err() {
        Ok(err) => short(err.to_string()),
        Err(other) => match other.get_halt() {
            Ok(code) => format!("halt({code}) is not available in lro_extract"),
            Err(_) => "internal jaq control flow escaped".to_owned(),
        },
    }
}

/// How to print results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Render {
    /// Print strings raw (`jq -r`).
    pub(crate) raw: bool,
}

/// A jq job over one file.
pub(crate) struct Job<'g> {
    pub(crate) program: &'g Program,
    /// Parse only these fields, when the filter allows it.
    pub(crate) projection: Option<crate::project::Projection>,
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
        let parse = |line: &[u8], line_no: usize| -> Result<Val, ExtractError> {
            match fields.and_then(|f| crate::project::project_line(line, f)) {
                Some(v) => Ok(v),
                None => parse_record(line, line_no),
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
                let v = parse(line, line_no)?;
                if keep_lines {
                    originals.add(&v, line);
                }
                all.push(v);
            }
            // Held until the end so record addresses stay unique (see
            // `ManyOriginals`).
            let records = Val::Arr(Rc::new(all));
            let originals: &dyn Originals = if keep_lines { &originals } else { &NoOriginals };
            let mut results = Vec::new();
            for y in self.program.id.run((ctx.clone(), records.clone())) {
                results.push(y.map_err(|e| ExtractError::Runtime {
                    line: None,
                    message: exn_message(e),
                })?);
            }
            if results.len() == 1 {
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
            return Ok(());
        }
        'records: while let Some((line_no, line)) = lines.next_line()? {
            if self.guard.cancelled() {
                return Err(cancelled());
            }
            if let Some(fast) = &self.fast {
                match fast.apply(line) {
                    Some(crate::fast::FastOut::Skip) => continue,
                    Some(crate::fast::FastOut::Line) if out.fits(line) => {
                        if push_fast(out, line, false) == Flow::Stop {
                            break 'records;
                        }
                        continue;
                    }
                    Some(crate::fast::FastOut::Bytes(b)) if out.fits(&b) => {
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
            let input = parse(line, line_no)?;
            let originals = OneOriginal {
                record: &input,
                line,
            };
            for y in self.program.id.run((ctx.clone(), input.clone())) {
                let y = y.map_err(|e| ExtractError::Runtime {
                    line: Some(line_no),
                    message: exn_message(e),
                })?;
                if emit(&y, self.render, out, &originals)? == Flow::Stop {
                    break 'records;
                }
            }
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
        render::canonical(bytes)
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

fn same_value(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Obj(x), Val::Obj(y)) => Rc::ptr_eq(x, y),
        (Val::Arr(x), Val::Arr(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

fn parse_record(line: &[u8], line_no: usize) -> Result<Val, ExtractError> {
    jaq_json::read::parse_single(line).map_err(|e| ExtractError::BadRecord {
        line: line_no,
        message: e.to_string(),
    })
}

/// Record lines of a reader: trailing `\r\n` trimmed, blank lines skipped.
pub(crate) struct Lines<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    line_no: usize,
}

impl<R: Read> Lines<R> {
    pub(crate) fn new(reader: R, first_line: usize) -> Self {
        Self {
            reader: BufReader::with_capacity(256 * 1024, reader),
            buf: Vec::new(),
            line_no: first_line.saturating_sub(1),
        }
    }

    /// The next non-blank line and its 1-based file line number.
    pub(crate) fn next_line(&mut self) -> Result<Option<(usize, &[u8])>, ExtractError> {
        loop {
            self.buf.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| ExtractError::Io {
                    path: Default::default(),
                    source,
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let mut end = self.buf.len();
            while end > 0 && matches!(self.buf[end - 1], b'\n' | b'\r') {
                end -= 1;
            }
            if self.buf[..end].iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some((self.line_no, &self.buf[..end])));
        }
    }
}

/// Renders one result and hands it to the collector. A first result that
/// is too big on its own is shown in part: an array or object cut at an
/// element, a string shortened (raw text at a line end), never broken JSON.
fn emit(
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

fn too_deep() -> ExtractError {
    ExtractError::Runtime {
        line: None,
        message: format!("result nested deeper than {MAX_DEPTH} levels"),
    }
}

/// Writes `v` as compact JSON, the way `jq -c` does, through the one
/// rendering of [`render`]. Returns `Ok(false)` as soon as more than `cap`
/// bytes were written.
pub(crate) fn write_json(
    out: &mut Vec<u8>,
    v: &Val,
    depth: usize,
    cap: usize,
    orig: &dyn Originals,
) -> Result<bool, ExtractError> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    if let Some(line) = orig.original(v) {
        out.extend_from_slice(&render::canonical(line));
        return Ok(out.len() <= cap);
    }
    match v {
        Val::Null => out.extend_from_slice(b"null"),
        Val::Bool(true) => out.extend_from_slice(b"true"),
        Val::Bool(false) => out.extend_from_slice(b"false"),
        Val::Num(n) => write_num(out, n),
        Val::TStr(s) | Val::BStr(s) => render::write_str(out, s),
        Val::Arr(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if !write_json(out, item, depth + 1, cap, orig)? {
                    return Ok(false);
                }
            }
            out.push(b']');
        }
        Val::Obj(map) => {
            out.push(b'{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match k {
                    Val::TStr(s) | Val::BStr(s) => render::write_str(out, s),
                    other => {
                        // jaq allows non-string keys; JSON does not.
                        let mut key = Vec::new();
                        write_json(&mut key, other, depth + 1, cap, &NoOriginals)?;
                        render::write_str(out, &key);
                    }
                }
                out.push(b':');
                if !write_json(out, item, depth + 1, cap, orig)? {
                    return Ok(false);
                }
            }
            out.push(b'}');
        }
    }
    Ok(out.len() <= cap)
}

fn write_num(out: &mut Vec<u8>, n: &jaq_json::Num) {
    use jaq_json::Num;
    match n {
        Num::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Num::Float(f) => render::write_f64(out, *f),
        // Decimal literals and big integers: through their text, so they
        // print like the same number read from a file.
        other => render::write_number_text(out, other.to_string().as_bytes()),
    }
}

/// Converts a jaq value into a `serde_json` value.
pub(crate) fn to_value(v: &Val, depth: usize, orig: &dyn Originals) -> Result<Value, ExtractError> {
    use jaq_json::Num;
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    if let Some(value) = orig
        .original(v)
        .and_then(|line| serde_json::from_slice(line).ok())
    {
        return Ok(value);
    }
    Ok(match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Num(Num::Int(i)) => Value::from(*i as i64),
        Val::Num(Num::Float(f)) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Val::Num(n) => {
            let text = n.to_string();
            serde_json::from_str(&text)
                .ok()
                .filter(Value::is_number)
                .unwrap_or_else(|| {
                    text.parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(Value::Number)
                        .unwrap_or(Value::Null)
                })
        }
        Val::TStr(s) | Val::BStr(s) => Value::String(String::from_utf8_lossy(s).into_owned()),
        Val::Arr(items) => Value::Array(
            items
                .iter()
                .map(|i| to_value(i, depth + 1, orig))
                .collect::<Result<_, _>>()?,
        ),
        Val::Obj(map) => {
            let mut obj = serde_json::Map::new();
            for (k, item) in map.iter() {
                let key = match k {
                    Val::TStr(s) | Val::BStr(s) => String::from_utf8_lossy(s).into_owned(),
                    other => other.to_string(),
                };
                obj.insert(key, to_value(item, depth + 1, orig)?);
            }
            Value::Object(obj)
        }
    })
}

/// Converts a `serde_json` value into a jaq value.
#[cfg(test)]
pub(crate) fn from_value(v: &Value) -> Val {
    match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => {
            jaq_json::read::parse_single(n.to_string().as_bytes()).unwrap_or(Val::Null)
        }
        Value::String(s) => Val::from(s.clone()),
        Value::Array(a) => a.iter().map(from_value).collect(),
        Value::Object(o) => Val::obj(
            o.iter()
                .map(|(k, v)| (Val::from(k.clone()), from_value(v)))
                .collect(),
        ),
    }
}

/// Runs `code` on each of `inputs` with no bounds and returns every output:
/// a convenience for tests, not for untrusted filters.
#[cfg(test)]
pub(crate) fn eval_values(code: &str, inputs: &[Value]) -> Result<Vec<Value>, ExtractError> {
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
            let y = y.map_err(|e| ExtractError::Runtime {
                line: None,
                message: exn_message(e),
            })?;
            out.push(to_value(&y, 0, &NoOriginals)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn std_filters_work() {
        let out = eval_values(
            "[.[] | select(.n > 1)] | sort_by(-.n) | map(.n)",
            &[json!([{"n": 1}, {"n": 3}, {"n": 2}])],
        )
        .unwrap();
        assert_eq!(out, [json!([3, 2])]);
        let out = eval_values(
            "[.t, .u, null, 1] | @tsv",
            &[json!({"t": "a\tb\\", "u": "c"})],
        )
        .unwrap();
        assert_eq!(out, [json!("a\\tb\\\\\tc\t\t1")]);
        let out = eval_values("[.t, 2, true] | @csv", &[json!({"t": "say \"hi\""})]).unwrap();
        assert_eq!(out, [json!("\"say \"\"hi\"\"\",2,true")]);
        assert!(eval_values("[{}] | @tsv", &[json!(null)]).is_err());
        let out = eval_values(
            "select(.s | test(\"CACHE\"; \"i\"))",
            &[json!({"s": "cache hit"}), json!({"s": "miss"})],
        )
        .unwrap();
        assert_eq!(out.len(), 1);
        let out = eval_values("[range(0; 10; 3)]", &[json!(null)]).unwrap();
        assert_eq!(out, [json!([0, 3, 6, 9])]);
        let out = eval_values("[range(5; 0; -2)]", &[json!(null)]).unwrap();
        assert_eq!(out, [json!([5, 3, 1])]);
    }

    #[test]
    fn compile_errors_are_readable() {
        let e = compile("map(").err().unwrap().to_string();
        assert!(e.contains("expected"), "{e}");
        let e = compile("nosuchfilter(1)").err().unwrap().to_string();
        assert!(e.contains("undefined filter nosuchfilter/1"), "{e}");
        let e = compile("$nope").err().unwrap().to_string();
        assert!(e.contains("undefined variable"), "{e}");
        for blocked in ["env", "$ENV", "input", "inputs", "import \"x\" as x; ."] {
            assert!(compile(blocked).is_err(), "{blocked} must not compile");
        }
    }

    #[test]
    fn halt_is_an_error_not_an_exit() {
        let e = eval_values("halt_error", &[json!("bye")]).unwrap_err();
        assert!(e.to_string().contains("halt"), "{e}");
    }

    #[test]
    fn writes_jq_compatible_json() {
        let mut out = Vec::new();
        let v = from_value(&json!({"a": [1, 2.5, "x\"y\n\u{1}"], "b": null, "é": true}));
        assert!(write_json(&mut out, &v, 0, usize::MAX, &NoOriginals).unwrap());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":[1,2.5,"x\"y\n\u0001"],"b":null,"é":true}"#
        );
        let mut out = Vec::new();
        let nan = eval_values("[nan, infinite]", &[json!(null)]).unwrap();
        assert_eq!(nan, [json!([null, null])]);
        let v = jaq_json::read::parse_single(b"[1e1000]").unwrap();
        write_json(&mut out, &v, 0, usize::MAX, &NoOriginals).unwrap();
        assert!(!out.is_empty());
    }

    #[test]
    fn cap_stops_rendering_early() {
        let v = from_value(&json!((0..1000).collect::<Vec<_>>()));
        let mut out = Vec::new();
        assert!(!write_json(&mut out, &v, 0, 50, &NoOriginals).unwrap());
        assert!(out.len() < 100, "{}", out.len());
    }

    #[test]
    fn worker_stack_grows_with_the_timeout() {
        use std::time::Duration;
        assert_eq!(worker_stack(Duration::from_millis(300)), WORKER_STACK);
        assert_eq!(worker_stack(Duration::from_secs(5)), 1000 * 1024 * 1024);
        assert_eq!(worker_stack(Duration::from_secs(3600)), MAX_WORKER_STACK);
    }

    #[test]
    fn cancelled_guard_unwinds_with_stop() {
        let cancel = Arc::new(AtomicBool::new(true));
        let guard = Guard::new(cancel);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guard.check()));
        let payload = r.unwrap_err();
        assert_eq!(payload.downcast_ref::<Stop>(), Some(&Stop::Cancelled));
    }

    #[test]
    fn module_example() {
        use serde_json::json;

        let out = eval_values("map(.a) | add", &[json!([{"a": 1}, {"a": 2}])]).unwrap();
        assert_eq!(out, [json!(3)]);
        assert!(compile("map(").is_err());
    }
}
