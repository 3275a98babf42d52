//! A filter rewritten so that jaq computes what jq 1.6 computes, where
//! jaq's evaluation has no hook of its own:
//!
//! * every arithmetic result is piped through `_lro_num`, which rounds it to
//!   the double jq holds (jaq's integer arithmetic is exact past 2^53), and
//!   so is every number literal that is not a short integer; the operands
//!   run in jq's order, `r` outer (jaq runs `l` outer);
//! * `l % r` is `_lro_rem`, which cuts both to integers as jq 1.6 does
//!   (`5.5 % 2` is 1);
//! * `-x` is `_lro_neg`, which fails in jq's words;
//! * `.[a:b]` answers null on null, as jq 1.6's, and `.[0]` (a number
//!   literal) fails on an object (`_lro_keyed`, a path and an update too;
//!   `.[0]?` is `_lro_keyed_opt`, nothing there), as does `.[$k]` when
//!   `$k` holds a number (`_lro_keyed_by`, `_lro_keyed_by_opt`), and so a
//!   computed `.[f]` (`.[.n]`, `.[1 + 0]`), `f` bound to a variable first;
//! * a string with interpolations, `"a\(f)"`, is `@text "a\(f)"`: jaq
//!   spells an interpolated number its own way (`1e-5`), and `@text` is
//!   our `tostring`, which spells it as jq (`1e-05`); its parts run the
//!   last first, as jq's;
//! * `error` and `error(m)` raise through `_lro_error`, for which null is
//!   `empty`, as in jq 1.6.
//!
//! A path stays a path (the `_lro_keyed` natives have paths and updates,
//! and a binding is a value around it), so `path(…)`, `|=` and `del(…)`
//! answer as jq 1.6's. The natives are in `natives/`.

use jaq_core::{
    load::{
        lex::StrPart,
        parse::{BinaryOp, Def, Pattern, Term},
    },
    ops::Math,
    path::{Part, Path as P},
};

type T<'s> = Term<&'s str>;

