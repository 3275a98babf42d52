//! A fast path for the simplest per-record filter shapes, run on the raw
//! line bytes without building jq values.
//!
//! Recognized shapes (operands are `$params` or string literals):
//!
//! * `select(.f == X)`, `select(.f | startswith(X))`,
//!   `select(.f | test(X))`, `select(.f | test(X; "flags"))`,
//!   `select(any(.f[]?; . == X))` — the record's line is printed unchanged;
//! * `{a, b, c}` — the fields' raw JSON is spliced into a new object;
//! * `[.a, .b] | @tsv` / `@csv`;
//! * `.f`;
//! * any of these followed by `?`, as the recipes write them.
//!
//! Anything else, and any record where a field has a type the shape does
//! not handle simply (where jq would raise an error or coerce), goes to
//! jaq: [`FastFilter::apply`] returns `None` and the engine evaluates that
//! record normally, so results and errors stay exactly jq's. The
//! differential tests compare both paths with the real jq.

use std::{borrow::Cow, collections::BTreeMap};

use jaq_core::{
    load::{
        lex::StrPart,
        parse::{BinaryOp, Term},
    },
    ops::Cmp,
    path::{Opt, Part},
};
use regex::Regex;

use crate::scan;

/// What the fast path made of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FastOut {
    /// No output for this record.
    Skip,
    /// The record itself, printed as its line.
    Line,
    /// One rendered output line (compact JSON, or raw text for `@tsv`).
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone)]
enum Pred {
    Eq(String),
    StartsWith(String),
    Test(Regex),
    AnyEq(String),
}

#[derive(Debug, Clone)]
enum Shape {
    Select { field: String, pred: Pred },
    Object(Vec<String>),
    Row { fields: Vec<String>, tsv: bool },
    Field(String),
}

/// A recognized filter, ready to run on lines.
#[derive(Debug, Clone)]
pub(crate) struct FastFilter {
    shape: Shape,
    fields: Vec<String>,
}

fn literal<'a>(t: &'a Term<&str>, vars: &'a BTreeMap<String, String>) -> Option<Cow<'a, str>> {
    match t {
        Term::Var(v) => vars
            .get(v.strip_prefix('$')?)
            .map(|s| Cow::Borrowed(s.as_str())),
        _ => string_literal(t).map(Cow::Owned),
    }
}

/// The text of a string literal without interpolation.
pub(crate) fn string_literal(t: &Term<&str>) -> Option<String> {
    let Term::Str(None, parts) = t else {
        return None;
    };
    let mut s = String::new();
    for part in parts {
        match part {
            StrPart::Str(x) => s.push_str(x),
            StrPart::Char(c) => s.push(*c),
            StrPart::Term(_) => return None,
        }
    }
    Some(s)
}

/// `.name` (or `.name?`, the same wherever the fast path answers) with a
/// plain key.
fn field_of(t: &Term<&str>) -> Option<String> {
    let Term::Path(base, path) = t else {
        return None;
    };
    if !matches!(**base, Term::Id) {
        return None;
    }
    match path.0.as_slice() {
        [(Part::Index(k), _)] => key_literal(k),
        _ => None,
    }
}

fn key_literal(t: &Term<&str>) -> Option<String> {
    match t {
        Term::Str(None, parts) => match parts.as_slice() {
            [StrPart::Str(s)] => Some((*s).to_owned()),
            _ => None,
        },
        _ => None,
    }
}

fn regex(pattern: &str, flags: &str) -> Option<Regex> {
    let mut b = regex::RegexBuilder::new(pattern);
    for c in flags.chars() {
        match c {
            'i' => b.case_insensitive(true),
            'x' => b.ignore_whitespace(true),
            's' => b.dot_matches_new_line(true),
            'g' | 'n' | 'l' => &mut b,
            _ => return None,
        };
    }
    b.build().ok()
}

