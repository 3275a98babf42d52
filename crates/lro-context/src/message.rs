//! OpenAI-style chat messages, kept as the JSON they came as.
//!
//! A message is `{role, content, tool_calls?, tool_call_id?, name?}`;
//! `content` is a string, an array of parts (`{"type": "text", "text"}` and
//! others) or null. Tool calls come in OpenAI's shape
//! (`{id, type, function: {name, arguments}}`) or the flat one of ReMe's
//! examples (`{id, name, arguments}`). Every field, known or not, is kept as
//! it was: only the content of a changed message is rewritten.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::ContextError;

/// One message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message(Map<String, Value>);

/// Roles a message may have.
const ROLES: [&str; 6] = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

impl Message {
    /// A message with `role` and text `content`.
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        let mut m = Map::new();
        m.insert("role".to_owned(), role.into());
        m.insert("content".to_owned(), Value::String(content.into()));
        Self(m)
    }

    /// Checks and wraps the JSON of message `index`.
    pub(crate) fn parse(index: usize, value: Value) -> Result<Self, ContextError> {
        let bad = |reason: &str| ContextError::Message {
            index,
            reason: reason.to_owned(),
        };
        let Value::Object(map) = value else {
            return Err(bad("a message must be a JSON object"));
        };
        let role = map
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("`role` must be a string"))?;
        if !ROLES.contains(&role) {
            return Err(bad(&format!("unknown role `{role}`")));
        }
        match map.get("content") {
            None | Some(Value::Null | Value::String(_) | Value::Array(_)) => {}
            Some(_) => return Err(bad("`content` must be a string, an array of parts or null")),
        }
        if role == "tool" && !map.get("tool_call_id").is_some_and(Value::is_string) {
            return Err(bad("a tool message needs a string `tool_call_id`"));
        }
        if let Some(calls) = map.get("tool_calls") {
            let calls = calls
                .as_array()
                .ok_or_else(|| bad("`tool_calls` must be an array"))?;
            for call in calls {
                if !call.get("id").is_some_and(Value::is_string) {
                    return Err(bad("every tool call needs a string `id`"));
                }
            }
        }
        Ok(Self(map))
    }

    /// The JSON object.
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.0
    }

    /// Into the JSON value.
    pub fn into_json(self) -> Value {
        Value::Object(self.0)
    }

    /// The role.
    pub fn role(&self) -> &str {
        self.0
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Whether this is a system (or developer) message, always preserved.
    pub fn is_system(&self) -> bool {
        matches!(self.role(), "system" | "developer")
    }

    /// The id of the call a tool message answers.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.0.get("tool_call_id").and_then(Value::as_str)
    }

    /// The ids of the tool calls an assistant message makes.
    pub fn tool_call_ids(&self) -> Vec<&str> {
        self.tool_calls()
            .filter_map(|c| c.get("id").and_then(Value::as_str))
            .collect()
    }

    fn tool_calls(&self) -> impl Iterator<Item = &Value> {
        self.0
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    }

    /// The name of tool call `id`, in either shape.
    pub fn tool_call_name(&self, id: &str) -> Option<&str> {
        let call = self
            .tool_calls()
            .find(|c| c.get("id").and_then(Value::as_str) == Some(id))?;
        call.get("function")
            .and_then(|f| f.get("name"))
            .or_else(|| call.get("name"))
            .and_then(Value::as_str)
    }

    /// The arguments of every tool call, as text (a JSON string in OpenAI's
    /// shape, any JSON in the flat one).
    pub(crate) fn tool_call_texts(&self) -> Vec<String> {
        self.tool_calls()
            .map(|c| {
                let name = c
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .or_else(|| c.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let args = c
                    .get("function")
                    .and_then(|f| f.get("arguments"))
                    .or_else(|| c.get("arguments"));
                let args = match args {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                format!("{name}({args})")
            })
            .collect()
    }

    /// The content as text: the string, or the text parts joined by
    /// newlines.
    pub fn text(&self) -> String {
        self.text_ref().into_owned()
    }

    /// [`Message::text`], borrowed when the content is a string: tool
    /// results are large, and compaction reads each several times.
    pub(crate) fn text_ref(&self) -> Cow<'_, str> {
        match self.0.get("content") {
            Some(Value::String(s)) => Cow::Borrowed(s),
            Some(Value::Array(parts)) => Cow::Owned(
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => Cow::Borrowed(""),
        }
    }

    /// What token counts cover, in order: the content's text and any
    /// `reasoning_content`.
    pub(crate) fn counted_parts(&self) -> [Cow<'_, str>; 2] {
        let reasoning = self.0.get("reasoning_content").and_then(Value::as_str);
        [self.text_ref(), Cow::Borrowed(reasoning.unwrap_or(""))]
    }

    /// The content exactly as it came, for storing: the string itself, or the
    /// JSON of an array of parts (nothing is lost either way).
    pub(crate) fn stored_content(&self) -> Cow<'_, str> {
        match self.0.get("content") {
            Some(Value::String(s)) => Cow::Borrowed(s),
            Some(v) => Cow::Owned(v.to_string()),
            None => Cow::Borrowed(""),
        }
    }

    /// Replaces the content with text, and returns the content it had.
    pub(crate) fn set_content(&mut self, text: String) -> Option<Value> {
        self.0.insert("content".to_owned(), Value::String(text))
    }
}

/// Parses a `messages` array.
///
/// # Errors
///
/// [`ContextError::Message`] naming the first bad message, or
/// [`ContextError::Field`] when `messages` is not an array.
pub fn parse_messages(value: Value) -> Result<Vec<Message>, ContextError> {
    let Value::Array(items) = value else {
        return Err(ContextError::field(
            "messages",
            "must be an array of messages",
        ));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| Message::parse(i, v))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn both_tool_call_shapes() {
        let msgs = parse_messages(json!([
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "web_search", "arguments": "{\"q\":1}"}},
                {"id": "b", "name": "read", "arguments": {"path": "/x"}}
            ]},
        ]))
        .unwrap();
        assert_eq!(msgs[0].tool_call_ids(), ["a", "b"]);
        assert_eq!(msgs[0].tool_call_name("a"), Some("web_search"));
        assert_eq!(msgs[0].tool_call_name("b"), Some("read"));
        assert_eq!(
            msgs[0].tool_call_texts(),
            ["web_search({\"q\":1})", "read({\"path\":\"/x\"})"]
        );
    }

    #[test]
    fn bad_messages_name_their_index_and_field() {
        let err = parse_messages(
            json!([{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}]),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "`messages[1]`: a tool message needs a string `tool_call_id`"
        );
        assert!(parse_messages(json!([{"role": "robot"}])).is_err());
        assert!(parse_messages(json!([{"role": "user", "content": 3}])).is_err());
        assert!(
            parse_messages(json!({"role": "user"}))
                .unwrap_err()
                .to_string()
                .starts_with("`messages`")
        );
    }

    #[test]
    fn parts_are_text_joined_and_stored_whole() {
        let m = Message::parse(0, json!({"role": "tool", "tool_call_id": "c", "extra": 1,
            "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}, {"type": "text", "text": "b"}]}))
        .unwrap();
        assert_eq!(m.text(), "a\nb");
        assert!(m.stored_content().contains("image_url"));
        assert_eq!(m.as_json()["extra"], 1);
    }
}