/// `t` rewritten, the same filter as jq 1.6 runs it.
pub(super) fn term(t: T<'_>) -> T<'_> {
    at(t, false)
}

/// `t` rewritten; `target`: `t` is what an update or an assignment
/// changes, whose indices are made where they are missing (`_lro_slot`).
fn at<'s>(t: T<'s>, target: bool) -> T<'s> {
    use Term::*;
    let at_ = |t: Box<T<'s>>| Box::new(at(*t, target));
    match t {
        Id | Recurse | Break(_) | Var(_) => t,
        Num(n) if n.len() <= 15 && n.bytes().all(|b| b.is_ascii_digit()) => Num(n),
        Num(n) => pipe(Num(n), "_lro_num"),
        Str(fmt, parts) => string(fmt, parts),
        Arr(a) => Arr(a.map(|a| Box::new(term(*a)))),
        // A computed key (`{(f): v}`, `{$k: v}`) must be a string, as in jq
        // 1.6 (jaq's takes any value).
        Obj(entries) => Obj(entries
            .into_iter()
            .map(|(k, v)| match (k, v) {
                (k @ Str(..), v) | (k, v @ None) => (term(k), v.map(term)),
                (k, Some(v)) => (pipe(term(k), "_lro_key"), Some(term(v))),
            })
            .collect()),
        Neg(t) => pipe(term(*t), "_lro_neg"),
        BinOp(l, BinaryOp::Math(op), r) => math(term(*l), op, term(*r)),
        // `l op= r` is `r as $x | l |= . op $x`, with `. op $x` rewritten.
        BinOp(l, BinaryOp::UpdateMath(op), r) => {
            let x = "$__lro_u";
            let update = term(BinOp(Box::new(Id), BinaryOp::Math(op), Box::new(Var(x))));
            let assign = BinOp(Box::new(at(*l, true)), BinaryOp::Update, Box::new(update));
            BinOp(
                Box::new(term(*r)),
                BinaryOp::Pipe(Some(Pattern::Var(x))),
                Box::new(assign),
            )
        }
        BinOp(l, op @ (BinaryOp::Update | BinaryOp::Assign | BinaryOp::UpdateAlt), r) => {
            BinOp(Box::new(at(*l, true)), op, Box::new(term(*r)))
        }
        // What a target is made of: the parts that are paths.
        BinOp(l, op @ (BinaryOp::Pipe(None) | BinaryOp::Comma | BinaryOp::Alt), r) if target => {
            BinOp(at_(l), op, at_(r))
        }
        BinOp(l, BinaryOp::Pipe(Some(p)), r) if target => {
            BinOp(Box::new(term(*l)), BinaryOp::Pipe(Some(pattern(p))), at_(r))
        }
        BinOp(l, op, r) => BinOp(Box::new(term(*l)), op_(op), Box::new(term(*r))),
        Label(x, t) => Label(x, at_(t)),
        Fold(name, xs, pat, args) => Fold(
            name,
            Box::new(term(*xs)),
            pattern(pat),
            args.into_iter().map(|a| at(a, target)).collect(),
        ),
        TryCatch(t, c) => TryCatch(at_(t), c.map(|c| Box::new(term(*c)))),
        IfThenElse(branches, els) => IfThenElse(
            branches
                .into_iter()
                .map(|(c, t)| (term(c), at(t, target)))
                .collect(),
            els.map(at_),
        ),
        Def(defs, t) => Def(defs.into_iter().map(def).collect(), Box::new(term(*t))),
        // `error(null)` is `empty` in jq 1.6 (`[1, error(null), 2]` is
        // `[1,2]`): both forms raise through `_lro_error`.
        Call("error", args) if args.len() <= 1 => match args.into_iter().next() {
            Some(m) => pipe(term(m), "_lro_error"),
            None => Call("_lro_error", Vec::new()),
        },
        Call(name, args) => Call(name, args.into_iter().map(term).collect()),
        Path(t, P(parts)) => path(at(*t, target), parts, target),
    }
}

