//! Records read into jaq values the way jq 1.6 reads them.
//!
//! jaq keeps integer literals as exact integers and decimals as their text;
//! jq 1.6 holds every number as a double. A record is read here with every
//! number rounded to the double jq holds: kept as a jaq integer when that
//! double is an integer of at most 2^53 (so `tostring` and `@csv` print it
//! as jq does, and integer arithmetic on it is exact as double arithmetic
//! is there), else as a jaq float (`-0` too). An object's duplicate key
//! keeps one place, the first, with the last value, as in jq.
//!
//! jq 1.6 refuses a text nested past its parser's stack of 256 entries
//! (an array or object takes one, an object's key one more while its value
//! is read): such a record is [`ReadError::Deep`], found in the same pass.
//! [`too_deep`] answers the same question about a line without reading it.

use std::{borrow::Cow, fmt, rc::Rc};

use jaq_json::{Num, Val};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

pub(crate) use super::double::number;
pub(crate) use crate::failures::MAX_PARSING_DEPTH;

/// Whether a jaq integer is a double exactly (then it prints alike).
pub(crate) fn exact(i: isize) -> bool {
    i.unsigned_abs() <= 1 << 53
}

/// The marker of a depth error inside serde's error text.
const DEEP: &str = "deeper than jq 1.6 parses";

/// Why a record could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// Nested deeper than jq 1.6 parses.
    Deep,
    /// Not JSON that jq 1.6 reads (a lone high surrogate escape); jq's
    /// message.
    Bad(String),
}

/// Reads one record (a whole line) as jq 1.6 reads it.
pub(crate) fn parse(line: &[u8]) -> Result<Val, ReadError> {
    match negative_zeros(line) {
        Some(respelled) => parse_text(&respelled),
        None => parse_text(line),
    }
}

fn parse_text(line: &[u8]) -> Result<Val, ReadError> {
    let mut de = serde_json::Deserializer::from_slice(line);
    de.disable_recursion_limit();
    let read = Stack(0)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    match read {
        Ok(v) => Ok(v),
        Err(e) if e.to_string().contains(DEEP) => Err(ReadError::Deep),
        Err(_) if too_deep(line) => Err(ReadError::Deep),
        // What serde refuses is read by jq 1.6's own reader (`fromjson`'s):
        // a lone low surrogate escape is U+FFFD, a number beyond the
        // doubles is infinite, and a lone high surrogate is jq's error.
        Err(_) => super::fromjson::parse(line).map_err(|e| ReadError::Bad(refusal(&e))),
    }
}

/// Whether `line` has a high surrogate escape (`\ud800`). jq 1.6 refuses
/// it unless a low one follows, which only reading tells: the fast paths,
/// which print or compare a line without reading it all, leave such a line
/// to [`parse`].
pub(crate) fn high_surrogate(line: &[u8]) -> bool {
    memchr::memmem::find_iter(line, b"\\u").any(|i| {
        matches!(
            line.get(i + 2..i + 4),
            Some([b'd' | b'D', b'8' | b'9' | b'a' | b'b' | b'A' | b'B'])
        )
    })
}

/// jq 1.6's parse error without what `fromjson` adds to it: the text it
/// read (the whole record) and where in it (the record's own line 1).
fn refusal(message: &str) -> String {
    let cut = [" at line ", " (while parsing "]
        .iter()
        .filter_map(|at| message.find(at))
        .min()
        .unwrap_or(message.len());
    message[..cut].to_owned()
}

