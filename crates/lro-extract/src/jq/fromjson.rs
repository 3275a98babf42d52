//! JSON text as jq 1.6's `fromjson` and `tonumber` read it: the value, or
//! jq's error in its words (`Invalid numeric literal at EOF at line 1,
//! column 3 (while parsing 'abc')`).
//!
//! jq's parser reads a byte at a time: bytes that are neither blanks, nor
//! `"`, nor one of `[{:,]}` gather into a token, read when the next such
//! byte (or the end) comes: `t…`, `f…` and `n…` must be `true`, `false` or
//! `null`, anything else is a number as C's `strtod` reads it (`+1`, `.5`,
//! `01`, `inf` and `NaN` too). Errors name the line and the column of the
//! byte they were found at. This is a reader written to that description,
//! checked against jq 1.6 by `tests/jq_compat.rs`.

use std::rc::Rc;

use jaq_json::Val;

use super::double::number;
use crate::failures::MAX_PARSING_DEPTH;

/// What a string holds for jq 1.6: its one value, or jq's error message.
pub(crate) fn parse(text: &[u8]) -> Result<Val, String> {
    // jq reads the string as a C string: it ends at a NUL.
    let text = text.split(|&b| b == 0).next().unwrap_or_default();
    let shown = String::from_utf8_lossy(text);
    Parser::default()
        .all(text)
        .map_err(|msg| format!("{msg} (while parsing '{shown}')"))
}

/// One open array or object, or an object's key waiting for its value.
enum Open {
    Arr(Vec<Val>),
    Obj(jaq_json::Map),
    Key(Val),
}

#[derive(Default)]
struct Parser {
    stack: Vec<Open>,
    /// The last complete value, not yet placed.
    next: Option<Val>,
    token: Vec<u8>,
    line: usize,
    column: usize,
}

impl Parser {
    /// The one value of `text`.
    fn all(mut self, text: &[u8]) -> Result<Val, String> {
        self.line = 1;
        let (first, rest) = self.value(text)?;
        let Some(first) = first else {
            return Err("Expected JSON value".into());
        };
        match self.value(rest)? {
            (Some(_), _) => Err("Unexpected extra JSON values".into()),
            (None, _) => Ok(first),
        }
    }

