//! Our natives (custom jq functions), jaq's own where they answer as jq
//! 1.6 does: a cancellable `range`, `keys`, `has`, `sort`, `sort_by`,
//! `floor`, `ceil` and `round` as jq 1.6's,
//! and a `halt` that is an error, here; text and regular expressions in
//! `text.rs`, numbers in `numbers.rs`, output formats in `format.rs`, and
//! what an index needs (`.[0]` on an object, a missing slot an update
//! fills) in `keyed.rs`. The natives a query must not reach are left out.

mod format;
mod keyed;
mod numbers;
mod text;

use jaq_core::{DataT, Exn, Native, box_iter::box_once, native::v};
use jaq_json::Val;

use super::{
    message::{described, kind},
    stop::JqData,
};

/// jaq's natives, renamed: ours by these names (`compile.rs`) check the
/// input first, as jq 1.6 does, or are jq 1.6's definitions.
const RENAMED: [(&str, &str); 7] = [
    ("matches", "_lro_matches"),
    ("split_matches", "_lro_split_matches"),
    ("split_", "_lro_split_"),
    ("group_by", "_lro_group_by"),
    ("indices", "_lro_indices"),
    ("ltrimstr", "_lro_ltrimstr"),
    ("rtrimstr", "_lro_rtrimstr"),
];

/// Our natives: jaq-core's, jaq-std's and jaq-json's, minus the ones a query
/// must not reach, with a cancellable `range`, and ours where jaq's answer
/// or fail otherwise than jq 1.6's.
pub(super) fn natives() -> Vec<jaq_core::native::Fun<JqData>> {
    const BLOCKED: &[&str] = &["range", "env", "halt", "input", "inputs"];
    let ours: [jaq_core::native::Fun<JqData>; 35] = [
        (
            "floor",
            v(0),
            Native::<JqData>::new(|cv| numbers::rounding(cv, f64::floor)),
        ),
        (
            "ceil",
            v(0),
            Native::<JqData>::new(|cv| numbers::rounding(cv, f64::ceil)),
        ),
        (
            "round",
            v(0),
            Native::<JqData>::new(|cv| numbers::rounding(cv, f64::round)),
        ),
        ("keys", v(0), Native::<JqData>::new(|cv| keys(cv, true))),
        (
            "keys_unsorted",
            v(0),
            Native::<JqData>::new(|cv| keys(cv, false)),
        ),
        (
            "startswith",
            v(1),
            Native::<JqData>::new(text::startswith_native),
        ),
        (
            "endswith",
            v(1),
            Native::<JqData>::new(text::endswith_native),
        ),
        ("test", v(1), Native::<JqData>::new(text::test1_native)),
        ("test", v(2), Native::<JqData>::new(text::test2_native)),
        ("range", v(3), Native::<JqData>::new(range_native)),
        ("halt", v(1), Native::<JqData>::new(halt_native)),
        ("@tsv", v(0), Native::<JqData>::new(format::tsv_native)),
        ("@csv", v(0), Native::<JqData>::new(format::csv_native)),
        ("tojson", v(0), Native::<JqData>::new(format::tojson_native)),
        (
            "tostring",
            v(0),
            Native::<JqData>::new(format::tostring_native),
        ),
        (
            "sort_by",
            [jaq_core::Bind::Fun(())].into(),
            Native::<JqData>::new(sort_by_native),
        ),
        (
            "tonumber",
            v(0),
            Native::<JqData>::new(numbers::tonumber_native),
        ),
        (
            "fromjson",
            v(0),
            Native::<JqData>::new(numbers::fromjson_native),
        ),
        ("has", v(1), Native::<JqData>::new(has_native)),
        ("sort", v(0), Native::<JqData>::new(sort_native)),
        // `error`: null is `empty` in jq 1.6, anything else an error.
        (
            "_lro_error",
            v(0),
            Native::<JqData>::new(|cv| match cv.1 {
                Val::Null => Box::new(std::iter::empty()),
                v => box_once(Err(Exn::from(jaq_core::Error::new(v)))),
            }),
        ),
        ("contains", v(1), Native::<JqData>::new(contains_native)),
        (
            "utf8bytelength",
            v(0),
            Native::<JqData>::new(|cv| match &cv.1 {
                Val::TStr(s) | Val::BStr(s) => box_once(Ok(Val::from(s.len() as isize))),
                other => fail(format_args!(
                    "{} only strings have UTF-8 byte length",
                    described(other)
                )),
            }),
        ),
        // What `@sh` fails with on an array or object (`compile.rs`).
        (
            "_lro_unescapable",
            v(0),
            Native::<JqData>::new(|cv| {
                fail(format_args!(
                    "{} can not be escaped for shell",
                    described(&cv.1)
                ))
            }),
        ),
        // What `min`, `max`, `min_by` and `max_by` of anything but an array
        // fail with, after `map([f])` (`compile.rs`).
        (
            "_lro_uniterable",
            v(1),
            Native::<JqData>::new(|mut cv| {
                let keys = cv.0.pop_var();
                fail(format_args!(
                    "{} and {} cannot be iterated over",
                    described(&cv.1),
                    described(&keys)
                ))
            }),
        ),
        (
            "_lro_unsortable",
            v(1),
            Native::<JqData>::new(|mut cv| {
                let keys = cv.0.pop_var();
                box_once(Err(unsortable(&cv.1, &keys)))
            }),
        ),
        ("split", v(1), Native::<JqData>::new(text::split_native)),
        ("explode", v(0), Native::<JqData>::new(text::explode_native)),
        ("implode", v(0), Native::<JqData>::new(text::implode_native)),
        (
            "ascii_downcase",
            v(0),
            Native::<JqData>::new(|cv| text::ascii(cv, u8::to_ascii_lowercase)),
        ),
        (
            "ascii_upcase",
            v(0),
            Native::<JqData>::new(|cv| text::ascii(cv, u8::to_ascii_uppercase)),
        ),
        ("_lro_num", v(0), Native::<JqData>::new(numbers::num_native)),
        ("_lro_rem", v(2), Native::<JqData>::new(numbers::rem_native)),
        ("_lro_neg", v(0), Native::<JqData>::new(numbers::neg_native)),
        (
            "_lro_matchable",
            v(0),
            Native::<JqData>::new(text::matchable_native),
        ),
    ];
    ours.into_iter()
        .chain(keyed::natives())
        .chain(
            jaq_core::funs::<JqData>()
                .chain(jaq_std::funs())
                .chain(jaq_json::funs())
                .filter(|(name, _, _)| !BLOCKED.contains(name))
                .map(|(name, sig, f)| {
                    let ours = RENAMED.iter().find(|(jaq, _)| *jaq == name);
                    (ours.map_or(name, |(_, ours)| ours), sig, f)
                }),
        )
        .collect()
}