fn pred(t: &Term<&str>, vars: &BTreeMap<String, String>) -> Option<(String, Pred)> {
    match t {
        // `.f == X`
        Term::BinOp(l, BinaryOp::Cmp(Cmp::Eq), r) => {
            Some((field_of(l)?, Pred::Eq(literal(r, vars)?.into_owned())))
        }
        // `.f | startswith(X)`, `.f | test(X)`, `.f | test(X; "flags")`
        Term::BinOp(l, BinaryOp::Pipe(None), r) => {
            let field = field_of(l)?;
            match &**r {
                Term::Call("startswith", args) if args.len() == 1 => Some((
                    field,
                    Pred::StartsWith(literal(&args[0], vars)?.into_owned()),
                )),
                Term::Call("test", args) if args.len() == 1 => {
                    Some((field, Pred::Test(regex(&literal(&args[0], vars)?, "")?)))
                }
                Term::Call("test", args) if args.len() == 2 => Some((
                    field,
                    Pred::Test(regex(&literal(&args[0], vars)?, &literal(&args[1], vars)?)?),
                )),
                _ => None,
            }
        }
        // `any(.f[]?; . == X)`
        Term::Call("any", args) if args.len() == 2 => {
            let Term::Path(base, path) = &args[0] else {
                return None;
            };
            if !matches!(**base, Term::Id) {
                return None;
            }
            let field = match path.0.as_slice() {
                [
                    (Part::Index(k), Opt::Essential),
                    (Part::Range(None, None), Opt::Optional),
                ] => key_literal(k)?,
                _ => return None,
            };
            let Term::BinOp(l, BinaryOp::Cmp(Cmp::Eq), r) = &args[1] else {
                return None;
            };
            if !matches!(**l, Term::Id) {
                return None;
            }
            Some((field, Pred::AnyEq(literal(r, vars)?.into_owned())))
        }
        _ => None,
    }
}

impl FastFilter {
    /// Recognizes `code` with `vars` (jq string variables, without `$`).
    pub(crate) fn new(code: &str, vars: &BTreeMap<String, String>) -> Option<Self> {
        let term = jaq_core::load::parse(code, |p| p.term())?;
        // `F?` is `F` wherever the fast path answers: it hands jaq every
        // record on which `F` could fail, and jaq runs the whole `F?`.
        let term = match term {
            Term::TryCatch(inner, None) => *inner,
            term => term,
        };
        let shape = match &term {
            Term::Call("select", args) if args.len() == 1 => {
                let (field, pred) = pred(&args[0], vars)?;
                Shape::Select { field, pred }
            }
            Term::Obj(kvs) if !kvs.is_empty() => {
                let mut fields = Vec::new();
                for (k, v) in kvs {
                    if v.is_some() {
                        return None;
                    }
                    let name = key_literal(k)?;
                    if fields.contains(&name) {
                        return None;
                    }
                    fields.push(name);
                }
                Shape::Object(fields)
            }
            Term::BinOp(l, BinaryOp::Pipe(None), r) => {
                let tsv = match &**r {
                    Term::Call("@tsv", a) if a.is_empty() => true,
                    Term::Call("@csv", a) if a.is_empty() => false,
                    _ => return None,
                };
                let Term::Arr(Some(items)) = &**l else {
                    return None;
                };
                let mut parts = Vec::new();
                commas(items, &mut parts);
                let fields = parts
                    .into_iter()
                    .map(field_of)
                    .collect::<Option<Vec<_>>>()?;
                Shape::Row { fields, tsv }
            }
            t => Shape::Field(field_of(t)?),
        };
        let fields = match &shape {
            Shape::Select { field, .. } | Shape::Field(field) => vec![field.clone()],
            Shape::Object(f) | Shape::Row { fields: f, .. } => f.clone(),
        };
        Some(Self { shape, fields })
    }