    /// Reads on until a top-level value is complete or the text ends.
    fn value<'t>(&mut self, text: &'t [u8]) -> Result<(Option<Val>, &'t [u8]), String> {
        let at = |msg: &str, p: &Self| format!("{msg} at line {}, column {}", p.line, p.column);
        let mut i = 0;
        while i < text.len() {
            let b = text[i];
            self.advance(b);
            match b {
                b'"' => {
                    self.literal().map_err(|m| at(m, self))?;
                    if let Some(v) = self.done() {
                        // The string is the next value's: read it again then.
                        self.column -= 1;
                        return Ok((Some(v), &text[i..]));
                    }
                    let end = string_end(text, i);
                    for &c in &text[i + 1..end.unwrap_or(text.len())] {
                        self.advance(c);
                    }
                    let Some(end) = end else {
                        let (line, column) = (self.line, self.column);
                        return Err(format!(
                            "Unfinished string at EOF at line {line}, column {column}"
                        ));
                    };
                    self.advance(b'"');
                    let s = unescape(&text[i + 1..end]).map_err(|m| at(m, self))?;
                    self.place(s).map_err(|m| at(m, self))?;
                    i = end + 1;
                    if let Some(v) = self.done() {
                        return Ok((Some(v), &text[i..]));
                    }
                    continue;
                }
                b' ' | b'\t' | b'\r' | b'\n' | b'[' | b'{' | b':' | b',' | b']' | b'}' => {
                    self.literal().map_err(|m| at(m, self))?;
                    let done = self.done();
                    if !matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
                        self.structure(b).map_err(|m| at(m, self))?;
                    }
                    if let Some(v) = done.or_else(|| self.done()) {
                        return Ok((Some(v), &text[i + 1..]));
                    }
                }
                _ => self.token.push(b),
            }
            i += 1;
        }
        let at_eof =
            |msg: &str, p: &Self| format!("{msg} at EOF at line {}, column {}", p.line, p.column);
        self.literal().map_err(|m| at_eof(m, self))?;
        if !self.stack.is_empty() {
            return Err(at_eof("Unfinished JSON term", self));
        }
        Ok((self.next.take(), &[]))
    }

    /// Counts a byte's place, as jq's line and column.
    fn advance(&mut self, b: u8) {
        self.column += 1;
        if b == b'\n' {
            self.line += 1;
            self.column = 0;
        }
    }

    /// The complete top-level value, if there is one.
    fn done(&mut self) -> Option<Val> {
        if self.stack.is_empty() {
            self.next.take()
        } else {
            None
        }
    }

    /// A complete value, waiting for what follows it.
    fn place(&mut self, v: Val) -> Result<(), &'static str> {
        if self.next.is_some() {
            return Err("Expected separator between values");
        }
        self.next = Some(v);
        Ok(())
    }

    /// Reads the gathered token, if any: a literal or a number.
    fn literal(&mut self) -> Result<(), &'static str> {
        if self.token.is_empty() {
            return Ok(());
        }
        let token = std::mem::take(&mut self.token);
        let word = match token[0] {
            b't' => Some((&b"true"[..], Val::Bool(true))),
            b'f' => Some((&b"false"[..], Val::Bool(false))),
            b'n' => Some((&b"null"[..], Val::Null)),
            _ => None,
        };
        let v = match word {
            Some((w, v)) if token == w => v,
            Some(_) => return Err("Invalid literal"),
            None => number(strtod(&token).ok_or("Invalid numeric literal")?),
        };
        self.place(v)
    }

    fn structure(&mut self, b: u8) -> Result<(), &'static str> {
        match b {
            b'[' | b'{' => {
                if self.stack.len() >= MAX_PARSING_DEPTH {
                    return Err("Exceeds depth limit for parsing");
                }
                if self.next.is_some() {
                    return Err("Expected separator between values");
                }
                self.stack.push(if b == b'[' {
                    Open::Arr(Vec::new())
                } else {
                    Open::Obj(jaq_json::Map::default())
                });
            }
            b':' => {
                let Some(key) = self.next.take() else {
                    return Err("Expected string key before ':'");
                };
                if !matches!(self.stack.last(), Some(Open::Obj(_))) {
                    self.next = Some(key);
                    return Err("':' not as part of an object");
                }
                if !matches!(key, Val::TStr(_)) {
                    return Err("Object keys must be strings");
                }
                if self.stack.len() >= MAX_PARSING_DEPTH {
                    return Err("Exceeds depth limit for parsing");
                }
                self.stack.push(Open::Key(key));
            }
            b',' => {
                let Some(v) = self.next.take() else {
                    return Err("Expected value before ','");
                };
                match self.stack.pop() {
                    None => return Err("',' not as part of an object or array"),
                    Some(Open::Arr(mut items)) => {
                        items.push(v);
                        self.stack.push(Open::Arr(items));
                    }
                    Some(Open::Key(k)) => self.set(k, v),
                    Some(open @ Open::Obj(_)) => {
                        self.stack.push(open);
                        return Err("Objects must consist of key:value pairs");
                    }
                }
            }
            b']' => {
                let Some(Open::Arr(mut items)) = self.stack.pop() else {
                    return Err("Unmatched ']'");
                };
                match self.next.take() {
                    Some(v) => items.push(v),
                    None if !items.is_empty() => return Err("Expected another array element"),
                    None => {}
                }
                self.next = Some(Val::Arr(Rc::new(items)));
            }
            _ => {
                // '}'
                match self.stack.pop() {
                    None => return Err("Unmatched '}'"),
                    Some(Open::Key(k)) => match self.next.take() {
                        Some(v) => self.set(k, v),
                        None => return Err("Unmatched '}'"),
                    },
                    Some(Open::Obj(o)) if self.next.is_none() => {
                        if !o.is_empty() {
                            return Err("Expected another key-value pair");
                        }
                        self.stack.push(Open::Obj(o));
                    }
                    Some(Open::Obj(_)) => return Err("Objects must consist of key:value pairs"),
                    Some(Open::Arr(_)) => return Err("Unmatched '}'"),
                }
                let Some(Open::Obj(o)) = self.stack.pop() else {
                    unreachable!("an object's key sits on its object")
                };
                self.next = Some(Val::obj(o));
            }
        }
        Ok(())
    }

    /// Sets an object's key, which then waits for `,` or `}`.
    fn set(&mut self, k: Val, v: Val) {
        if let Some(Open::Obj(o)) = self.stack.last_mut() {
            o.insert(k, v);
        }
    }
}

/// Index of the `"` closing the string whose opening `"` is at `i`.
fn string_end(text: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < text.len() {
        match text[j] {
            b'\\' => j += 2,
            b'"' => return Some(j),
            _ => j += 1,
        }
    }
    None
}

