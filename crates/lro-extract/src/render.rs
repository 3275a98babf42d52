//! One rendering of a JSON value, whichever path produced it.
//!
//! The fast paths copy bytes out of the file, projection and jaq build
//! values, the structured mode holds `serde_json` values: all of them print
//! through these functions, so the same value always comes out as the same
//! bytes, and those bytes are what `jq -c` (1.6) prints:
//!
//! - strings as UTF-8, escaping only `"`, `\`, control characters and DEL
//!   (short escapes where JSON has them, else `\u00XX`);
//! - integers up to 2^53 as they are;
//! - every other number through `f64`, printed as jq 1.6 does: the shortest
//!   digits that round-trip, positional unless the exponent is below -4 or
//!   far beyond the digits (`1500`, `0.0001`, `1e-05`, `1e+17`).
//!
//! Bytes copied from a file are kept as they are when they are already in
//! that form (the common case, checked by one scan), rewritten token by
//! token when only spellings differ, so key order and every other byte stay
//! as jq prints them, and read and printed again when an object repeats a
//! key, which jq keeps once.

use serde_json::Value;

/// Writes `s` as a JSON string the way jq does.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let text = String::from_utf8_lossy(s);
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f | 0x7f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(short);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Writes a double the way jq 1.6 prints numbers.
pub(crate) fn write_f64(out: &mut Vec<u8>, f: f64) {
    if f.is_nan() {
        out.extend_from_slice(b"null");
        return;
    }
    if f.is_sign_negative() {
        out.push(b'-');
    }
    let f = f.abs();
    if f.is_infinite() {
        out.extend_from_slice(b"1.7976931348623157e+308");
        return;
    }
    if f == 0.0 {
        out.push(b'0');
        return;
    }
    // Rust's `{:e}` gives the shortest digits that round-trip. Where two
    // spellings of that length are as near (1446448944166516.25 lies
    // halfway between …16.2 and …16.3), jq 1.6's dtoa takes the even last
    // digit, as Rust's fixed-precision formatting does; `{:e}` takes the
    // upper one.
    let shortest = format!("{f:e}");
    let digits = shortest
        .split('e')
        .next()
        .map_or(1, |m| m.bytes().filter(u8::is_ascii_digit).count());
    let even = format!("{:.*e}", digits.saturating_sub(1), f);
    let sci = if even.parse::<f64>() == Ok(f) {
        even
    } else {
        shortest
    };
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let n = digits.len() as i32;
    let point = exp + 1;
    if point <= -4 || point > n + 15 {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let e = point - 1;
        out.extend_from_slice(
            format!("e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()).as_bytes(),
        );
    } else if point <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-point) as usize));
        out.extend_from_slice(&digits);
    } else if point >= n {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', (point - n) as usize));
    } else {
        out.extend_from_slice(&digits[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[point as usize..]);
    }
}

/// Writes a JSON number given as text (a literal from a file or from jaq).
pub(crate) fn write_number_text(out: &mut Vec<u8>, text: &[u8]) {
    if is_plain_integer(text) {
        out.extend_from_slice(text);
        return;
    }
    match std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
    {
        Some(f) => write_f64(out, f),
        None => out.extend_from_slice(b"null"),
    }
}

/// An integer literal without fraction or exponent that a double holds
/// exactly (jq prints a larger one through its double).
fn is_plain_integer(text: &[u8]) -> bool {
    let Ok(t) = std::str::from_utf8(text) else {
        return false;
    };
    !t.contains(['.', 'e', 'E']) && t.parse::<i64>().is_ok_and(|i| i.unsigned_abs() <= 1 << 53)
}

/// A decimal that jq prints exactly as written, recognised without
/// formatting it: `-?D.D` with no trailing zero, at most 15 significant
/// digits (which always round-trip through a double) and fewer than four
/// zeros after `0.` (smaller values print with an exponent).
fn is_plain_decimal(text: &[u8]) -> bool {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    let Some(dot) = digits.iter().position(|&c| c == b'.') else {
        return false;
    };
    let (int, frac) = (&digits[..dot], &digits[dot + 1..]);
    let all_digits = |d: &[u8]| !d.is_empty() && d.iter().all(u8::is_ascii_digit);
    if !all_digits(int) || !all_digits(frac) || frac.ends_with(b"0") {
        return false;
    }
    if int.len() > 1 && int[0] == b'0' {
        return false;
    }
    let significant = if int == b"0" {
        let zeros = frac.iter().take_while(|&&c| c == b'0').count();
        if zeros >= 4 {
            return false;
        }
        frac.len() - zeros
    } else {
        int.len() + frac.len()
    };
    significant <= 15
}

