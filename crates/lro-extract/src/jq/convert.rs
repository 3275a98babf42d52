//! jaq values to JSON text (jq 1.6's format, through [`render`]) and to
//! `serde_json` values.

use std::borrow::Cow;

use jaq_json::Val;
use serde_json::Value;

use super::originals::{NoOriginals, Originals};
use crate::{ExtractError, render};

/// Deepest value nesting rendered or converted.
pub(crate) const MAX_DEPTH: usize = 10_000;

fn too_deep() -> ExtractError {
    ExtractError::Runtime {
        line: None,
        message: format!("result nested deeper than {MAX_DEPTH} levels"),
    }
}

/// Writes `v` as compact JSON, the way `jq -c` does, through the one
/// rendering of [`render`]. Returns `Ok(false)` as soon as more than `cap`
/// bytes were written.
pub(crate) fn write_json(
    out: &mut Vec<u8>,
    v: &Val,
    depth: usize,
    cap: usize,
    orig: &dyn Originals,
) -> Result<bool, ExtractError> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    if let Some(line) = orig.original(v) {
        out.extend_from_slice(&canonical(line));
        return Ok(out.len() <= cap);
    }
    match v {
        Val::Null => out.extend_from_slice(b"null"),
        Val::Bool(true) => out.extend_from_slice(b"true"),
        Val::Bool(false) => out.extend_from_slice(b"false"),
        Val::Num(n) => write_num(out, n),
        Val::TStr(s) | Val::BStr(s) => render::write_str(out, s),
        Val::Arr(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if !write_json(out, item, depth + 1, cap, orig)? {
                    return Ok(false);
                }
            }
            out.push(b']');
        }
        Val::Obj(map) => {
            out.push(b'{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match k {
                    Val::TStr(s) | Val::BStr(s) => render::write_str(out, s),
                    other => {
                        // jaq allows non-string keys; JSON does not.
                        let mut key = Vec::new();
                        write_json(&mut key, other, depth + 1, cap, &NoOriginals)?;
                        render::write_str(out, &key);
                    }
                }
                out.push(b':');
                if !write_json(out, item, depth + 1, cap, orig)? {
                    return Ok(false);
                }
            }
            out.push(b'}');
        }
    }
    Ok(out.len() <= cap)
}

pub(super) fn write_num(out: &mut Vec<u8>, n: &jaq_json::Num) {
    use jaq_json::Num;
    match n {
        // Integer arithmetic past 2^53 is exact in jaq; jq holds a double.
        Num::Int(i) if super::read::exact(*i) => out.extend_from_slice(i.to_string().as_bytes()),
        Num::Float(f) => render::write_f64(out, *f),
        // Big integers and decimal literals of a filter: through their
        // double, as jq 1.6 reads them.
        other => render::write_f64(out, other.to_string().parse().unwrap_or(f64::NAN)),
    }
}

/// A record's text as jq 1.6 prints it once read (one key of each
/// repeated key kept); `None` when jq does not read it.
pub(crate) fn reprint(line: &[u8]) -> Option<Vec<u8>> {
    let v = super::read::parse(line).ok()?;
    let mut out = Vec::with_capacity(line.len());
    write_json(&mut out, &v, 0, usize::MAX, &NoOriginals).ok()?;
    Some(out)
}

/// A record as jq 1.6 reads it, as a `serde_json` value; jq's message
/// when it does not read it.
pub(crate) fn record_value(line: &[u8]) -> Result<Value, String> {
    let v = super::read::parse(line).map_err(|e| match e {
        super::read::ReadError::Bad(message) => message,
        super::read::ReadError::Deep => "nested deeper than jq 1.6 reads".to_owned(),
    })?;
    to_value(&v, 0, &NoOriginals).map_err(|e| e.to_string())
}

