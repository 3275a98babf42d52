//! Our natives (custom jq functions), jaq's own where they answer as jq
//! 1.6 does: a cancellable `range`, `keys`, `has`, `sort_by`, `floor`,
//! `ceil` and `round` as jq 1.6's,
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

/// jaq-std's regex natives, renamed: ours by these names check the input
/// first (`matches`, …, in `compile.rs`), as jq 1.6 does.
const REGEX: &[&str] = &["matches", "split_matches", "split_"];

/// Our natives: jaq-core's, jaq-std's and jaq-json's, minus the ones a query
/// must not reach, with a cancellable `range`, and ours where jaq's answer
/// or fail otherwise than jq 1.6's.
pub(super) fn natives() -> Vec<jaq_core::native::Fun<JqData>> {
    const BLOCKED: &[&str] = &["range", "env", "halt", "input", "inputs"];
    let ours: [jaq_core::native::Fun<JqData>; 28] = [
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
                .map(
                    |(name, sig, f)| match REGEX.iter().position(|n| *n == name) {
                        Some(i) => (
                            ["_lro_matches", "_lro_split_matches", "_lro_split_"][i],
                            sig,
                            f,
                        ),
                        None => (name, sig, f),
                    },
                ),
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
            other => return Err(Exn::from(jaq_core::Error::typ(other, "array"))),
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
