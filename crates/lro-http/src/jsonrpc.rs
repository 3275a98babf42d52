//! Whether a body is one JSON-RPC 2.0 message in the shapes MCP's schema
//! gives them: a request (`method`, an `id` that is a string or an
//! integer), a notification (`method`, no `id`), a response (`result`, an
//! `id`) or an error (`error` with an integer `code` and a string
//! `message`, an `id` or none); `"jsonrpc": "2.0"` in each, `params` an
//! object when present (or null, which decoders take as absent).
//!
//! The MCP streamable-HTTP transport takes one message per `POST`: a batch
//! (revision 2025-03-26 allowed arrays) is refused too. The body is read in
//! one pass that keeps no value bigger than the envelope's small fields, so
//! large `params` or `result` cost what the syntax check alone did.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Why `body` is not one JSON-RPC message (`Ok(Err(why))`), or `Ok(Ok(()))`
/// when it is one.
///
/// # Errors
///
/// The syntax error when `body` is not JSON at all.
pub(crate) fn check(body: &[u8]) -> Result<Result<(), &'static str>, serde_json::Error> {
    Ok(match serde_json::from_slice::<Top>(body)? {
        Top::Message(fields) => fields.check(),
        Top::Array { empty: true } => Err("an empty array is not a message"),
        Top::Array { empty: false } => {
            Err("a batch (an array of messages) is not served: send one message per request")
        }
        Top::Other => Err("a message is a JSON object"),
    })
}

/// The body's top level, read without keeping its large parts.
enum Top {
    Message(Box<Fields>),
    Array { empty: bool },
    Other,
}

/// The envelope's members; `params` and `result` only as far as needed.
#[derive(Default)]
struct Fields {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Kind>,
    result: bool,
    error: Option<Value>,
}

impl Fields {
    fn check(&self) -> Result<(), &'static str> {
        if self.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
            return Err("\"jsonrpc\" must be \"2.0\"");
        }
        match (&self.method, self.result, &self.error) {
            (Some(method), false, None) => {
                if !method.is_string() {
                    return Err("\"method\" must be a string");
                }
                if self.id.as_ref().is_some_and(|id| !is_id(id)) {
                    return Err("a request's \"id\" must be a string or an integer");
                }
                if self.params == Some(Kind::Other) {
                    return Err("\"params\" must be an object");
                }
                Ok(())
            }
            (None, true, None) => match &self.id {
                Some(id) if is_id(id) => Ok(()),
                _ => Err("a response's \"id\" must be a string or an integer"),
            },
            (None, false, Some(error)) => {
                if self
                    .id
                    .as_ref()
                    .is_some_and(|id| !id.is_null() && !is_id(id))
                {
                    return Err("an error's \"id\" must be a string, an integer or null");
                }
                let code = error.get("code").is_some_and(Value::is_i64);
                let message = error.get("message").is_some_and(Value::is_string);
                if !(code && message) {
                    return Err(
                        "\"error\" must be an object with an integer \"code\" and a \
                                string \"message\"",
                    );
                }
                Ok(())
            }
            _ => Err("a message has exactly one of \"method\", \"result\" and \"error\""),
        }
    }
}

/// A request id as MCP has it: a string or an integer, never null.
fn is_id(id: &Value) -> bool {
    id.is_string() || id.is_i64()
}

impl<'de> Deserialize<'de> for Top {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut fields = Fields::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "jsonrpc" => fields.jsonrpc = Some(map.next_value()?),
                "id" => fields.id = Some(map.next_value()?),
                "method" => fields.method = Some(map.next_value()?),
                "params" => fields.params = Some(map.next_value()?),
                "error" => fields.error = Some(map.next_value()?),
                "result" => {
                    map.next_value::<IgnoredAny>()?;
                    fields.result = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Top::Message(Box::new(fields)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Top, A::Error> {
        let n = skip_seq(seq)?;
        Ok(Top::Array { empty: n == 0 })
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Top, E> {
        Ok(Top::Other)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Top, E> {
        Ok(Top::Other)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Top, E> {
        Ok(Top::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Top, E> {
        Ok(Top::Other)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Top, E> {
        Ok(Top::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Top, E> {
        Ok(Top::Other)
    }
}

/// Reads a sequence to its end; returns its length.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<usize, A::Error> {
    let mut n = 0;
    while seq.next_element::<IgnoredAny>()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// What `params` is, its content skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Null,
    Other,
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Kind::Object)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Kind, A::Error> {
        skip_seq(seq)?;
        Ok(Kind::Other)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Kind, E> {
        Ok(Kind::Other)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Kind, E> {
        Ok(Kind::Other)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Kind, E> {
        Ok(Kind::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Kind, E> {
        Ok(Kind::Other)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Kind, E> {
        Ok(Kind::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(body: &str) -> Result<(), &'static str> {
        check(body.as_bytes()).expect("JSON")
    }

    #[test]
    fn the_four_message_shapes_pass() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"big":[1,2,3]}}}"#,
            r#"{"jsonrpc":"2.0","id":-3,"method":"ping","params":null}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no","data":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}"#,
            r#"{"method":"ping","extra":{"a":[]},"jsonrpc":"2.0","id":7}"#,
        ] {
            assert_eq!(verdict(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn json_that_is_no_message_is_named() {
        for (body, why) in [
            ("[]", "empty array"),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, "batch"),
            ("42", "JSON object"),
            ("\"x\"", "JSON object"),
            ("null", "JSON object"),
            (r#"{"foo":1}"#, "\"jsonrpc\""),
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "\"jsonrpc\""),
            (r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#, "\"jsonrpc\""),
            (r#"{"jsonrpc":"2.0","id":1}"#, "exactly one"),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#,
                "exactly one",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
                "exactly one",
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, "\"method\""),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                "request's \"id\"",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                "request's \"id\"",
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
                "request's \"id\"",
            ),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
                "request's \"id\"",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#,
                "\"params\"",
            ),
            (r#"{"jsonrpc":"2.0","result":{}}"#, "response's \"id\""),
            (
                r#"{"jsonrpc":"2.0","id":[1],"error":{"code":1,"message":"x"}}"#,
                "error's \"id\"",
            ),
            (r#"{"jsonrpc":"2.0","id":1,"error":5}"#, "\"error\""),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}"#,
                "\"error\"",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
                "\"error\"",
            ),
        ] {
            let got = verdict(body).expect_err(body);
            assert!(got.contains(why), "{body}: {got}");
        }
    }

    #[test]
    fn broken_json_is_a_syntax_error_wherever_it_breaks() {
        for bad in [
            "{not json",
            r#"{"jsonrpc":"2.0","id":1,"#,
            r#"[1, 2"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"} trailing"#,
        ] {
            assert!(check(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
