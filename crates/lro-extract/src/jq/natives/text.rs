//! Natives over text: `startswith`/`endswith`, `split`, `explode` and
//! `implode`, the ASCII case changes, and `test` with a compiled-regex
//! cache, failing where jq 1.6 fails, in its words.

use jaq_core::{DataT, Exn, box_iter::box_once};
use jaq_json::Val;

use super::{super::message::described, super::stop::JqData, f64_of, fail};

pub(super) fn startswith_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    affix(cv, "startswith", <[u8]>::starts_with)
}

pub(super) fn endswith_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    affix(cv, "endswith", <[u8]>::ends_with)
}

/// `startswith`/`endswith`, failing in jq 1.6's words (jaq's say `cannot
/// use null as string`, as for any function wanting a string).
pub(super) fn affix<'a>(
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

/// `split($sep)`: a string cut at each `sep` (jq 1.6: an empty string
/// gives `[]`, an empty `sep` the characters).
pub(super) fn split_native<'a>(mut cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
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

pub(super) fn explode_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    let Val::TStr(s) = &cv.1 else {
        return fail("explode input must be a string");
    };
    let codes = String::from_utf8_lossy(s)
        .chars()
        .map(|c| Val::from(c as isize))
        .collect();
    box_once(Ok(Val::Arr(std::rc::Rc::new(codes))))
}

/// `implode`: numbers, cut to integers as jq 1.6 does, to characters; past
/// U+10FFFF the replacement character, as jq 1.6. Where jq 1.6 aborts (an
/// element that is not a number, a negative one, a surrogate, one past a C
/// `int`), an error in jq's words instead.
pub(super) fn implode_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    let Val::Arr(codes) = &cv.1 else {
        return fail("implode input must be an array");
    };
    let mut s = String::new();
    for c in codes.iter() {
        let Val::Num(n) = c else {
            return fail(format_args!(
                "{} cannot be imploded, as it is not a number (a codepoint)",
                described(c)
            ));
        };
        let code = f64_of(n).trunc();
        let ch = if (0.0..=f64::from(i32::MAX)).contains(&code) {
            // Within an `int`: a character, or past Unicode the replacement.
            char::from_u32(code as u32).or_else(|| (code > 1_114_111.0).then_some('\u{fffd}'))
        } else {
            None
        };
        let Some(ch) = ch else {
            return fail(format_args!(
                "{} cannot be imploded, as it is not a valid codepoint",
                described(c)
            ));
        };
        s.push(ch);
    }
    box_once(Ok(Val::from(s)))
}

/// `ascii_downcase`, `ascii_upcase`.
pub(super) fn ascii<'a>(
    cv: jaq_core::Cv<'a, JqData>,
    f: fn(&u8) -> u8,
) -> jaq_core::ValXs<'a, Val> {
    let Val::TStr(s) = &cv.1 else {
        return fail("explode input must be a string");
    };
    box_once(Ok(Val::utf8_str(s.iter().map(f).collect::<Vec<u8>>())))
}

/// The input of a regex filter: a string, or jq 1.6's error.
pub(super) fn matchable_native<'a>(cv: jaq_core::Cv<'a, JqData>) -> jaq_core::ValXs<'a, Val> {
    match cv.1 {
        s @ Val::TStr(_) => box_once(Ok(s)),
        other => fail(format_args!(
            "{} cannot be matched, as it is not a string",
            described(&other)
        )),
    }
}

pub(super) fn test1_native<'a>(
    mut cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    let re = cv.0.pop_var();
    box_once(regex_test(&cv.1, &re, "").map_err(Exn::from))
}

pub(super) fn test2_native<'a>(
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
pub(super) fn regex_test(input: &Val, re: &Val, flags: &str) -> Result<Val, jaq_core::Error<Val>> {
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

#[cfg(test)]
mod tests {
    use crate::jq::eval_values;
    use serde_json::json;

    #[test]
    fn implode_answers_as_jq_1_6_or_fails_where_it_aborts() {
        // As `jq -nc` (jq 1.6) prints them.
        let out = eval_values("[65.7, -0.5, 1114112] | implode", &[json!(null)]).unwrap();
        assert_eq!(out, [json!("A\u{0}\u{fffd}")]);
        // jq 1.6 aborts on each of these.
        for (codes, error) in [
            (
                "[\"a\"]",
                "string (\"a\") cannot be imploded, as it is not a number",
            ),
            (
                "[null]",
                "null (null) cannot be imploded, as it is not a number",
            ),
            (
                "[-1]",
                "number (-1) cannot be imploded, as it is not a valid codepoint",
            ),
            (
                "[55296]",
                "number (55296) cannot be imploded, as it is not a valid codepoint",
            ),
            (
                "[1e20]",
                "number (1e+20) cannot be imploded, as it is not a valid codepoint",
            ),
            (
                "[nan]",
                "cannot be imploded, as it is not a valid codepoint",
            ),
        ] {
            let e = eval_values(&format!("{codes} | implode"), &[json!(null)]).unwrap_err();
            assert!(e.to_string().contains(error), "{codes}: {e}");
        }
    }
}
