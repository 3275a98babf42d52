//! Our natives (custom jq functions): a cancellable `range`, `test` with a
//! compiled-regex cache, `@tsv`/`@csv` and `tojson` printing numbers as jq
//! 1.6 does, and a `halt` that is an error; the natives a query must not
//! reach are left out.

use jaq_core::{DataT, Exn, Native, box_iter::box_once, native::v};
use jaq_json::Val;

use super::{
    convert::write_num,
    fromjson,
    message::{described, kind},
    originals::NoOriginals,
    read,
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
    let ours: [jaq_core::native::Fun<JqData>; 29] = [
        ("keys", v(0), Native::<JqData>::new(|cv| keys(cv, true))),
        (
            "keys_unsorted",
            v(0),
            Native::<JqData>::new(|cv| keys(cv, false)),
        ),
        ("startswith", v(1), Native::<JqData>::new(startswith_native)),
        ("endswith", v(1), Native::<JqData>::new(endswith_native)),
        ("test", v(1), Native::<JqData>::new(test1_native)),
        ("test", v(2), Native::<JqData>::new(test2_native)),
        ("range", v(3), Native::<JqData>::new(range_native)),
        ("halt", v(1), Native::<JqData>::new(halt_native)),
        ("@tsv", v(0), Native::<JqData>::new(tsv_native)),
        ("@csv", v(0), Native::<JqData>::new(csv_native)),
        ("tojson", v(0), Native::<JqData>::new(tojson_native)),
        ("tostring", v(0), Native::<JqData>::new(tostring_native)),
        (
            "sort_by",
            [jaq_core::Bind::Fun(())].into(),
            Native::<JqData>::new(sort_by_native),
        ),
        ("tonumber", v(0), Native::<JqData>::new(tonumber_native)),
        ("fromjson", v(0), Native::<JqData>::new(fromjson_native)),
        ("has", v(1), Native::<JqData>::new(has_native)),
        ("split", v(1), Native::<JqData>::new(split_native)),
        ("explode", v(0), Native::<JqData>::new(explode_native)),
        ("implode", v(0), Native::<JqData>::new(implode_native)),
        (
            "ascii_downcase",
            v(0),
            Native::<JqData>::new(|cv| ascii(cv, u8::to_ascii_lowercase)),
        ),
        (
            "ascii_upcase",
            v(0),
            Native::<JqData>::new(|cv| ascii(cv, u8::to_ascii_uppercase)),
        ),
        ("_lro_num", v(0), Native::<JqData>::new(num_native)),
        ("_lro_rem", v(2), Native::<JqData>::new(rem_native)),
        ("_lro_neg", v(0), Native::<JqData>::new(neg_native)),
        (
            "_lro_matchable",
            v(0),
            Native::<JqData>::new(matchable_native),
        ),
        (
            "_lro_keyed",
            v(0),
            Native::<JqData>::new(|cv| box_once(numbered(cv.1)))
                .with_paths(|cv| {
                    let (v, path) = cv.1;
                    box_once(numbered(v).map(|v| (v, path)))
                })
                .with_update(|cv, f| match numbered(cv.1) {
                    Ok(v) => f(v),
                    Err(e) => box_once(Err(e)),
                }),
        ),
        // `.[$k]` and `.[$k]?`: as `.[0]` and `.[0]?` when `$k` holds a
        // number, the input unchanged otherwise.
        (
            "_lro_keyed_by",
            v(1),
            Native::<JqData>::new(|mut cv| {
                let k = cv.0.pop_var();
                box_once(keyed_by(cv.1, &k))
            })
            .with_paths(|mut cv| {
                let k = cv.0.pop_var();
                let (v, path) = cv.1;
                box_once(keyed_by(v, &k).map(|v| (v, path)))
            })
            .with_update(|mut cv, f| {
                let k = cv.0.pop_var();
                match keyed_by(cv.1, &k) {
                    Ok(v) => f(v),
                    Err(e) => box_once(Err(e)),
                }
            }),
        ),
        (
            "_lro_keyed_by_opt",
            v(1),
            Native::<JqData>::new(|mut cv| {
                let k = cv.0.pop_var();
                match (cv.1, k) {
                    (Val::Obj(_), Val::Num(_)) => Box::new(std::iter::empty()),
                    (v, _) => box_once(Ok(v)),
                }
            })
            .with_paths(|mut cv| {
                let k = cv.0.pop_var();
                match (cv.1, k) {
                    ((Val::Obj(_), _), Val::Num(_)) => Box::new(std::iter::empty()),
                    (vp, _) => box_once(Ok(vp)),
                }
            })
            .with_update(|mut cv, f| {
                let k = cv.0.pop_var();
                match (cv.1, k) {
                    (o @ Val::Obj(_), Val::Num(_)) => box_once(Ok(o)),
                    (v, _) => f(v),
                }
            }),
        ),
        // `.[0]?`: an object has nothing there, as a value, a path and an
        // update (which leaves it as it is).
        (
            "_lro_keyed_opt",
            v(0),
            Native::<JqData>::new(|cv| match cv.1 {
                Val::Obj(_) => Box::new(std::iter::empty()),
                v => box_once(Ok(v)),
            })
            .with_paths(|cv| match cv.1 {
                (Val::Obj(_), _) => Box::new(std::iter::empty()),
                vp => box_once(Ok(vp)),
            })
            .with_update(|cv, f| match cv.1 {
                o @ Val::Obj(_) => box_once(Ok(o)),
                v => f(v),
            }),
        ),
    ];
    ours.into_iter()
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
fn f64_of(n: &jaq_json::Num) -> f64 {
    use jaq_std::ValT;
    Val::Num(n.clone()).as_f64().unwrap_or(f64::NAN)
}

/// An error with jq 1.6's text.
fn fail<'a>(text: impl std::fmt::Display) -> jaq_core::ValXs<'a, Val> {
    box_once(Err(Exn::from(jaq_core::Error::str(text))))
}

/// `tonumber`: a number as it is, a string read as jq 1.6 reads JSON
/// text, which must be a number.
fn tonumber_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
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
fn fromjson_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
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

/// `split($sep)`: a string cut at each `sep` (jq 1.6: an empty string
/// gives `[]`, an empty `sep` the characters).
fn split_native<'a>(mut cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    let sep = cv.0.pop_var();
    let (Val::TStr(s), Val::TStr(sep)) = (&cv.1, &sep) else {
        return fail("split input and separator must be strings");
    };
    let s = String::from_utf8_lossy(s);
    let sep = String::from_utf8_lossy(sep);
    let parts: Vec<Val> = if s.is_empty() {
        Vec::new()
    } else if sep.is_empty() {
        s.chars().map(|c| Val::from(c.to_string())).collect()
    } else {
        s.split(&*sep).map(|p| Val::from(p.to_owned())).collect()
    };
    box_once(Ok(Val::Arr(parts.into())))
}