/// A string's text between its quotes, unescaped as jq 1.6 does.
fn unescape(raw: &[u8]) -> Result<Val, &'static str> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        i += 1;
        if c != b'\\' {
            if (1..0x1f).contains(&c) {
                return Err(
                    "Invalid string: control characters from U+0000 through U+001F must be escaped",
                );
            }
            out.push(c);
            continue;
        }
        let Some(&e) = raw.get(i) else {
            return Err("Expected escape character at end of string");
        };
        i += 1;
        let plain = match e {
            b'\\' | b'"' | b'/' => e,
            b'b' => 8,
            b'f' => 12,
            b't' => b'\t',
            b'n' => b'\n',
            b'r' => b'\r',
            b'u' => {
                let hex = |at: usize| {
                    raw.get(at..at + 4)
                        .and_then(|h| std::str::from_utf8(h).ok())
                        .and_then(|h| {
                            u32::from_str_radix(h, 16)
                                .ok()
                                .filter(|_| !h.starts_with('+'))
                        })
                };
                if raw.len() < i + 4 {
                    return Err("Invalid \\uXXXX escape");
                }
                let mut code = hex(i).ok_or("Invalid characters in \\uXXXX escape")?;
                i += 4;
                if (0xD800..=0xDBFF).contains(&code) {
                    let low = (raw.get(i..i + 2) == Some(b"\\u"))
                        .then(|| hex(i + 2))
                        .flatten()
                        .filter(|l| (0xDC00..=0xDFFF).contains(l))
                        .ok_or("Invalid \\uXXXX\\uXXXX surrogate pair escape")?;
                    i += 6;
                    code = 0x10000 + (((code - 0xD800) << 10) | (low - 0xDC00));
                }
                let ch = char::from_u32(code).unwrap_or('\u{fffd}');
                out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                continue;
            }
            _ => return Err("Invalid escape"),
        };
        out.push(plain);
    }
    Ok(Val::utf8_str(
        String::from_utf8_lossy(&out).into_owned().into_bytes(),
    ))
}

/// A whole token as C's `strtod` reads it (jq's reader): decimal numbers
/// with an optional sign, `.5` and `1.` too, and `inf`, `infinity` and
/// `nan` in any case; `None` when some of it is left over.
fn strtod(token: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(token).ok()?;
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let lower = unsigned.to_ascii_lowercase();
    if ["inf", "infinity", "nan"].contains(&lower.as_str()) {
        let f = if lower == "nan" {
            f64::NAN
        } else {
            f64::INFINITY
        };
        return Some(if text.starts_with('-') { -f } else { f });
    }
    let (mantissa, exp) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) || int.len() + frac.len() == 0 {
        return None;
    }
    if let Some(exp) = exp {
        let e = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        if e.is_empty() || !digits(e) {
            return None;
        }
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_jq_1_6_s() {
        // Each as `jq -n --arg s TEXT '$s | try fromjson catch .'` (jq 1.6).
        let cases = [
            ("abc", "Invalid numeric literal at EOF at line 1, column 3"),
            ("abc def", "Invalid numeric literal at line 1, column 4"),
            ("nan", "Invalid literal at EOF at line 1, column 3"),
            ("", "Expected JSON value"),
            (" ", "Expected JSON value"),
            ("1 2", "Unexpected extra JSON values"),
            ("{", "Unfinished JSON term at EOF at line 1, column 1"),
            ("\"x", "Unfinished string at EOF at line 1, column 2"),
            ("[1,]", "Expected another array element at line 1, column 4"),
            ("[,1]", "Expected value before ',' at line 1, column 2"),
            (
                "{\"a\"}",
                "Objects must consist of key:value pairs at line 1, column 5",
            ),
            ("{1:2}", "Object keys must be strings at line 1, column 3"),
            ("]", "Unmatched ']' at line 1, column 1"),
            ("1]", "Unmatched ']' at line 1, column 2"),
            (
                "{\"a\":1,}",
                "Expected another key-value pair at line 1, column 8",
            ),
            ("{\"a\":}", "Unmatched '}' at line 1, column 6"),
            (
                "[1 2]",
                "Expected separator between values at line 1, column 5",
            ),
            (
                "{\"a\" 1}",
                "Expected separator between values at line 1, column 7",
            ),
            ("1 x", "Invalid numeric literal at EOF at line 1, column 3"),
            (
                "\"a\"b",
                "Invalid numeric literal at EOF at line 1, column 4",
            ),
            ("1e", "Invalid numeric literal at EOF at line 1, column 2"),
        ];
        let wrong: Vec<_> = cases
            .into_iter()
            .filter_map(|(text, want)| {
                let want = format!("{want} (while parsing '{text}')");
                let got = parse(text.as_bytes());
                (got.as_ref().err() != Some(&want)).then_some((text, got, want))
            })
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn values_are_jq_1_6_s() {
        for (text, want) in [
            ("+1", "1"),
            (".5", "0.5"),
            ("1.", "1"),
            ("[01, -0]", "[1,-0]"),
            (" {\"a\":1,\"a\":[true]} ", "{\"a\":[true]}"),
            ("\"\\u00e9\\ud83d\\ude00\"", "\"é😀\""),
            ("Infinity", "1.7976931348623157e+308"),
            ("NaN", "null"),
        ] {
            let v = parse(text.as_bytes()).unwrap();
            assert_eq!(super::super::message::dump(&v), want, "{text}");
        }
    }
}
