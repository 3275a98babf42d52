//! Projection pushdown: parse only the record fields a filter reads.
//!
//! Parsing whole records into jaq values dominates the cost of a query
//! (and, with `-s`, its memory). Most filters — every memory recipe — read
//! a few top-level fields and either build new values from them or pass
//! records through unchanged (`select(...)`, `sort_by(.created)`). For those
//! the engine parses just the fields read, and prints passed-through records
//! from their original line.
//!
//! [`analyze`] decides this conservatively on the parsed filter, with an
//! abstract type per value: a record, an array of records, an array of
//! arrays of records (`group_by`), or `Other` (no record inside). A field
//! read on a record is recorded; anything that could observe a record as a
//! whole (`keys`, `tostring`, `length`, `==` on records, `.[]` on a record,
//! updates, variables bound to records, user `def`s, unknown functions on
//! records) makes the analysis give up, and the filter runs on fully
//! parsed records. Wrong answers are impossible by construction: either the
//! filter provably reads only the listed fields, or nothing is projected.

use std::collections::BTreeSet;

use jaq_core::{
    load::{
        lex::StrPart,
        parse::{BinaryOp, Term},
    },
    path::Part,
};
use jaq_json::Val;

use crate::scan::{self, skip_ws};

/// What the analysis found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Projection {
    /// Top-level record fields the filter reads, sorted.
    pub(crate) fields: Vec<String>,
    /// Field paths read, sorted, none a prefix of another
    /// (`.provenance.confidence` is `["provenance", "confidence"]`).
    pub(crate) paths: Vec<Vec<String>>,
    /// Whether records can appear in the output (then they are printed from
    /// their original line, which must be kept).
    pub(crate) passes_records: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    /// A record (an object from the file, possibly projected).
    Rec,
    /// An array of records.
    Recs,
    /// An array of arrays of records.
    Groups,
    /// A value with no record inside.
    Other,
    /// No output.
    Never,
}

impl Ty {
    fn holds_records(self) -> bool {
        matches!(self, Ty::Rec | Ty::Recs | Ty::Groups)
    }

    fn wrap(self) -> Option<Ty> {
        Some(match self {
            Ty::Rec => Ty::Recs,
            Ty::Recs => Ty::Groups,
            Ty::Other | Ty::Never => Ty::Other,
            Ty::Groups => return None,
        })
    }

    /// Element type when iterating (`.[]`, `map`).
    fn elem(self) -> Option<Ty> {
        match self {
            Ty::Recs => Some(Ty::Rec),
            Ty::Groups => Some(Ty::Recs),
            Ty::Other => Some(Ty::Other),
            Ty::Never => Some(Ty::Never),
            Ty::Rec => None,
        }
    }
}

fn join(a: Ty, b: Ty) -> Option<Ty> {
    match (a, b) {
        (Ty::Never, t) | (t, Ty::Never) => Some(t),
        (a, b) if a == b => Some(a),
        _ => None,
    }
}

struct Analysis {
    paths: BTreeSet<Vec<String>>,
    passes: bool,
}

/// Analyzes `code` for input records (`slurp`: an array of records).
/// `None` when the filter may observe records beyond single fields.
pub(crate) fn analyze(code: &str, slurp: bool) -> Option<Projection> {
    let term = jaq_core::load::parse(code, |p| p.term())?;
    let mut a = Analysis {
        paths: BTreeSet::new(),
        passes: false,
    };
    let input = if slurp { Ty::Recs } else { Ty::Rec };
    let out = a.term(&term, input)?;
    // A path under another one read whole adds nothing.
    let all: Vec<Vec<String>> = a.paths.into_iter().collect();
    let paths: Vec<Vec<String>> = all
        .iter()
        .filter(|p| !all.iter().any(|q| q.len() < p.len() && p.starts_with(q)))
        .cloned()
        .collect();
    let fields: BTreeSet<String> = paths.iter().map(|p| p[0].clone()).collect();
    Some(Projection {
        fields: fields.into_iter().collect(),
        paths,
        passes_records: a.passes || out.holds_records(),
    })
}

/// Functions of `Other` values only, that neither see records nor bind
/// them: safe on `Other` input with `Other` arguments.
fn is_value_function(name: &str) -> bool {
    !matches!(
        name,
        "input" | "inputs" | "debug" | "stderr" | "input_filename" | "getpath" | "paths" | "env"
    )
}

impl Analysis {
    fn other(&mut self, t: &Term<&str>, input: Ty) -> Option<()> {
        match self.term(t, input)? {
            Ty::Other | Ty::Never => Some(()),
            _ => None,
        }
    }