/// Writes a `serde_json` value.
pub(crate) fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) if i.unsigned_abs() <= 1 << 53 => {
                out.extend_from_slice(i.to_string().as_bytes())
            }
            (_, Some(f)) => write_f64(out, f),
            _ => out.extend_from_slice(b"null"),
        },
        Value::String(s) => write_str(out, s.as_bytes()),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k.as_bytes());
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// A `serde_json` value, rendered.
pub(crate) fn to_vec(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(&mut out, v);
    out
}

/// How far JSON text is from what [`write_value`] prints.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// Printed alike.
    Canonical,
    /// Only spellings differ: whitespace, escapes, numbers.
    Respell,
    /// An object repeats a key, or a key may be spelled two ways.
    Reread,
}

/// The [`Form`] of `json`, in one pass.
pub(crate) fn form(json: &[u8]) -> Form {
    // The keys of the open objects, and where each object's keys start.
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    let mut respell = false;
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'"' => {
                let Some((end, canonical)) = string_end(json, i) else {
                    return Form::Respell;
                };
                let colon = json[end..]
                    .iter()
                    .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
                    .is_some_and(|p| json[end + p] == b':');
                if colon && !starts.is_empty() {
                    if !canonical {
                        // `"a"` and `"\u0061"` are one key.
                        return Form::Reread;
                    }
                    keys.push(&json[i..end]);
                }
                respell |= !canonical;
                i = end;
            }
            b'{' => {
                starts.push(keys.len());
                i += 1;
            }
            b'}' => {
                let start = starts.pop().unwrap_or(0).min(keys.len());
                if repeats(&keys[start..]) {
                    return Form::Reread;
                }
                keys.truncate(start);
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let end = number_end(json, i);
                let token = &json[i..end];
                if !respell && !is_plain_integer(token) && !is_plain_decimal(token) {
                    let mut again = Vec::with_capacity(token.len());
                    write_number_text(&mut again, token);
                    respell = again != token;
                }
                i = end;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                respell = true;
                i += 1;
            }
            _ => i += 1,
        }
    }
    if respell {
        Form::Respell
    } else {
        Form::Canonical
    }
}

/// Whether one object's keys (as spelled, all canonical) repeat one.
fn repeats(keys: &[&[u8]]) -> bool {
    if keys.len() <= 8 {
        return keys
            .iter()
            .enumerate()
            .any(|(i, k)| keys[i + 1..].contains(k));
    }
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    sorted.windows(2).any(|w| w[0] == w[1])
}

/// The end of the string token starting at `start` (past its closing
/// quote), and whether its escapes are the ones [`write_str`] writes.
fn string_end(json: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut canonical = true;
    let mut i = start + 1;
    loop {
        // Only these bytes matter; long strings are skipped in chunks.
        i += memchr::memchr3(b'"', b'\\', 0x7f, json.get(i..)?)?;
        match json[i] {
            b'"' => return Some((i + 1, canonical)),
            b'\\' => {
                let esc = *json.get(i + 1)?;
                match esc {
                    b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f' => i += 2,
                    b'u' => {
                        let hex = json.get(i + 2..i + 6)?;
                        let code = std::str::from_utf8(hex)
                            .ok()
                            .and_then(|h| u32::from_str_radix(h, 16).ok())?;
                        let short = matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
                        let lower = hex.iter().all(|c| !c.is_ascii_uppercase());
                        if !((code < 0x20 && !short) || code == 0x7f) || !lower {
                            canonical = false;
                        }
                        i += 6;
                    }
                    _ => {
                        canonical = false;
                        i += 2;
                    }
                }
            }
            _ => {
                // DEL, which jq escapes.
                canonical = false;
                i += 1;
            }
        }
    }
}