/// `t` followed by `parts`, rewritten; a slice `.[a:b]` becomes `if . ==
/// null then . else .[a:b] end`, as jq 1.6 answers null where jaq fails
/// (an identity, so the path stays a path). In a `target`, each index
/// `.[k]` (`.a` too) is `_lro_slot(k) | .[k]`, made where it is missing.
fn path<'s>(t: T<'s>, parts: Vec<(Part<T<'s>>, jaq_core::path::Opt)>, target: bool) -> T<'s> {
    let mut out = t;
    let mut run = Vec::new();
    let mut bound = Vec::new();
    for (part, opt) in parts {
        let part = match part {
            Part::Index(i) if target => {
                let k = match i {
                    Term::Str(None, ref parts)
                        if parts.iter().all(|p| matches!(p, StrPart::Str(_))) =>
                    {
                        i
                    }
                    Term::Var(_) => i,
                    i if is_number(&i) => term(i),
                    i if bound.len() < INDICES.len() => {
                        let k = INDICES[bound.len()];
                        bound.push((term(i), k));
                        Term::Var(k)
                    }
                    i => {
                        run.push((Part::Index(term(i)), opt));
                        continue;
                    }
                };
                out = then_native(
                    out,
                    &mut run,
                    ["_lro_slot_opt", "_lro_slot"],
                    vec![k.clone()],
                    opt,
                );
                run.push((Part::Index(k), opt));
                continue;
            }
            // `.[0]`: an object fails, as in jq 1.6 (jaq answers null).
            Part::Index(i) if is_number(&i) => {
                out = then_native(
                    out,
                    &mut run,
                    ["_lro_keyed_opt", "_lro_keyed"],
                    Vec::new(),
                    opt,
                );
                run.push((Part::Index(term(i)), opt));
                continue;
            }
            // `.[$k]`: an object fails when `$k` is a number, as in jq 1.6.
            // A variable is one value that cannot fail, so checking it
            // before the index keeps jaq's order of evaluation. `.[f]`, `f`
            // computed (`.[.n]`, `.[1 + 0]`): `f` is bound to a variable
            // first, as jq 1.6 computes an index before what it indexes (a
            // later index outermost), then indexed as `.[$k]`.
            Part::Index(i)
                if matches!(i, Term::Var(_))
                    || (!matches!(i, Term::Str(..)) && bound.len() < INDICES.len()) =>
            {
                let k = match i {
                    Term::Var(k) => k,
                    i => {
                        let k = INDICES[bound.len()];
                        bound.push((term(i), k));
                        k
                    }
                };
                out = then_native(
                    out,
                    &mut run,
                    ["_lro_keyed_by_opt", "_lro_keyed_by"],
                    vec![Term::Var(k)],
                    opt,
                );
                run.push((Part::Index(Term::Var(k)), opt));
                continue;
            }
            Part::Index(i) => Part::Index(term(i)),
            Part::Range(None, None) => Part::Range(None, None),
            Part::Range(from, to) => {
                let slice = Term::Path(
                    Box::new(Term::Id),
                    P(vec![(Part::Range(from.map(term), to.map(term)), opt)]),
                );
                let is_null = Term::BinOp(
                    Box::new(Term::Id),
                    BinaryOp::Cmp(jaq_core::ops::Cmp::Eq),
                    Box::new(Term::Call("null", Vec::new())),
                );
                let guarded = Term::IfThenElse(vec![(is_null, Term::Id)], Some(Box::new(slice)));
                if !run.is_empty() {
                    out = Term::Path(Box::new(out), P(std::mem::take(&mut run)));
                }
                out = Term::BinOp(Box::new(out), BinaryOp::Pipe(None), Box::new(guarded));
                continue;
            }
        };
        run.push((part, opt));
    }
    if !run.is_empty() {
        out = Term::Path(Box::new(out), P(run));
    }
    // `g as $k1 | f as $k0 | …`: the binding is a value, what it binds
    // around stays a path.
    for (i, k) in bound {
        out = Term::BinOp(
            Box::new(i),
            BinaryOp::Pipe(Some(Pattern::Var(k))),
            Box::new(out),
        );
    }
    out
}

/// Names for the computed indices of one path, bound in jq's order.
const INDICES: [&str; 8] = [
    "$__lro_k0",
    "$__lro_k1",
    "$__lro_k2",
    "$__lro_k3",
    "$__lro_k4",
    "$__lro_k5",
    "$__lro_k6",
    "$__lro_k7",
];

/// Whether a rewritten term is one value that cannot fail: `.`, a
/// variable, a number or a plain string.
fn pure(t: &T<'_>) -> bool {
    match t {
        Term::Id | Term::Var(_) | Term::Num(_) => true,
        Term::Str(None, parts) => parts.iter().all(|p| !matches!(p, StrPart::Term(_))),
        Term::BinOp(l, BinaryOp::Pipe(None), r) => {
            matches!(**l, Term::Num(_))
                && matches!(**r, Term::Call("_lro_num", ref a) if a.is_empty())
        }
        _ => false,
    }
}

/// A number literal, maybe negated.
fn is_number(t: &T<'_>) -> bool {
    match t {
        Term::Num(_) => true,
        Term::Neg(t) => matches!(**t, Term::Num(_)),
        _ => false,
    }
}

/// A definition with its body rewritten.
/// `getpath`'s body is a target: `setpath`, `delpaths` and `getpath(p) =
/// v` update through it, and make what is missing as jq 1.6 does.
pub(super) fn def<'s>(d: Def<&'s str, T<'s>>) -> Def<&'s str, T<'s>> {
    let target = d.name == "getpath";
    Def {
        name: d.name,
        args: d.args,
        body: at(d.body, target),
    }
}

/// Names for the parts of one string, bound in jq's order.
const PARTS: [&str; 8] = [
    "$__lro_s0",
    "$__lro_s1",
    "$__lro_s2",
    "$__lro_s3",
    "$__lro_s4",
    "$__lro_s5",
    "$__lro_s6",
    "$__lro_s7",
];