/// Whether jq 1.6 refuses `line` as nested too deep. Most lines are
/// answered by counting three bytes; the others are walked.
pub(crate) fn too_deep(line: &[u8]) -> bool {
    // Every entry of the stack is pushed at a `[`, `{` or `:`.
    if line.len() <= MAX_PARSING_DEPTH
        || memchr::memchr3_iter(b'[', b'{', b':', line).count() <= MAX_PARSING_DEPTH
    {
        return false;
    }
    // Per open container: whether it is an object reading a value (its key
    // then holds an entry too).
    let mut open: Vec<bool> = Vec::new();
    let mut entries = 0usize;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'"' => match string_end(line, i) {
                Some(end) => {
                    i = end;
                    continue;
                }
                None => return false,
            },
            c @ (b'[' | b'{' | b':') => {
                if entries >= MAX_PARSING_DEPTH {
                    return true;
                }
                entries += 1;
                match c {
                    b':' => {
                        if let Some(top) = open.last_mut() {
                            *top = true;
                        }
                    }
                    _ => open.push(false),
                }
            }
            b',' => {
                if let Some(top @ true) = open.last_mut() {
                    *top = false;
                    entries -= 1;
                }
            }
            b']' | b'}' => {
                let Some(key) = open.pop() else { return false };
                entries = entries.saturating_sub(1 + usize::from(key));
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// `line` with each `-0` spelled `-0.0`, when it has one: serde reads the
/// integer `-0` as `0`, and jq holds it as the double -0.
fn negative_zeros(line: &[u8]) -> Option<Vec<u8>> {
    let ends = |b: Option<&u8>| !matches!(b, Some(b'0'..=b'9' | b'.' | b'e' | b'E'));
    memchr::memmem::find_iter(line, b"-0").find(|&i| ends(line.get(i + 2)))?;
    let mut out = Vec::with_capacity(line.len() + 8);
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'"' => {
                let end = string_end(line, i).unwrap_or(line.len());
                out.extend_from_slice(&line[i..end]);
                i = end;
            }
            b'-' if line.get(i + 1) == Some(&b'0') && ends(line.get(i + 2)) => {
                out.extend_from_slice(b"-0.0");
                i += 2;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// Index just past the string opening at `b[i]`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        if b[j] == b'"' {
            return Some(j + 1);
        }
        j += 2;
    }
}

/// `v` with every number as jq 1.6 holds it.
pub(crate) fn as_jq(v: &Val) -> Val {
    match v {
        Val::Num(n) => match n {
            Num::Int(i) => number(*i as f64),
            Num::Float(f) => number(*f),
            // Big integers and decimal text, through their double.
            other => number(other.to_string().parse().unwrap_or(f64::NAN)),
        },
        Val::Arr(items) => Val::Arr(Rc::new(items.iter().map(as_jq).collect())),
        Val::Obj(map) => Val::obj(map.iter().map(|(k, v)| (k.clone(), as_jq(v))).collect()),
        other => other.clone(),
    }
}

/// A value read with `0` the entries on jq's stack around it.
struct Stack(usize);

fn deep<E: de::Error>() -> E {
    E::custom(DEEP)
}

impl<'de> DeserializeSeed<'de> for Stack {
    type Value = Val;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Val, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Stack {
    type Value = Val;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Val, E> {
        Ok(Val::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Val, E> {
        Ok(Val::Bool(b))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Val, E> {
        Ok(number(u as f64))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Val, E> {
        Ok(number(i as f64))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Val, E> {
        Ok(number(f))
    }

    fn visit_str<E>(self, s: &str) -> Result<Val, E> {
        Ok(Val::utf8_str(s.as_bytes().to_vec()))
    }

    fn visit_string<E>(self, s: String) -> Result<Val, E> {
        Ok(Val::utf8_str(s.into_bytes()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Val, A::Error> {
        if self.0 >= MAX_PARSING_DEPTH {
            return Err(deep());
        }
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(v) = seq.next_element_seed(Stack(self.0 + 1))? {
            items.push(v);
        }
        Ok(Val::Arr(Rc::new(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Val, A::Error> {
        if self.0 >= MAX_PARSING_DEPTH {
            return Err(deep());
        }
        let mut obj = jaq_json::Map::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if self.0 + 1 >= MAX_PARSING_DEPTH {
                return Err(deep());
            }
            let value = map.next_value_seed(Stack(self.0 + 2))?;
            // An existing key keeps its place and takes the new value.
            obj.insert(Val::utf8_str(key.as_bytes().to_vec()), value);
        }
        Ok(Val::obj(obj))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nest(open: &str, close: &str, n: usize) -> String {
        format!("{}1{}", open.repeat(n), close.repeat(n))
    }

    #[test]
    fn depth_is_jq_1_6_s() {
        // Each limit found with `jq -c .` (jq 1.6): 256 arrays parse, 257
        // do not; an object with a key takes two entries.
        for (open, close, ok) in [
            ("[", "]", 256),
            ("{\"a\":", "}", 128),
            ("[{\"a\":", "}]", 85),
        ] {
            let fits = nest(open, close, ok);
            let over = nest(open, close, ok + 1);
            assert!(parse(fits.as_bytes()).is_ok(), "{open} x{ok}");
            assert!(!too_deep(fits.as_bytes()), "{open} x{ok}");
            assert_eq!(
                parse(over.as_bytes()),
                Err(ReadError::Deep),
                "{open} x{}",
                ok + 1
            );
            assert!(too_deep(over.as_bytes()), "{open} x{}", ok + 1);
        }
        // Siblings do not add up, and brackets in strings do not count.
        let wide = format!("[{}]", vec!["[[1]]"; 300].join(","));
        assert!(parse(wide.as_bytes()).is_ok() && !too_deep(wide.as_bytes()));
        let text = format!("{{\"a\":\"{}\"}}", "[{:".repeat(300));
        assert!(parse(text.as_bytes()).is_ok() && !too_deep(text.as_bytes()));
        let million = nest("[", "]", 1_000_000);
        assert_eq!(parse(million.as_bytes()), Err(ReadError::Deep));
    }

    #[test]
    fn numbers_are_jq_1_6_doubles() {
        let v = parse(
            br#"[1, 1.0, -0, -0.0, 100000000000000000001, 9007199254740993, 1.5, 1e1000, 12e-1]"#,
        )
        .unwrap();
        let Val::Arr(items) = v else { panic!() };
        let want = [
            Num::Int(1),
            Num::Int(1),
            Num::Float(-0.0),
            Num::Float(-0.0),
            Num::Float(1e20),
            Num::Int(9007199254740992),
            Num::Float(1.5),
            Num::Float(f64::INFINITY),
            Num::Float(1.2),
        ];
        for (got, want) in items.iter().zip(want) {
            let Val::Num(got) = got else {
                panic!("{got:?}")
            };
            assert_eq!(format!("{got:?}"), format!("{want:?}"));
        }
    }

    #[test]
    fn lone_surrogates_read_as_jq_1_6_reads_them() {
        // Checked with `jq -c .` (jq 1.6): a lone low surrogate is U+FFFD,
        // in a value and in a key; a lone high one is refused.
        let v = parse(br#"{"s":"x\udc00y","\udfff":"\udc00\udc00","p":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(
            super::super::message::dump(&v),
            "{\"s\":\"x\u{fffd}y\",\"\u{fffd}\":\"\u{fffd}\u{fffd}\",\"p\":\"\u{1f600}\"}"
        );
        for refused in [
            &br#"{"s":"\ud800"}"#[..],
            br#"["\ud800\u0041"]"#,
            br#""\udbff\ud800""#,
        ] {
            assert_eq!(
                parse(refused),
                Err(ReadError::Bad(
                    "Invalid \\uXXXX\\uXXXX surrogate pair escape".into()
                )),
                "{}",
                String::from_utf8_lossy(refused)
            );
            assert!(high_surrogate(refused));
        }
        assert!(!high_surrogate(br#"{"s":"x\udc00y","t":"\u00e9"}"#));
    }

    #[test]
    fn a_duplicate_key_keeps_its_first_place_and_last_value() {
        let v = parse(br#"{"k":1,"a":{"x":1,"x":[2]},"k":"last"}"#).unwrap();
        assert_eq!(
            super::super::message::dump(&v),
            r#"{"k":"last","a":{"x":[2]}}"#
        );
    }
}