fn explode_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    let Val::TStr(s) = &cv.1 else {
        return fail("explode input must be a string");
    };
    let codes = String::from_utf8_lossy(s)
        .chars()
        .map(|c| Val::from(c as isize))
        .collect();
    box_once(Ok(Val::Arr(std::rc::Rc::new(codes))))
}

/// `implode`: numbers (cut to integers, as jq 1.6 does) to characters.
fn implode_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    let Val::Arr(codes) = &cv.1 else {
        return fail("implode input must be an array");
    };
    let mut s = String::new();
    for c in codes.iter() {
        let Val::Num(n) = c else {
            return fail("Unicode codepoint must be numeric");
        };
        let code = f64_of(n) as u32;
        s.push(char::from_u32(code).unwrap_or('\u{fffd}'));
    }
    box_once(Ok(Val::from(s)))
}

/// `ascii_downcase`, `ascii_upcase`.
fn ascii<'a>(cv: jaq_core::Cv<'a, JqData>, f: fn(&u8) -> u8) -> jaq_core::ValXs<'a, Val> {
    let Val::TStr(s) = &cv.1 else {
        return fail("explode input must be a string");
    };
    box_once(Ok(Val::utf8_str(s.iter().map(f).collect::<Vec<u8>>())))
}

/// A number as jq 1.6 holds it, the double (what every arithmetic
/// operation is piped through, `rewrite.rs`); anything else as it is.
fn num_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
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
fn rem_native<'a>(mut cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
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
fn neg_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    match cv.1 {
        Val::Num(n) => box_once(Ok(read::as_jq(&Val::Num(-n)))),
        other => fail(format_args!("{} cannot be negated", described(&other))),
    }
}

/// What a number indexes, as jq 1.6 has it: an object fails (jaq's answers
/// null). An identity otherwise, as a value, a path and an update.
fn numbered<'a>(v: Val) -> Result<Val, Exn<'a, Val>> {
    match v {
        Val::Obj(_) => Err(Exn::from(jaq_core::Error::str(
            "Cannot index object with number",
        ))),
        v => Ok(v),
    }
}

/// The input of `.[$k]`: an object fails as `.[0]` does when `k` is a
/// number, anything else passes.
fn keyed_by<'a>(v: Val, k: &Val) -> Result<Val, Exn<'a, Val>> {
    match k {
        Val::Num(_) => numbered(v),
        _ => Ok(v),
    }
}

/// The input of a regex filter: a string, or jq 1.6's error.
fn matchable_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    match cv.1 {
        s @ Val::TStr(_) => box_once(Ok(s)),
        other => fail(format_args!(
            "{} cannot be matched, as it is not a string",
            described(&other)
        )),
    }
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

fn startswith_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    affix(cv, "startswith", <[u8]>::starts_with)
}

fn endswith_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    affix(cv, "endswith", <[u8]>::ends_with)
}