/// A string: with interpolations, `@text` unless formatted otherwise, and
/// its parts run as jq 1.6 runs them, the last first (outermost), which
/// jaq runs the other way round.
fn string<'s>(fmt: Option<&'s str>, parts: Vec<StrPart<&'s str, T<'s>>>) -> T<'s> {
    let terms = parts
        .iter()
        .filter(|p| matches!(p, StrPart::Term(_)))
        .count();
    if terms == 0 {
        return Term::Str(fmt, parts);
    }
    let fmt = fmt.or(Some("@text"));
    if terms == 1 || terms > PARTS.len() {
        let parts = parts
            .into_iter()
            .map(|p| match p {
                StrPart::Term(t) => StrPart::Term(term(t)),
                other => other,
            })
            .collect();
        return Term::Str(fmt, parts);
    }
    let mut bound = Vec::new();
    let mut names = PARTS.iter();
    let parts = parts
        .into_iter()
        .map(|p| match p {
            StrPart::Term(t) => {
                let x = names.next().expect("counted");
                bound.push((term(t), *x));
                StrPart::Term(Term::Var(*x))
            }
            other => other,
        })
        .collect();
    // `pn as $n | … | p1 as $1 | "…\($1)…\($n)"`
    let mut out = Term::Str(fmt, parts);
    for (t, x) in bound {
        out = Term::BinOp(
            Box::new(t),
            BinaryOp::Pipe(Some(Pattern::Var(x))),
            Box::new(out),
        );
    }
    out
}

fn op_(op: BinaryOp<&str>) -> BinaryOp<&str> {
    match op {
        BinaryOp::Pipe(Some(p)) => BinaryOp::Pipe(Some(pattern(p))),
        other => other,
    }
}

fn pattern(p: Pattern<&str>) -> Pattern<&str> {
    match p {
        Pattern::Var(x) => Pattern::Var(x),
        Pattern::Arr(ps) => Pattern::Arr(ps.into_iter().map(pattern).collect()),
        Pattern::Obj(entries) => Pattern::Obj(
            entries
                .into_iter()
                .map(|(k, p)| (term(k), pattern(p)))
                .collect(),
        ),
    }
}

/// `t | name`.
/// `out`, closed over the `run` of parts before it, piped into the native
/// of `names` (the `?` form first) that `opt` picks, called with `args`.
fn then_native<'s>(
    mut out: T<'s>,
    run: &mut Vec<(Part<T<'s>>, jaq_core::path::Opt)>,
    [optional, essential]: [&'s str; 2],
    args: Vec<T<'s>>,
    opt: jaq_core::path::Opt,
) -> T<'s> {
    if !run.is_empty() {
        out = Term::Path(Box::new(out), P(std::mem::take(run)));
    }
    let name = match opt {
        jaq_core::path::Opt::Optional => optional,
        jaq_core::path::Opt::Essential => essential,
    };
    Term::BinOp(
        Box::new(out),
        BinaryOp::Pipe(None),
        Box::new(Term::Call(name, args)),
    )
}

fn pipe<'s>(t: T<'s>, name: &'s str) -> T<'s> {
    Term::BinOp(
        Box::new(t),
        BinaryOp::Pipe(None),
        Box::new(Term::Call(name, Vec::new())),
    )
}