fn number_end(json: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < json.len() && matches!(json[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
        i += 1;
    }
    i
}

pub(crate) fn rewrite(json: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'"' => {
                let (end, canonical) = string_end(json, i)?;
                if canonical {
                    out.extend_from_slice(&json[i..end]);
                } else {
                    let s: String = serde_json::from_slice(&json[i..end]).ok()?;
                    write_str(out, s.as_bytes());
                }
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let end = number_end(json, i);
                write_number_text(out, &json[i..end]);
                i = end;
            }
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    use crate::jq::canonical;
    use serde_json::json;

    fn f(x: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, x);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers_print_as_jq_1_6_prints_them() {
        // Each pair checked against `jq -c .` (jq 1.6).
        for (x, jq) in [
            (1e100, "1e+100"),
            (1.5e-7, "1.5e-07"),
            (12345678901234567890.0, "12345678901234567000"),
            (1e17, "1e+17"),
            (1e16, "1e+16"),
            (123456789012345678.0, "123456789012345680"),
            (-1.5e3, "-1500"),
            (0.1, "0.1"),
            (1.0, "1"),
            (2.71, "2.71"),
            (1e20, "1e+20"),
            (1e7, "10000000"),
            (0.0001, "0.0001"),
            (1e-5, "1e-05"),
            (0.000123, "0.000123"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (-0.0, "-0"),
            (0.0, "0"),
            // Halfway between two shortest spellings: the even one.
            (1_446_448_944_166_516.2, "1446448944166516.2"),
            (1_446_448_944_166_516.8, "1446448944166516.8"),
        ] {
            assert_eq!(f(x), jq, "{x}");
        }
        assert_eq!(f(f64::NAN), "null");
        assert_eq!(f(f64::NEG_INFINITY), "-1.7976931348623157e+308");
    }

    #[test]
    fn one_rendering_for_file_bytes_and_values() {
        let file = br#"{"id": "caf\u00e9", "n":-1.5e3,"big":12345678901234567890,"i":42,"s":"a\/b\u0001\u007F"}"#;
        let canon = canonical(file);
        assert_eq!(
            std::str::from_utf8(&canon).unwrap(),
            r#"{"id":"café","n":-1500,"big":12345678901234567000,"i":42,"s":"a/b\u0001\u007f"}"#
        );
        // An integer past 2^53 prints through its double, as in jq 1.6;
        // the value route gives the same bytes.
        let v = json!({"id": "café", "n": -1500.0, "big": 12345678901234567890_u64, "i": 42, "s": "a/b\u{1}\u{7f}"});
        let mut from_value = Vec::new();
        write_value(&mut from_value, &v);
        let mut sorted: Vec<u8> = Vec::new();
        write_value(
            &mut sorted,
            &serde_json::from_slice::<Value>(&canon).unwrap(),
        );
        assert_eq!(from_value, sorted);
        // A repeated key, at any depth or spelled another way, is printed
        // once: the last value at the first key's place, as jq keeps it.
        for (file, jq) in [
            (
                r#"{"k":1,"a":{"x":1,"y":[{"z":1,"z":2}],"x":2},"k":3}"#,
                r#"{"k":3,"a":{"x":2,"y":[{"z":2}]}}"#,
            ),
            (r#"{"a":1, "\u0061":2}"#, r#"{"a":2}"#),
            (r#"[{"a":1},{"a":2}]"#, r#"[{"a":1},{"a":2}]"#),
        ] {
            assert_eq!(
                std::str::from_utf8(&canonical(file.as_bytes())).unwrap(),
                jq
            );
        }
        let fields: Vec<String> = (0..40).map(|i| format!("\"f{i}\":{i}")).collect();
        let unique = format!("{{{}}}", fields.join(","));
        let repeated = format!("{{{},\"f3\":0}}", fields.join(","));
        assert_eq!(form(unique.as_bytes()), Form::Canonical);
        assert_eq!(form(repeated.as_bytes()), Form::Reread);
        // Already canonical text is not copied.
        assert!(matches!(
            canonical(br#"{"a":[1,0.5,"x\n"]}"#),
            Cow::Borrowed(_)
        ));
        assert!(matches!(canonical(b"1500.0"), Cow::Owned(_)));
        // The shortcut for plain decimals agrees with formatting them.
        for text in [
            "0.85",
            "-12.5",
            "0.0001",
            "0.00001",
            "0.10",
            "1.0",
            "01.5",
            "123456789.123456",
            "0.123456789012345",
        ] {
            let mut formatted = Vec::new();
            write_number_text(&mut formatted, text.as_bytes());
            if is_plain_decimal(text.as_bytes()) {
                assert_eq!(formatted, text.as_bytes(), "{text}");
            }
        }
        assert!(
            is_plain_decimal(b"0.85") && !is_plain_decimal(b"0.00001") && !is_plain_decimal(b"1.0")
        );
    }
}