/// `startswith`/`endswith`, failing in jq 1.6's words (jaq's say `cannot
/// use null as string`, as for any function wanting a string).
fn affix<'a>(
    mut cv: jaq_core::Cv<'a, JqData>,
    name: &str,
    has: fn(&[u8], &[u8]) -> bool,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    let needle = cv.0.pop_var();
    box_once(match (&cv.1, &needle) {
        (Val::TStr(s), Val::TStr(n)) => Ok(Val::Bool(has(s, n))),
        _ => Err(Exn::from(jaq_core::Error::str(format_args!(
            "{name}() requires string inputs"
        )))),
    })
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
            "{} cannot be matched, as it is not a string",
            described(input)
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

/// `tojson`: jq 1.6's text, where jaq's spells numbers its own way (`1e-5`
/// for `1e-05`). A string interpolation still takes jaq's.
fn tojson_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    box_once(to_json(&cv.1))
}

/// `tostring`: a string as it is, anything else as `tojson` prints it.
fn tostring_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    match cv.1 {
        s @ (Val::TStr(_) | Val::BStr(_)) => box_once(Ok(s)),
        other => box_once(to_json(&other)),
    }
}

fn to_json<'a>(v: &Val) -> jaq_core::ValX<'a, Val> {
    let mut text = Vec::new();
    super::convert::write_json(&mut text, v, 0, usize::MAX, &NoOriginals)
        .map(|_| Val::utf8_str(text))
        .map_err(|e| Exn::from(jaq_core::Error::str(e)))
}

fn tsv_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    box_once(format_row(&cv.1, "tsv").map_err(Exn::from))
}

fn csv_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    box_once(format_row(&cv.1, "csv").map_err(Exn::from))
}

/// jq's `@tsv` / `@csv` (not provided by jaq's libraries): an array of
/// scalars to one row. `@tsv` escapes `\\`, tab, newline, CR and NUL; `@csv`
/// quotes strings, doubling quotes (both write NUL as `\0`, as jq 1.6
/// does); null is empty.
fn format_row(v: &Val, kind: &str) -> Result<Val, jaq_core::Error<Val>> {
    let Val::Arr(items) = v else {
        return Err(jaq_core::Error::str(format_args!(
            "{} cannot be {kind}-formatted, only array",
            described(v)
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
                        0 => row.extend_from_slice(b"\\0"),
                        b => row.push(b),
                    }
                }
            }
            Val::TStr(s) | Val::BStr(s) => {
                row.push(b'"');
                for &b in s.iter() {
                    match b {
                        b'"' => row.extend_from_slice(b"\"\""),
                        0 => row.extend_from_slice(b"\\0"),
                        b => row.push(b),
                    }
                }
                row.push(b'"');
            }
            other => {
                // jq 1.6 says csv for `@tsv` too.
                return Err(jaq_core::Error::str(format_args!(
                    "{} is not valid in a csv row",
                    described(other)
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
    fn numbers_in_text_are_jq_1_6_s() {
        // Each line as `jq -c` (jq 1.6) prints it; the formats as
        // `jq -c '@text, @sh, @html, (.[0] | @text, @sh)'` does.
        let input: serde_json::Value =
            serde_json::from_str("[0.00001, 1e20, 0.1, 3, -0.0, 12345678901234567890]").unwrap();
        let out = eval_values("tostring, (.[] | tostring), tojson, join(\",\")", &[input]).unwrap();
        let all = "1e-05,1e+20,0.1,3,-0,12345678901234567000";
        let mut want = vec![json!(format!("[{all}]"))];
        want.extend(all.split(',').map(|n| json!(n)));
        want.extend([json!(format!("[{all}]")), json!(all)]);
        assert_eq!(out, want);
        let out = eval_values(
            "@text, @sh, @html, (.[0] | @text, @sh)",
            &[json!([1e-5, "a'"])],
        );
        let text = r#"[1e-05,"a'"]"#;
        let sh = r#"1e-05 'a'\'''"#;
        let html = "[1e-05,&quot;a&apos;&quot;]";
        assert_eq!(
            out.unwrap(),
            [text, sh, html, "1e-05", "1e-05"].map(|s| json!(s))
        );
        let out = eval_values(r#"@text "a\(.)", @uri, @base64, @json"#, &[json!(1e-5)]);
        let want = ["a1e-05", "1e-05", "MWUtMDU=", "1e-05"];
        assert_eq!(out.unwrap(), want.map(|s| json!(s)));
        // `sort_by` runs its key on an array of one too, and fails as jq.
        assert!(eval_values("sort_by(-.n)", &[json!([{"n": "s"}])]).is_err());
    }

    #[test]
    fn halt_is_an_error_not_an_exit() {
        let e = eval_values("halt_error", &[json!("bye")]).unwrap_err();
        assert!(e.to_string().contains("halt"), "{e}");
    }
}