/// `r as $r | l as $l | $l op $r | _lro_num`: jq's order (`r` outer, so
/// `r` fails first and `(1,2) + (10,20)` is 11, 12, 21, 22), and jq's
/// double; `%` as jq 1.6's, `_lro_rem($l; $r)`.
fn math<'s>(l: T<'s>, op: Math, r: T<'s>) -> T<'s> {
    // With one side a single value that cannot fail, the order is moot.
    if pure(&l) || pure(&r) {
        return match op {
            Math::Rem => Term::Call("_lro_rem", vec![l, r]),
            op => pipe(
                Term::BinOp(Box::new(l), BinaryOp::Math(op), Box::new(r)),
                "_lro_num",
            ),
        };
    }
    let (lv, rv) = ("$__lro_l", "$__lro_r");
    let (x, y) = (Box::new(Term::Var(lv)), Box::new(Term::Var(rv)));
    let computed = match op {
        Math::Rem => Term::Call("_lro_rem", vec![*x, *y]),
        op => pipe(Term::BinOp(x, BinaryOp::Math(op), y), "_lro_num"),
    };
    let inner = Term::BinOp(
        Box::new(l),
        BinaryOp::Pipe(Some(Pattern::Var(lv))),
        Box::new(computed),
    );
    Term::BinOp(
        Box::new(r),
        BinaryOp::Pipe(Some(Pattern::Var(rv))),
        Box::new(inner),
    )
}
#[cfg(test)]
mod tests {
    use crate::jq::eval_values;
    use serde_json::json;

