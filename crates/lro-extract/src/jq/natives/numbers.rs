//! Natives over numbers: `tonumber` and `fromjson` reading text as jq 1.6
//! reads JSON, and what the rewritten arithmetic calls (`rewrite.rs`): a
//! result rounded to jq's double, `%` and `-x` as jq 1.6 computes them;
//! `floor`, `ceil` and `round` keeping the double's sign (`-0`).

use jaq_core::{Exn, box_iter::box_once};
use jaq_json::Val;

use super::{
    super::{fromjson, message::described, read, stop::JqData},
    f64_of, fail,
};

/// `tonumber`: a number as it is, a string read as jq 1.6 reads JSON
/// text, which must be a number.
pub(super) fn tonumber_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    match &cv.1 {
        Val::Num(_) => box_once(Ok(cv.1)),
        Val::TStr(s) | Val::BStr(s) => match fromjson::parse(s) {
            Err(e) => fail(e),
            Ok(n @ Val::Num(_)) => box_once(Ok(n)),
            Ok(_) => fail(format_args!(
                "{} cannot be parsed as a number",
                described(&cv.1)
            )),
        },
        other => fail(format_args!(
            "{} cannot be parsed as a number",
            described(other)
        )),
    }
}

/// `fromjson`: a string read as jq 1.6 reads JSON text.
pub(super) fn fromjson_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    match &cv.1 {
        Val::TStr(s) | Val::BStr(s) => {
            box_once(fromjson::parse(s).map_err(|e| Exn::from(jaq_core::Error::str(e))))
        }
        other => fail(format_args!(
            "{} only strings can be parsed",
            described(other)
        )),
    }
}

/// A number as jq 1.6 holds it, the double (what every arithmetic
/// operation is piped through, `rewrite.rs`); anything else as it is.
pub(super) fn num_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    match &cv.1 {
        Val::Num(jaq_json::Num::Int(i)) if read::exact(*i) => box_once(Ok(cv.1)),
        Val::Num(jaq_json::Num::Float(f)) if !(f.fract() == 0.0 && f.abs() <= 9.0e15) => {
            box_once(Ok(cv.1))
        }
        Val::Num(_) => box_once(Ok(read::as_jq(&cv.1))),
        _ => box_once(Ok(cv.1)),
    }
}

/// `$l % $r` as jq 1.6 computes it: both cut to 64-bit integers first (a
/// double out of their range, or NaN, becomes the smallest, as x86 does).
pub(super) fn rem_native<'a>(mut cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    let r = cv.0.pop_var();
    let l = cv.0.pop_var();
    let (Val::Num(a), Val::Num(b)) = (&l, &r) else {
        // jaq's error, in jq's words by `message.rs`.
        return box_once((l % r).map_err(Exn::from));
    };
    let int = |f: f64| {
        // 2^63: the doubles in [-2^63, 2^63) are the ones an i64 holds.
        const LIMIT: f64 = 9_223_372_036_854_775_808.0;
        if (-LIMIT..LIMIT).contains(&f) {
            f as i64
        } else {
            i64::MIN
        }
    };
    let (a_i, b_i) = (int(f64_of(a)), int(f64_of(b)));
    if b_i == 0 {
        return fail(format_args!(
            "{} and {} cannot be divided (remainder) because the divisor is zero",
            described(&l),
            described(&r)
        ));
    }
    box_once(Ok(read::number(a_i.wrapping_rem(b_i) as f64)))
}

/// `-x`, failing in jq 1.6's words (jaq says of it what it says of a math
/// function's input, which jq words otherwise).
pub(super) fn neg_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    match cv.1 {
        Val::Num(n) => box_once(Ok(read::as_jq(&Val::Num(-n)))),
        other => fail(format_args!("{} cannot be negated", described(&other))),
    }
}

/// `floor`, `ceil` and `round` by `f`, as jq 1.6 computes them: the double
/// C's function gives (jaq's make an integer of it, losing `-0`: `-0.4 |
/// round` is `-0` in jq); anything else fails as jaq's do.
pub(super) fn rounding<'a>(
    cv: jaq_core::Cv<'a, JqData>,
    f: fn(f64) -> f64,
) -> jaq_core::ValXs<'a, Val> {
    use jaq_std::ValT;
    match cv.1.as_f64() {
        Some(x) => box_once(Ok(read::number(f(x)))),
        None => box_once(Err(Exn::from(jaq_core::Error::typ(cv.1, "number")))),
    }
}