/// A number's double.
pub(super) fn f64_of(n: &jaq_json::Num) -> f64 {
    use jaq_std::ValT;
    Val::Num(n.clone()).as_f64().unwrap_or(f64::NAN)
}

/// An error with jq 1.6's text.
pub(super) fn fail<'a>(text: impl std::fmt::Display) -> jaq_core::ValXs<'a, Val> {
    box_once(Err(Exn::from(jaq_core::Error::str(text))))
}

/// `has($k)`: an object's string key, an array's index (cut to an integer,
/// as jq 1.6 does); null has nothing.
fn has_native<'a>(mut cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    let k = cv.0.pop_var();
    let has = match (&cv.1, &k) {
        (Val::Null, _) => false,
        (Val::Obj(o), Val::TStr(_) | Val::BStr(_)) => o.contains_key(&k),
        (Val::Arr(a), Val::Num(n)) => {
            let i = f64_of(n).trunc();
            i >= 0.0 && i < a.len() as f64
        }
        (v, k) => {
            return fail(format_args!(
                "Cannot check whether {} has a {} key",
                kind(v),
                kind(k)
            ));
        }
    };
    box_once(Ok(Val::Bool(has)))
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

/// `keys` and `keys_unsorted`, failing in jq 1.6's words (jaq's fail as
/// iterating does).
fn keys<'a>(
    cv: jaq_core::Cv<'a, JqData>,
    sorted: bool,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    let keys = match &cv.1 {
        Val::Obj(o) => {
            let mut keys: Vec<Val> = o.keys().cloned().collect();
            if sorted {
                keys.sort();
            }
            keys
        }
        Val::Arr(a) => (0..a.len()).map(Val::from).collect(),
        other => {
            return box_once(Err(Exn::from(jaq_core::Error::str(format_args!(
                "{} has no keys",
                described(other)
            )))));
        }
    };
    box_once(Ok(Val::Arr(keys.into())))
}

