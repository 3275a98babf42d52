//! Fast paths for the slurping shapes of the recipes, run on raw lines
//! without building jq values:
//!
//! * `sort_by(.a.b)` and `sort_by(-.a.b)`: only the sort keys are read;
//!   the lines are printed from the file (see `sort`);
//! * `group_by(.a.b) | map({name: .[0].a.b, count: length})` (or
//!   `(.[0] | .a.b)`, entries in any order): only the keys are counted
//!   (see `count`).
//!
//! Keys are scalars ordered as jq 1.6 orders them (`key`). A record whose
//! key jq would fail on or that is an array or object makes the fast path
//! decline before anything is printed, and the filter runs on jaq, so the
//! output and errors stay jq's. The one result is cut and paged like any
//! slurped array.

mod count;
mod key;
mod sort;

use std::{borrow::Cow, io::Read};

use jaq_core::{
    load::parse::{BinaryOp, Term},
    path::{Opt, Part},
};
use serde_json::Value;

use crate::{
    ExtractError,
    fast::string_literal,
    jq::{Elements, Guard, emit_parts, emit_whole},
    output::{Collector, Window},
};

/// A recognized slurping filter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Slurp {
    /// `sort_by(path)`, or `sort_by(-path)` with `negate`.
    SortBy { path: Vec<String>, negate: bool },
    /// `group_by(path) | map({...})` with these entries.
    CountBy {
        path: Vec<String>,
        entries: Vec<Entry>,
    },
}

/// An entry of the per-group object of [`Slurp::CountBy`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// `name: .[0].path`.
    First(String),
    /// `name: length`.
    Count(String),
}

impl Slurp {
    /// Recognizes `code`, a filter over the array of all records.
    pub(crate) fn new(code: &str) -> Option<Self> {
        let term = jaq_core::load::parse(code, |p| p.term())?;
        match &term {
            Term::Call("sort_by", args) => match args.as_slice() {
                [Term::Neg(inner)] => Some(Slurp::SortBy {
                    path: path(inner)?,
                    negate: true,
                }),
                [by] => Some(Slurp::SortBy {
                    path: path(by)?,
                    negate: false,
                }),
                _ => None,
            },
            Term::BinOp(l, BinaryOp::Pipe(None), r) => {
                let (Term::Call("group_by", by), Term::Call("map", f)) = (&**l, &**r) else {
                    return None;
                };
                let ([by], [Term::Obj(kvs)]) = (by.as_slice(), f.as_slice()) else {
                    return None;
                };
                let path = path(by)?;
                let entries = kvs
                    .iter()
                    .map(|(k, v)| entry(k, v.as_ref()?, &path))
                    .collect::<Option<Vec<_>>>()?;
                let mut names: Vec<&str> = entries.iter().map(Entry::name).collect();
                names.sort_unstable();
                names.dedup();
                (!entries.is_empty() && names.len() == entries.len())
                    .then_some(Slurp::CountBy { path, entries })
            }
            _ => None,
        }
    }

    /// Runs over the records of `reader` (about `size` bytes) and hands the
    /// one result to `out` (its elements in `window` when one is set).
    /// `Ok(false)` when the records need jaq: nothing was handed to `out`.
    pub(crate) fn run(
        &self,
        reader: impl Read,
        size: usize,
        window: Window,
        guard: &Guard,
        out: &mut Collector,
    ) -> Result<bool, ExtractError> {
        // The file's text, which a sort's lines borrow.
        let mut text = Vec::new();
        let found = match self {
            Slurp::SortBy { path, negate } => {
                sort::sorted(reader, size, &mut text, path, *negate, guard)?
            }
            Slurp::CountBy { path, entries } => count::groups(reader, path, guard)?.map(|groups| {
                groups
                    .iter()
                    .map(|g| Cow::Owned(count::render_group(g, entries)))
                    .collect()
            }),
        };
        let Some(elements) = found else {
            return Ok(false);
        };
        emit(&Rendered(elements), window, out)?;
        Ok(true)
    }
}

impl Entry {
    fn name(&self) -> &str {
        match self {
            Entry::First(n) | Entry::Count(n) => n,
        }
    }
}

/// Hands the one result over as the job hands a slurped array.
fn emit(elements: &Rendered<'_>, window: Window, out: &mut Collector) -> Result<(), ExtractError> {
    out.single_result();
    if window == Window::default() {
        emit_whole(elements, out)?;
    } else {
        emit_parts(elements, window, out)?;
    }
    Ok(())
}

/// The elements of an array result, each already printed as jq prints it.
struct Rendered<'a>(Vec<Cow<'a, [u8]>>);