    #[test]
    fn rewritten_filters_compute_as_jq_1_6() {
        // Each as `jq -nc` (jq 1.6) prints it.
        let cases = [
            ("[(1,2) + (10,20)]", json!([11, 12, 21, 22])),
            ("[\"\\(1,2)-\\(3,4)\"]", json!(["1-3", "2-3", "1-4", "2-4"])),
            ("[5.5 % 2, -5.5 % 2, 5 % 2.5]", json!([1, -1, 1])),
            ("9007199254740993 - 9007199254740992", json!(0)),
            ("9007199254740992 | . + 1 - .", json!(0)),
            (
                "\"\\(0.00001) \\(1e1000)\"",
                json!("1e-05 1.7976931348623157e+308"),
            ),
            (
                "[1, 2] | [path(.[0]), del(.[0]), (.[-1] |= 3)]",
                json!([[0], [2], [1, 3]]),
            ),
            ("{} | [.[0]?, .[1:]?]", json!([])),
            ("null | [.[1:2], .[0]]", json!([null, null])),
            ("[1, 2, 3] | .[1:] |= map(. * 2)", json!([1, 4, 6])),
            ("[1] | [path(.[0]?)]", json!([[0]])),
            ("{} | del(.[0]?)", json!({})),
            ("[1, 2] | del(.[0]?)", json!([2])),
            ("[[1]] | .[0][0] |= 5", json!([[5]])),
            ("{\"a\": [1, 2]} | .a[1:] = [\"x\"]", json!({"a": [1, "x"]})),
            (
                "{a: 1} | .a += 9007199254740992 | .a - 9007199254740992",
                json!(0),
            ),
            // A computed index: before what it indexes, a later one outermost.
            (
                "{\"n\": 0} | try .[.n] catch .",
                json!("Cannot index object with number"),
            ),
            (
                "{} | try (.[1 + 0] |= 3) catch .",
                json!("Cannot index object with number"),
            ),
            (
                "{} | try path(.[1 + 0]) catch .",
                json!("Cannot index object with number"),
            ),
            ("{} | [[.[1 + 0]?], (.[1 + 0]? |= 3)]", json!([[], {}])),
            (
                "[[1, 2], [3, 4]] | [[.[][(0, 1)]], [path(.[(0, 1)][(1, 0)])]]",
                json!([[1, 3, 2, 4], [[0, 1], [1, 1], [0, 0], [1, 0]]]),
            ),
            (
                "[1, 2] | [.[1 + 0], path(.[1 + 0]), (.[1 + 0] |= 5)]",
                json!([2, [1], [1, 5]]),
            ),
            (
                "{\"k\": \"a\", \"a\": 1} | [.[.k], (.[.k] |= 3), del(.[.k])]",
                json!([1, {"k": "a", "a": 3}, {"k": "a"}]),
            ),
            ("{\"n\": 1, \"a\": [5, 6]} | .a[.n]", json!(6)),
            // What an update changes is made where it is missing.
            ("null | .[0] |= 1", json!([1])),
            (
                "0 as $z | try {($z): 1} catch .",
                json!("Cannot use number (0) as object key"),
            ),
            (
                "[[1, error(null), 2], [try error(null) catch 0], [null | error], [limit(0; 1, 2)], \
                 [limit(-1; 1, 2)]]",
                json!([[1, 2], [], [], [1], [1, 2]]),
            ),
            ("try error({\"a\": 1}) catch .a", json!(1)),
            (
                "\"a,b\" | try delpaths([[\"a\", \"b\"], [1, 0]]) catch .",
                json!("Cannot index string with number"),
            ),
            (
                "[([1, 2, 3] | del(.[0], .[1]), del(.[] | select(. != 2)), del(.[1:])), \
                 ({\"a\": 1, \"b\": 2, \"c\": 3} | del(.a, .c)), (null | del(.[0], .a))]",
                json!([[3], [2], [1], {"b": 2}, null]),
            ),
            (
                "[(null | setpath([\"a\", 1]; 1)), ([1] | setpath([3]; 1)), (null | getpath([\"a\", 0])), \
                 ({} | getpath([\"a\", \"b\"]) = 5), ([1, 2, 3] | delpaths([[0], [1]])), (null | delpaths([[\"a\"]]))]",
                json!([{"a": [null, 1]}, [1, null, null, 1], null, {"a": {"b": 5}}, [3], null]),
            ),
            (
                "[[1, [2], {\"a\": [3]}] | fromstream(tostream)]",
                json!([[1, [2], {"a": [3]}]]),
            ),
            (
                "[null, {}, \"s\", [1]] | [map(.[0]? = 9), map(.a? = 1)]",
                json!([[[9], {}, "s", [9]], [{"a": 1}, {"a": 1}, "s", [1]]]),
            ),
            (
                "[[1, \"a\"] | contains([\"a\"]), ([[1]] | contains([1])), (\"a\" | ltrimstr(1))]",
                json!([true, false, "a"]),
            ),
            (
                "[(\"abab\" | indices(\"b\"), rindex(\"b\")), ({\"a\": 5} | indices(\"a\"))]",
                json!([[1, 3], 3, 5]),
            ),
            (
                "[([[1, [2]] | tostream] | length), ([1, 2] | IN([1, 2], [3]))]",
                json!([4, true]),
            ),
            (
                "{\"a\": 1, \"k\": 2, \"b\": 3, \"c\": 4} | del(.k) | keys_unsorted",
                json!(["a", "b", "c"]),
            ),
            ("[{(\"a\", \"b\"): 2}]", json!([{"a": 2}, {"b": 2}])),
            (
                "[[1] | .[3] |= empty, (null | .[0] |= empty), (null | .a.b = 1), \
                 ({} | .a[1] = 5), ([1] | .[3] = 1), (null | .a += 1)]",
                json!([[1], null, {"a": {"b": 1}}, {"a": [null, 5]}, [1, null, null, 1], {"a": 1}]),
            ),
            (
                "[1] | try (.[-2] = 1) catch .",
                json!("Out of bounds negative array index"),
            ),
            (
                "[(null | del(.a)), ({\"a\": null} | del(.a.b)), ([1] | del(.[3])), (null | del(.a.b)), \
                 ([1] | delpaths([[3, \"a\"]]))]",
                json!([null, {"a": null}, [1], null, [1]]),
            ),
            (
                "[(\"s\", true, [1], null, {}) | try (.a = 1, .[0] = 1, .[null] = 1) catch .]",
                json!([
                    "Cannot index string with string \"a\"", "Cannot index boolean with string \"a\"",
                    "Cannot index array with string \"a\"", {"a": 1}, [1],
                    "Cannot index null with null", {"a": 1}, "Cannot index object with number",
                ]),
            ),
        ];
        for (filter, want) in cases {
            let got = eval_values(filter, &[json!(null)]);
            assert_eq!(
                got.unwrap_or_else(|e| panic!("{filter}: {e}")),
                [want],
                "{filter}"
            );
        }
    }
}