    /// Runs on one record line; `None` hands the record to jaq.
    pub(crate) fn apply(&self, line: &[u8]) -> Option<FastOut> {
        let raw = raw_fields(line, &self.fields)?;
        match &self.shape {
            Shape::Select { pred, .. } => {
                let v = raw[0];
                let keep = match pred {
                    Pred::Eq(want) => match v {
                        Some(b) if b.first() == Some(&b'"') => &*decode_str(b)? == want.as_str(),
                        // Missing, null, numbers, ...: never equal to a string.
                        _ => false,
                    },
                    Pred::StartsWith(p) => decode_str(string(v?)?)?.starts_with(p.as_str()),
                    Pred::Test(re) => re.is_match(&decode_str(string(v?)?)?),
                    Pred::AnyEq(want) => match v {
                        None => false,
                        Some(b"null") => false,
                        Some(b) if b.first() == Some(&b'[') => {
                            let items: Vec<serde_json::Value> = serde_json::from_slice(b).ok()?;
                            items.iter().any(|i| i.as_str() == Some(want.as_str()))
                        }
                        // Objects iterate their values, strings error: jaq.
                        Some(_) => return None,
                    },
                };
                Some(if keep { FastOut::Line } else { FastOut::Skip })
            }
            Shape::Field(_) => Some(FastOut::Bytes(raw[0].unwrap_or(b"null").to_vec())),
            Shape::Object(names) => {
                let mut out = Vec::with_capacity(64);
                out.push(b'{');
                for (i, (name, v)) in names.iter().zip(&raw).enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.push(b'"');
                    out.extend_from_slice(name.as_bytes());
                    out.extend_from_slice(b"\":");
                    out.extend_from_slice(v.unwrap_or(b"null"));
                }
                out.push(b'}');
                Some(FastOut::Bytes(out))
            }
            Shape::Row { tsv, .. } => {
                let mut out = Vec::with_capacity(64);
                for (i, v) in raw.iter().enumerate() {
                    if i > 0 {
                        out.push(if *tsv { b'\t' } else { b',' });
                    }
                    match v {
                        None | Some(b"null") => {}
                        Some(b) if b.first() == Some(&b'"') => {
                            let s = decode_str(b)?;
                            if *tsv {
                                for c in s.bytes() {
                                    match c {
                                        b'\\' => out.extend_from_slice(b"\\\\"),
                                        b'\t' => out.extend_from_slice(b"\\t"),
                                        b'\n' => out.extend_from_slice(b"\\n"),
                                        b'\r' => out.extend_from_slice(b"\\r"),
                                        c => out.push(c),
                                    }
                                }
                            } else {
                                out.push(b'"');
                                out.extend_from_slice(s.replace('"', "\"\"").as_bytes());
                                out.push(b'"');
                            }
                        }
                        Some(b @ (b"true" | b"false")) => out.extend_from_slice(b),
                        // Numbers print differently in jq; arrays and objects
                        // are errors: let jaq handle the record.
                        Some(_) => return None,
                    }
                }
                Some(FastOut::Bytes(out))
            }
        }
    }

    /// Whether this fast path prints exactly what jq would with or
    /// without `-r`: rows only exist raw, a bare field only as JSON.
    pub(crate) fn fits_render(&self, raw: bool) -> bool {
        match self.shape {
            Shape::Row { .. } => raw,
            Shape::Field(_) => !raw,
            _ => true,
        }
    }
}

/// The operands of `a, b, c` in order (the parser nests them either way).
fn commas<'t, 's>(t: &'t Term<&'s str>, out: &mut Vec<&'t Term<&'s str>>) {
    match t {
        Term::BinOp(a, BinaryOp::Comma, b) => {
            commas(a, out);
            commas(b, out);
        }
        other => out.push(other),
    }
}

fn string(b: &[u8]) -> Option<&[u8]> {
    (b.first() == Some(&b'"')).then_some(b)
}

/// The text of a JSON string literal (with its quotes).
fn decode_str(b: &[u8]) -> Option<Cow<'_, str>> {
    let inner = b.get(1..b.len().checked_sub(1)?)?;
    if inner.contains(&b'\\') {
        serde_json::from_slice::<String>(b).ok().map(Cow::Owned)
    } else {
        std::str::from_utf8(inner).ok().map(Cow::Borrowed)
    }
}

