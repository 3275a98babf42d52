//! The calls the auditor makes: the spec's tools the server lists, or the
//! ones named with `--probe`. Tools have side effects, so nothing else is
//! ever called.

use std::{fmt, str::FromStr};

use rmcp::model::Tool;
use serde_json::{Map, Value};

/// The spec's tools LRO applies to (spec 001, "LRO applies to the
/// following MCP tools"), with the operation each names its files after.
pub(crate) const SPEC_TOOLS: [(&str, &str); 4] = [
    ("list_memories", "list"),
    ("recall_memories", "recall"),
    ("search_memories", "search"),
    ("inject_context", "inject"),
];

/// The detail levels, in order.
pub(crate) const DETAILS: [&str; 3] = ["light", "medium", "full"];

/// What the default probes pass for a required text argument (`query`):
/// a word every memory corpus is likely to hold.
const DEFAULT_QUERY: &str = "the";

/// A tool call named on the command line: `TOOL {json args}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The tool.
    pub tool: String,
    /// Its arguments (an object; `{}` when none were given).
    pub args: Map<String, Value>,
}

/// Why a `--probe` value was refused.
#[derive(Debug, thiserror::Error)]
#[error("bad probe `{probe}`: {reason} (expected `TOOL {{json args}}`)")]
pub struct ProbeError {
    probe: String,
    reason: String,
}

impl FromStr for Probe {
    type Err = ProbeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| ProbeError {
            probe: s.to_owned(),
            reason: reason.to_owned(),
        };
        let s = s.trim();
        let (tool, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
        if tool.is_empty() {
            return Err(bad("no tool name"));
        }
        let args = match rest.trim() {
            "" => Map::new(),
            json => match serde_json::from_str(json) {
                Ok(Value::Object(map)) => map,
                Ok(_) => return Err(bad("the arguments must be a JSON object")),
                Err(e) => return Err(bad(&format!("the arguments are not JSON: {e}"))),
            },
        };
        Ok(Self {
            tool: tool.to_owned(),
            args,
        })
    }
}

/// One call the audit makes, with what the spec expects of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub(crate) tool: String,
    pub(crate) args: Map<String, Value>,
    /// The operation its file must be named after, for the spec's tools.
    pub(crate) operation: Option<&'static str>,
    /// The detail level its file must hold, when the spec says which.
    pub(crate) detail: Option<String>,
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.tool, Value::Object(self.args.clone()))
    }
}

impl Call {
    fn new(tool: &str, args: Map<String, Value>) -> Self {
        let operation = SPEC_TOOLS
            .iter()
            .find(|(t, _)| *t == tool)
            .map(|(_, op)| *op);
        let detail = match args.get("detail").and_then(Value::as_str) {
            Some(d) => Some(d.to_owned()),
            // "If no detail level is specified, the tool's default applies
            // (light for recall_memories, medium for inject_context)."
            None => match tool {
                "recall_memories" => Some("light".to_owned()),
                "inject_context" => Some("medium".to_owned()),
                _ => None,
            },
        };
        Self {
            tool: tool.to_owned(),
            args,
            operation,
            detail,
        }
    }
}

/// The calls to make: the probes when any were given, otherwise the spec's
/// tools the server lists, at every detail level their schema accepts.
/// The second value lists the spec tools that were left out, and why.
pub(crate) fn plan(probes: &[Probe], tools: &[Tool]) -> (Vec<Call>, Vec<String>) {
    if !probes.is_empty() {
        let calls = probes
            .iter()
            .map(|p| Call::new(&p.tool, p.args.clone()))
            .collect();
        return (calls, Vec::new());
    }
    let mut calls = Vec::new();
    let mut left_out = Vec::new();
    for (name, _) in SPEC_TOOLS {
        let Some(tool) = tools.iter().find(|t| t.name == name) else {
            continue;
        };
        let schema = &tool.input_schema;
        let props = schema.get("properties").and_then(Value::as_object);
        let mut args = Map::new();
        let required = schema.get("required").and_then(Value::as_array);
        let mut unknown = None;
        for key in required.into_iter().flatten().filter_map(Value::as_str) {
            let ty = props
                .and_then(|p| p.get(key))
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str);
            match ty {
                Some("string") => args.insert(key.to_owned(), DEFAULT_QUERY.into()),
                Some("integer" | "number") => args.insert(key.to_owned(), 100.into()),
                _ => {
                    unknown = Some(key.to_owned());
                    break;
                }
            };
        }
        if let Some(key) = unknown {
            left_out.push(format!(
                "{name}: cannot fill its required argument `{key}`; name a call with --probe"
            ));
            continue;
        }
        if props.is_some_and(|p| p.contains_key("detail")) {
            for detail in DETAILS {
                let mut args = args.clone();
                args.insert("detail".to_owned(), detail.into());
                calls.push(Call::new(name, args));
            }
        } else {
            calls.push(Call::new(name, args));
        }
    }
    (calls, left_out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn tool(name: &str, schema: Value) -> Tool {
        Tool::new(
            name.to_owned(),
            "t",
            Arc::new(schema.as_object().unwrap().clone()),
        )
    }

    #[test]
    fn parses_probes() {
        let p: Probe = r#"fetch_rows {"n": 3}"#.parse().unwrap();
        assert_eq!(p.tool, "fetch_rows");
        assert_eq!(p.args["n"], 3);
        assert!("rows".parse::<Probe>().unwrap().args.is_empty());
        let err = "rows [1]".parse::<Probe>().unwrap_err().to_string();
        assert!(err.contains("JSON object"), "{err}");
        assert!("rows {".parse::<Probe>().is_err());
    }

    #[test]
    fn default_plan_covers_listed_spec_tools_only() {
        let tools = [
            tool(
                "recall_memories",
                json!({"properties": {"query": {"type": "string"}, "detail": {"enum": ["light"]}},
                       "required": ["query"]}),
            ),
            tool(
                "inject_context",
                json!({"properties": {"query": {"type": "string"}}, "required": ["query"]}),
            ),
            tool("delete_everything", json!({"properties": {}})),
            tool(
                "list_memories",
                json!({"properties": {"filter": {"type": "object"}}, "required": ["filter"]}),
            ),
        ];
        let (calls, left_out) = plan(&[], &tools);
        let names: Vec<_> = calls.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            names,
            [
                r#"recall_memories({"query":"the","detail":"light"})"#,
                r#"recall_memories({"query":"the","detail":"medium"})"#,
                r#"recall_memories({"query":"the","detail":"full"})"#,
                r#"inject_context({"query":"the"})"#,
            ]
        );
        assert_eq!(calls[3].detail.as_deref(), Some("medium"));
        assert_eq!(calls[3].operation, Some("inject"));
        assert!(left_out[0].starts_with("list_memories"), "{left_out:?}");
    }

    #[test]
    fn probes_replace_the_default_plan() {
        let p: Probe = "rows {}".parse().unwrap();
        let (calls, _) = plan(&[p], &[]);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].operation, None);
        assert_eq!(calls[0].detail, None);
    }
}