    fn field(&mut self, input: Ty, key: &Term<&str>) -> Option<Ty> {
        match input {
            Ty::Rec => {
                let name = key.as_str_literal()?;
                self.paths.insert(vec![name.to_owned()]);
                Some(Ty::Other)
            }
            Ty::Other | Ty::Never => Some(input),
            // `.[0]` of records is a record; a string key is an error in
            // jq either way.
            Ty::Recs | Ty::Groups => match key {
                Term::Num(_) | Term::Neg(_) => input.elem(),
                _ => None,
            },
        }
    }

    fn term(&mut self, t: &Term<&str>, input: Ty) -> Option<Ty> {
        match t {
            Term::Id => Some(input),
            Term::Num(_) | Term::Var(_) => Some(Ty::Other),
            Term::Recurse => (input == Ty::Other).then_some(Ty::Other),
            Term::Str(_, parts) => {
                for part in parts {
                    if let StrPart::Term(inner) = part {
                        self.other(inner, input)?;
                    }
                }
                Some(Ty::Other)
            }
            Term::Arr(None) => Some(Ty::Other),
            Term::Arr(Some(inner)) => self.term(inner, input)?.wrap(),
            Term::Obj(kvs) => {
                for (k, v) in kvs {
                    match v {
                        // `{id}` is `{id: .id}`, `{$x}` is `{x: $x}`.
                        None => match k {
                            Term::Var(_) => {}
                            k => {
                                self.field(input, k)?;
                            }
                        },
                        Some(v) => {
                            self.other(k, input)?;
                            self.other(v, input)?;
                        }
                    }
                }
                Some(Ty::Other)
            }
            Term::Neg(inner) => {
                self.other(inner, input)?;
                Some(Ty::Other)
            }
            Term::BinOp(l, op, r) => match op {
                BinaryOp::Pipe(None) => {
                    let mid = self.term(l, input)?;
                    if mid == Ty::Never {
                        return Some(Ty::Never);
                    }
                    self.term(r, mid)
                }
                BinaryOp::Pipe(Some(_)) => {
                    // Variables must never hold records.
                    self.other(l, input)?;
                    self.term(r, input)
                }
                BinaryOp::Comma | BinaryOp::Alt => {
                    let a = self.term(l, input)?;
                    let b = self.term(r, input)?;
                    join(a, b)
                }
                BinaryOp::Or | BinaryOp::And => {
                    // Only truthiness is used.
                    self.term(l, input)?;
                    self.term(r, input)?;
                    Some(Ty::Other)
                }
                BinaryOp::Math(_) | BinaryOp::Cmp(_) => {
                    self.other(l, input)?;
                    self.other(r, input)?;
                    Some(Ty::Other)
                }
                _ => None,
            },
            Term::TryCatch(body, catch) => {
                let a = self.term(body, input)?;
                let b = match catch {
                    Some(c) => self.term(c, Ty::Other)?,
                    None => Ty::Never,
                };
                join(a, b)
            }
            Term::IfThenElse(branches, otherwise) => {
                let mut out = Ty::Never;
                for (cond, then) in branches {
                    self.term(cond, input)?;
                    out = join(out, self.term(then, input)?)?;
                }
                let last = match otherwise {
                    Some(e) => self.term(e, input)?,
                    None => input,
                };
                join(out, last)
            }
            Term::Path(base, path) => {
                let mut ty = self.term(base, input)?;
                let mut rest = path.0.as_slice();
                if ty == Ty::Rec {
                    // `.a.b.c` on a record reads only that path.
                    let mut keys = Vec::new();
                    while let Some(((Part::Index(k), _), tail)) = rest.split_first() {
                        let Some(key) = k.as_str_literal() else { break };
                        keys.push(key.to_owned());
                        rest = tail;
                    }
                    if !keys.is_empty() {
                        self.paths.insert(keys);
                        ty = Ty::Other;
                    }
                }
                for (part, _opt) in rest {
                    ty = match part {
                        Part::Index(i) => {
                            // The index is computed from the path's input.
                            self.other(i, input)?;
                            self.field(ty, i)?
                        }
                        Part::Range(None, None) => ty.elem()?,
                        Part::Range(from, to) => {
                            for b in [from, to].into_iter().flatten() {
                                self.other(b, input)?;
                            }
                            match ty {
                                Ty::Rec => return None,
                                other => other,
                            }
                        }
                    };
                }
                Some(ty)
            }
            Term::Call(name, args) => self.call(name, args, input),
            Term::Label(..) | Term::Break(_) | Term::Fold(..) | Term::Def(..) => None,
        }
    }