/// Converts a jaq value into a `serde_json` value.
pub(crate) fn to_value(v: &Val, depth: usize, orig: &dyn Originals) -> Result<Value, ExtractError> {
    use jaq_json::Num;
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    if let Some(value) = orig
        .original(v)
        .and_then(|line| serde_json::from_slice(line).ok())
    {
        return Ok(value);
    }
    Ok(match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Num(Num::Int(i)) if super::read::exact(*i) => Value::from(*i as i64),
        // An infinity is the largest double, as jq 1.6 holds and prints it.
        Val::Num(Num::Float(f)) if f.is_infinite() => Value::from(f64::MAX.copysign(*f)),
        Val::Num(Num::Float(f)) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        // Past 2^53, big integers and decimal literals: the double jq holds.
        Val::Num(n) => n
            .to_string()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Val::TStr(s) | Val::BStr(s) => Value::String(String::from_utf8_lossy(s).into_owned()),
        Val::Arr(items) => Value::Array(
            items
                .iter()
                .map(|i| to_value(i, depth + 1, orig))
                .collect::<Result<_, _>>()?,
        ),
        Val::Obj(map) => {
            let mut obj = serde_json::Map::new();
            for (k, item) in map.iter() {
                let key = match k {
                    Val::TStr(s) | Val::BStr(s) => String::from_utf8_lossy(s).into_owned(),
                    other => other.to_string(),
                };
                obj.insert(key, to_value(item, depth + 1, orig)?);
            }
            Value::Object(obj)
        }
    })
}

/// Converts a `serde_json` value into a jaq value.
/// JSON text copied from a file, in the one rendering: borrowed when it
/// already is, rewritten token by token when only spellings differ, read
/// and printed again when an object repeats a key (jq keeps one, the last
/// value at the first key's place). Text that is not valid JSON is
/// returned as it is (the caller only passes records jq reads).
pub(crate) fn canonical(json: &[u8]) -> Cow<'_, [u8]> {
    match render::form(json) {
        render::Form::Canonical => Cow::Borrowed(json),
        render::Form::Respell => {
            let mut out = Vec::with_capacity(json.len());
            match render::rewrite(json, &mut out) {
                Some(()) => Cow::Owned(out),
                // A lone surrogate escape, which serde refuses and jq reads.
                None => reprint(json).map_or(Cow::Borrowed(json), Cow::Owned),
            }
        }
        render::Form::Reread => reprint(json).map_or(Cow::Borrowed(json), Cow::Owned),
    }
}

#[cfg(test)]
pub(crate) fn from_value(v: &Value) -> Val {
    match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => super::read::parse(n.to_string().as_bytes()).unwrap_or(Val::Null),
        Value::String(s) => Val::from(s.clone()),
        Value::Array(a) => a.iter().map(from_value).collect(),
        Value::Object(o) => Val::obj(
            o.iter()
                .map(|(k, v)| (Val::from(k.clone()), from_value(v)))
                .collect(),
        ),
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::jq::eval_values;
    use serde_json::json;

    #[test]
    fn writes_jq_compatible_json() {
        let mut out = Vec::new();
        let v = from_value(&json!({"a": [1, 2.5, "x\"y\n\u{1}"], "b": null, "é": true}));
        assert!(write_json(&mut out, &v, 0, usize::MAX, &NoOriginals).unwrap());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":[1,2.5,"x\"y\n\u0001"],"b":null,"é":true}"#
        );
        let mut out = Vec::new();
        let nan = eval_values("[nan, infinite]", &[json!(null)]).unwrap();
        assert_eq!(nan, [json!([null, f64::MAX])]);
        let v = jaq_json::read::parse_single(b"[1e1000]").unwrap();
        write_json(&mut out, &v, 0, usize::MAX, &NoOriginals).unwrap();
        assert!(!out.is_empty());
    }

    #[test]
    fn cap_stops_rendering_early() {
        let v = from_value(&json!((0..1000).collect::<Vec<_>>()));
        let mut out = Vec::new();
        assert!(!write_json(&mut out, &v, 0, 50, &NoOriginals).unwrap());
        assert!(out.len() < 100, "{}", out.len());
    }
}