/// The raw JSON text of each of `names` among the top-level fields of an
/// object line (`None` for a missing field; the last duplicate wins, as in
/// jq). `None` overall when the line is not a plain object.
fn raw_fields<'a>(line: &'a [u8], names: &[String]) -> Option<Vec<Option<&'a [u8]>>> {
    let mut found: Vec<Option<&[u8]>> = vec![None; names.len()];
    scan::object_members(line, scan::skip_ws(line, 0), |key, span| {
        if let Some(slot) = names.iter().position(|n| n.as_bytes() == key) {
            found[slot] = Some(&line[span]);
        }
        Some(())
    })?;
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        BTreeMap::from([("v".to_owned(), "x".to_owned())])
    }

    #[test]
    fn recognizes_recipe_shapes() {
        for code in [
            "select(.namespace | startswith($v))",
            "select(.title | test($v; \"i\"))",
            "select(.memory_type == $v)",
            "select(any(.tags[]?; . == $v))",
            "{id, title, namespace}",
            "[.title, .namespace] | @tsv",
            ".id",
            "select(.memory_type == $v)?",
            "([.title, .namespace] | @tsv)?",
            "{id, title}?",
            ".id?",
            // The line recipes.
            "([.line, .text] | @tsv)?",
            "select(.text | test($v; \"i\"))?",
            "select(.text | startswith($v))?",
        ] {
            assert!(FastFilter::new(code, &vars()).is_some(), "{code}");
        }
        for code in [
            "select(.a == .b)",
            "{id: .x}",
            "[.a, 1] | @tsv",
            "select(.a | test($undefined))",
            ".a.b",
            "select(.a != $v)",
        ] {
            assert!(FastFilter::new(code, &vars()).is_none(), "{code}");
        }
    }

    #[test]
    fn outputs() {
        let line = br#"{"id":"m\u0031","t":"a\tb","n":1,"tags":["x","y"],"o":{"k":1}}"#;
        let run = |code: &str| FastFilter::new(code, &vars()).unwrap().apply(line);
        assert_eq!(run("select(.id == \"m1\")"), Some(FastOut::Line));
        assert_eq!(run("select(.n == $v)"), Some(FastOut::Skip));
        assert_eq!(run("select(any(.tags[]?; . == $v))"), Some(FastOut::Line));
        assert_eq!(
            run("select(any(.missing[]?; . == $v))"),
            Some(FastOut::Skip)
        );
        assert_eq!(run("select(any(.o[]?; . == $v))"), None);
        assert_eq!(
            run("{id, nope}"),
            Some(FastOut::Bytes(br#"{"id":"m\u0031","nope":null}"#.to_vec()))
        );
        assert_eq!(
            run("[.t, .id, .nope] | @tsv"),
            Some(FastOut::Bytes(b"a\\tb\tm1\t".to_vec()))
        );
        assert_eq!(run("[.n] | @tsv"), None);
        assert_eq!(run("select(.n | startswith($v))"), None);
        assert_eq!(run(".o"), Some(FastOut::Bytes(br#"{"k":1}"#.to_vec())));
        assert_eq!(FastFilter::new(".id", &vars()).unwrap().apply(b"[1]"), None);
        // `?` leaves to jaq what it leaves without.
        let opt = |code: &str, line: &[u8]| FastFilter::new(code, &vars()).unwrap().apply(line);
        assert_eq!(opt(".id?", b"\"s\""), None);
        assert_eq!(opt("select(.n | startswith($v))?", line), None);
        assert_eq!(opt("select(.id == \"m1\")?", line), Some(FastOut::Line));
    }

    #[test]
    fn module_example() {
        use std::collections::BTreeMap;

        let vars = BTreeMap::from([("ns".to_owned(), "_semantic".to_owned())]);
        let f = FastFilter::new("select(.namespace | startswith($ns))", &vars).unwrap();
        assert_eq!(
            f.apply(br#"{"namespace":"_semantic/x"}"#),
            Some(FastOut::Line)
        );
        assert_eq!(
            f.apply(br#"{"namespace":"_episodic/y"}"#),
            Some(FastOut::Skip)
        );
        assert_eq!(f.apply(br#"{"namespace":7}"#), None); // jq raises an error: let jaq say it
    }
}