    fn call(&mut self, name: &str, args: &[Term<&str>], input: Ty) -> Option<Ty> {
        match (name, args) {
            ("empty", []) => Some(Ty::Never),
            ("not" | "true" | "false" | "null" | "now" | "infinite" | "nan", []) => Some(Ty::Other),
            ("range", _) => {
                for a in args {
                    self.other(a, input)?;
                }
                Some(Ty::Other)
            }
            ("select", [f]) => {
                self.term(f, input)?;
                Some(input)
            }
            ("length", []) => (input != Ty::Rec).then_some(Ty::Other),
            ("map", [f]) => match input {
                Ty::Rec => None,
                _ => self.term(f, input.elem()?)?.wrap(),
            },
            ("sort_by" | "group_by" | "unique_by" | "min_by" | "max_by", [f]) => {
                let elem = input.elem()?;
                self.other(f, elem)?;
                match (name, input) {
                    (_, Ty::Other | Ty::Never) => Some(input),
                    ("sort_by" | "unique_by", _) => Some(input),
                    ("min_by" | "max_by", _) => Some(elem),
                    ("group_by", Ty::Recs) => Some(Ty::Groups),
                    _ => None,
                }
            }
            ("first" | "last", []) => match input {
                Ty::Rec => None,
                _ => input.elem(),
            },
            ("reverse", []) => (input != Ty::Rec).then_some(input),
            ("first" | "last", [f]) => self.term(f, input),
            ("limit", [n, f]) => {
                self.other(n, input)?;
                self.term(f, input)
            }
            ("any" | "all", [generator, cond]) => {
                let g = self.term(generator, input)?;
                self.term(cond, g)?;
                Some(Ty::Other)
            }
            ("any" | "all", [cond]) => {
                self.term(cond, input.elem()?)?;
                Some(Ty::Other)
            }
            _ if input == Ty::Other || input == Ty::Never => {
                if !is_value_function(name) {
                    return None;
                }
                for a in args {
                    self.other(a, input)?;
                }
                Some(Ty::Other)
            }
            _ => None,
        }
    }
}

trait StrLiteral {
    fn as_str_literal(&self) -> Option<&str>;
}