impl Elements for Rendered<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_object(&self) -> bool {
        false
    }

    fn write(&self, i: usize, out: &mut Vec<u8>, room: usize) -> Result<bool, ExtractError> {
        out.extend_from_slice(&self.0[i]);
        Ok(out.len() <= room)
    }

    fn size(&self) -> usize {
        self.0.iter().map(|e| e.len() + 1).sum::<usize>() + 1
    }

    fn value(&self, kept: &[usize], _text: &[u8]) -> Result<Value, ExtractError> {
        Ok(Value::Array(
            kept.iter()
                .map(|&i| serde_json::from_slice(&self.0[i]).unwrap_or(Value::Null))
                .collect(),
        ))
    }
}

/// One `name: value` entry of the per-group object.
fn entry(key: &Term<&str>, value: &Term<&str>, path: &[String]) -> Option<Entry> {
    let name = string_literal(key)?;
    match value {
        Term::Call("length", args) if args.is_empty() => Some(Entry::Count(name)),
        // `.[0].a.b`
        Term::Path(base, parts) if matches!(**base, Term::Id) => {
            let (first, rest) = parts.0.split_first()?;
            (is_first(first) && keys(rest)? == path).then_some(Entry::First(name))
        }
        // `(.[0] | .a.b)`
        Term::BinOp(l, BinaryOp::Pipe(None), r) => {
            let Term::Path(base, parts) = &**l else {
                return None;
            };
            let ok = matches!(**base, Term::Id)
                && matches!(parts.0.as_slice(), [first] if is_first(first));
            (ok && self::path(r)? == path).then_some(Entry::First(name))
        }
        _ => None,
    }
}

/// `[0]`, not optional.
fn is_first((part, opt): &(Part<Term<&str>>, Opt)) -> bool {
    matches!((part, opt), (Part::Index(Term::Num("0")), Opt::Essential))
}

/// The keys of `.a.b.c` (or `.["a"]`, or `.a?`); `None` for any other
/// filter.
fn path(t: &Term<&str>) -> Option<Vec<String>> {
    let Term::Path(base, parts) = t else {
        return None;
    };
    if !matches!(**base, Term::Id) {
        return None;
    }
    keys(&parts.0).filter(|k| !k.is_empty())
}

fn keys(parts: &[(Part<Term<&str>>, Opt)]) -> Option<Vec<String>> {
    parts
        .iter()
        .map(|(part, opt)| match (part, opt) {
            // `.a?` reads what `.a` does wherever the fast path answers: a
            // record on which `.a` would fail makes it decline.
            (Part::Index(k), _) => string_literal(k),
            _ => None,
        })
        .collect()
}

fn cancelled() -> ExtractError {
    ExtractError::Timeout {
        limit: std::time::Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn recognizes_the_recipe_shapes() {
        assert_eq!(
            Slurp::new("sort_by(.created)"),
            Some(Slurp::SortBy {
                path: keys(&["created"]),
                negate: false
            })
        );
        assert_eq!(
            Slurp::new("sort_by(-.provenance.confidence)"),
            Some(Slurp::SortBy {
                path: keys(&["provenance", "confidence"]),
                negate: true
            })
        );
        assert_eq!(
            Slurp::new(r#"sort_by(.["odd key"])"#),
            Some(Slurp::SortBy {
                path: keys(&["odd key"]),
                negate: false
            })
        );
        let count = |name: &str| Slurp::CountBy {
            path: keys(&["namespace"]),
            entries: vec![Entry::First(name.into()), Entry::Count("count".into())],
        };
        assert_eq!(
            Slurp::new("group_by(.namespace) | map({namespace: .[0].namespace, count: length})"),
            Some(count("namespace"))
        );
        assert_eq!(
            Slurp::new("group_by(.namespace) | map({ns: (.[0] | .namespace), count: length})"),
            Some(count("ns"))
        );
        // The recipes' error-suppressing forms.
        assert_eq!(
            Slurp::new("group_by(.namespace?) | map({namespace: .[0].namespace?, count: length})"),
            Some(count("namespace"))
        );
        assert_eq!(
            Slurp::new("sort_by(.created?)"),
            Some(Slurp::SortBy {
                path: keys(&["created"]),
                negate: false
            })
        );
        assert_eq!(
            Slurp::new("group_by(.a.b) | map({count: length, b: .[0].a.b})"),
            Some(Slurp::CountBy {
                path: keys(&["a", "b"]),
                entries: vec![Entry::Count("count".into()), Entry::First("b".into())],
            })
        );
        for code in [
            "sort_by(.a, .b)",
            "sort_by(.a | length)",
            "sort_by(.[0])",
            "sort_by(.)",
            "sort",
            "group_by(.a) | map({a: .[0].b, count: length})",
            "group_by(.a) | map({a: .[1].a, count: length})",
            "group_by(.a) | map({a: .[0].a, a: length})",
            "group_by(.a) | map({a: .[0].a, n: (length + 1)})",
            "group_by(.a) | map({})",
            "group_by(.a) | map(length)",
            "group_by(.a) | map({a: .[0].a}) | .[0]",
        ] {
            assert_eq!(Slurp::new(code), None, "{code}");
        }
    }
}