/// `sort_by(f)`: `f` run on every element, as in jq, so that an error in
/// it fails the sort even where sorting needs no key (jaq's skips the keys
/// of an array of one); then a stable sort by the outputs of `f`.
fn sort_by_native<'a>(
    mut cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    let (f, fc) = cv.0.pop_fun();
    let sorted = (|| {
        let items = match cv.1 {
            Val::Arr(items) => items,
            // jq 1.6 computes `map([f])` first: over an object's values,
            // then it cannot sort the object by them.
            Val::Obj(o) => {
                let mut keys = Vec::with_capacity(o.len());
                for x in o.values().cloned() {
                    keys.push(Val::Arr(
                        f.run((fc.clone(), x))
                            .collect::<Result<Vec<_>, _>>()?
                            .into(),
                    ));
                }
                return Err(unsortable(&Val::Obj(o), &Val::Arr(keys.into())));
            }
            other => {
                return Err(Exn::from(jaq_core::Error::str(format_args!(
                    "Cannot iterate over {}",
                    described(&other)
                ))));
            }
        };
        let mut keyed = Vec::with_capacity(items.len());
        for x in items.iter().cloned() {
            let key: Vec<Val> = f.run((fc.clone(), x.clone())).collect::<Result<_, _>>()?;
            keyed.push((key, x));
        }
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(keyed.into_iter().map(|(_, x)| x).collect())
    })();
    box_once(sorted)
}

/// jq 1.6's error for sorting `v` by `keys` that do not go together.
fn unsortable<'a>(v: &Val, keys: &Val) -> Exn<'a, Val> {
    Exn::from(jaq_core::Error::str(format_args!(
        "{} and {} cannot be sorted, as they are not both arrays",
        described(v),
        described(keys)
    )))
}

/// `contains($b)` as jq 1.6's: values of two kinds (`true` and `false`
/// are two) fail, and inside them do not contain each other; a string
/// contains another up to its first NUL, as C's `strstr`; an array, each of
/// `b`'s elements in one of its own; an object, each of `b`'s keys with a
/// value it contains.
fn contains_native<'a>(mut cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    let b = cv.0.pop_var();
    if !same_kind(&cv.1, &b) {
        return fail(format_args!(
            "{} and {} cannot have their containment checked",
            described(&cv.1),
            described(&b)
        ));
    }
    box_once(Ok(Val::Bool(contains(&cv.1, &b))))
}

/// Whether jq 1.6 counts two values of one kind.
fn same_kind(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Bool(x), Val::Bool(y)) => x == y,
        _ => kind(a) == kind(b),
    }
}

fn contains(a: &Val, b: &Val) -> bool {
    if !same_kind(a, b) {
        return false;
    }
    match (a, b) {
        (Val::Obj(a), Val::Obj(b)) => b
            .iter()
            .all(|(k, y)| a.get(k).is_some_and(|x| contains(x, y))),
        (Val::Arr(a), Val::Arr(b)) => b.iter().all(|y| a.iter().any(|x| contains(x, y))),
        (Val::TStr(x) | Val::BStr(x), Val::TStr(y) | Val::BStr(y)) => {
            let upto = |s: &[u8]| s.iter().position(|c| *c == 0).unwrap_or(s.len());
            let (x, y) = (&x[..upto(x)], &y[..upto(y)]);
            y.is_empty() || x.windows(y.len()).any(|w| w == y)
        }
        (a, b) => a == b,
    }
}

/// `sort`, failing in jq 1.6's words.
fn sort_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    match cv.1 {
        Val::Arr(a) => {
            let mut a = (*a).clone();
            a.sort();
            box_once(Ok(Val::Arr(a.into())))
        }
        other => fail(format_args!(
            "{} cannot be sorted, as it is not an array",
            described(&other)
        )),
    }
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

#[cfg(test)]
mod tests {
    use crate::jq::eval_values;
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
            &[json!({"t": "a\tb\\", "u": "c\u{0}"})],
        )
        .unwrap();
        assert_eq!(out, [json!("a\\tb\\\\\tc\\0\t\t1")]);
        let out = eval_values("[.t, 2, true] | @csv", &[json!({"t": "say \"hi\"\u{0}"})]).unwrap();
        assert_eq!(out, [json!("\"say \"\"hi\"\"\\0\",2,true")]);
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
        let out = eval_values(
            "keys, ({b: 1, a: 2} | keys_unsorted), ([1, 2] | keys), (.b | startswith(\"x\"), endswith(\"z\"))",
            &[json!({"b": "xyz", "a": 1})],
        )
        .unwrap();
        assert_eq!(
            out,
            [
                json!(["a", "b"]),
                json!(["b", "a"]),
                json!([0, 1]),
                json!(true),
                json!(true)
            ]
        );
    }

    #[test]
    fn halt_is_an_error_not_an_exit() {
        let e = eval_values("halt_error", &[json!("bye")]).unwrap_err();
        assert!(e.to_string().contains("halt"), "{e}");
    }
}