impl StrLiteral for Term<&str> {
    fn as_str_literal(&self) -> Option<&str> {
        match self {
            Term::Str(None, parts) => match parts.as_slice() {
                [StrPart::Str(s)] => Some(s),
                [] => Some(""),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Parses only the given field `paths` of a compact JSON object line into
/// a jaq object (in file order). A nested path is followed only through
/// objects; any other value on the way is kept whole, so reading it gives
/// jq's result or error. `None` when the line is not a plain object or has
/// an escaped key: the caller parses it whole instead.
pub(crate) fn project_line(line: &[u8], paths: &[Vec<String>]) -> Option<Val> {
    let refs: Vec<&[String]> = paths.iter().map(Vec::as_slice).collect();
    let (v, end) = project_object(line, skip_ws(line, 0), &refs)?;
    (skip_ws(line, end) == line.len()).then_some(v)
}

/// Projects the object starting at `start`; returns it and the index past it.
fn project_object(line: &[u8], start: usize, paths: &[&[String]]) -> Option<(Val, usize)> {
    let mut map = jaq_json::Map::default();
    let end = scan::object_members(line, start, |key, span| {
        let wanted: Vec<&[String]> = paths
            .iter()
            .filter(|p| p[0].as_bytes() == key)
            .map(|p| &p[1..])
            .collect();
        if !wanted.is_empty() {
            let whole = wanted.iter().any(|rest| rest.is_empty());
            let value = if !whole && line[span.start] == b'{' {
                project_object(&line[..span.end], span.start, &wanted)?.0
            } else {
                super::read_record(&line[span]).ok()?
            };
            map.insert(Val::utf8_str(key.to_vec()), value);
        }
        Some(())
    })?;
    Some((Val::obj(map), end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(code: &str, slurp: bool) -> Option<Vec<String>> {
        analyze(code, slurp).map(|p| p.fields)
    }

    #[test]
    fn memory_recipes_project() {
        let cases: [(&str, bool, &[&str], bool); 13] = [
            (
                "[.title, .namespace] | @tsv",
                false,
                &["namespace", "title"],
                false,
            ),
            (
                "select(.namespace | startswith($namespace))",
                false,
                &["namespace"],
                true,
            ),
            (
                "select(.title | test($keyword; \"i\"))",
                false,
                &["title"],
                true,
            ),
            (
                "{id, title, namespace}",
                false,
                &["id", "namespace", "title"],
                false,
            ),
            (
                "select(.memory_type == $memory_type)",
                false,
                &["memory_type"],
                true,
            ),
            (
                "group_by(.namespace) | map({namespace: .[0].namespace, count: length})",
                true,
                &["namespace"],
                false,
            ),
            ("select(any(.tags[]?; . == $tag))", false, &["tags"], true),
            ("sort_by(.created)", true, &["created"], true),
            ("map(.namespace) | unique", true, &["namespace"], false),
            (
                "sort_by(-.provenance.confidence)",
                true,
                &["provenance"],
                true,
            ),
            (
                "select(.a.b == 1 and .a.c == 2) | .d",
                false,
                &["a", "d"],
                false,
            ),
            (
                "select(.content | test($pattern; \"i\"))",
                false,
                &["content"],
                true,
            ),
            (
                "{count: length, min: (map(.n) | min), max: (map(.n) | max), mean: (map(.n) | add / length)}",
                true,
                &["n"],
                false,
            ),
        ];
        for (code, slurp, want, passes) in cases {
            let p = analyze(code, slurp).unwrap_or_else(|| panic!("{code} not projected"));
            assert_eq!(p.fields, want, "{code}");
            assert_eq!(p.passes_records, passes, "{code}");
        }
    }

    #[test]
    fn whole_record_observers_give_up() {
        for (code, slurp) in [
            ("keys", false),
            ("tostring", false),
            ("length", false),
            (". == {}", false),
            (".[]", false),
            (".a = 1", false),
            (". as $r | $r.title", false),
            ("def f: .x; f", false),
            ("{r: .}", false),
            ("[.[] | .a] | unique", false),
            ("map(keys)", true),
            ("sort", true),
            ("add", true),
            (".[$k]", false),
            ("to_entries", false),
            ("[., 1]", false),
            ("reduce .[] as $x (0; .)", true),
            ("paths", false),
        ] {
            assert_eq!(fields(code, slurp), None, "{code} must not be projected");
        }
    }

    #[test]
    fn projects_lines() {
        let line = br#"{"id":"a","t":{"x":[1,"}"]},"s":"q\"\\","n":-1.5e3,"b":true}"#;
        let all = |fs: &[&str]| {
            let fs: Vec<Vec<String>> = fs.iter().map(|s| vec![(*s).to_owned()]).collect();
            project_line(line, &fs).unwrap().to_string()
        };
        assert_eq!(all(&["t"]), r#"{"t":{"x":[1,"}"]}}"#);
        assert_eq!(all(&["s", "b"]), r#"{"s":"q\"\\","b":true}"#);
        assert_eq!(all(&["n", "missing"]), r#"{"n":-1500}"#);
        assert!(project_line(b"[1]", &[]).is_none());
        assert!(project_line(br#"{"a\u0062":1}"#, &[vec!["ab".into()]]).is_none());
        let nested = |paths: &[&[&str]], line: &[u8]| {
            let paths: Vec<Vec<String>> = paths
                .iter()
                .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
                .collect();
            project_line(line, &paths).unwrap().to_string()
        };
        let line = br#"{"p":{"c":0.5,"t":"x","d":{"e":1,"f":2}},"q":1}"#;
        assert_eq!(nested(&[&["p", "c"]], line), r#"{"p":{"c":0.5}}"#);
        assert_eq!(
            nested(&[&["p", "d", "f"], &["q"]], line),
            r#"{"p":{"d":{"f":2}},"q":1}"#
        );
        // Not an object on the way: kept whole, so jq's error stays jq's.
        assert_eq!(nested(&[&["q", "x"]], line), r#"{"q":1}"#);
        assert_eq!(project_line(b"{}", &[]).unwrap().to_string(), "{}");
    }

    #[test]
    fn module_example() {
        let p = analyze("select(.namespace | startswith($ns))", false).unwrap();
        assert_eq!(p.fields, ["namespace"]);
        assert!(p.passes_records);
        let p = analyze(
            "group_by(.namespace) | map({namespace: .[0].namespace, count: length})",
            true,
        )
        .unwrap();
        assert_eq!(p.fields, ["namespace"]);
        assert!(!p.passes_records);
        assert!(analyze("keys", false).is_none());
        assert!(analyze(".title = 1", false).is_none());
    }
}
