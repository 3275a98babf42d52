//! The `lro` command-line tool: `lro proxy`, `lro audit`, `lro context`, `lro extract`, `lro inspect`,
//! `lro gc`, `lro metrics`, `lro install` and `lro uninstall`. Every subcommand follows one exit-status table
//! ([`error`]): 0 success, 1 failure at run time, 2 usage error.
//!
//! The binary is a thin layer over [`lro_extract`] (same engine, same path
//! guards) and [`lro_scheduler::run_once`]; this library holds its argument
//! parsing and rendering so they can be tested without a process.
//!
//! ```
//! use lro_cli::{parse_condition, parse_window};
//! use lro_extract::Op;
//!
//! let c = parse_condition("provenance.confidence:gte:0.8").unwrap();
//! assert_eq!((c.field.as_str(), c.op), ("provenance.confidence", Op::Gte));
//! assert_eq!(c.value, Some(serde_json::json!(0.8)));
//! assert_eq!(parse_window("10:5").unwrap(), (10, 5));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod audit;
pub mod cli;
pub mod context;
pub mod error;
pub mod inspect;
pub mod install;
pub mod proxy;
pub mod server;

use lro_extract::{Condition, Op};
use serde_json::Value;

/// Parses `FIELD:OP[:VALUE]` (e.g. `namespace:prefix:_semantic`,
/// `priority:gte:4`, `id:in:m1,m2`, `tags:contains:perf`, `title:exists`).
///
/// The value is JSON when it parses as JSON (numbers, `true`, `null`,
/// `["a","b"]`, `"quoted"`), otherwise a plain string; for `in`, a plain
/// value is split at commas into strings.
pub fn parse_condition(s: &str) -> Result<Condition, String> {
    let mut parts = s.splitn(3, ':');
    let field = parts.next().unwrap_or_default().to_owned();
    let op_name = parts
        .next()
        .ok_or_else(|| format!("--where {s:?}: expected FIELD:OP:VALUE"))?;
    let op: Op = serde_json::from_value(Value::String(op_name.to_owned())).map_err(|_| {
        format!(
            "--where {s:?}: unknown op {op_name:?}; use eq, ne, prefix, contains, regex, gt, gte, lt, lte, in or exists"
        )
    })?;
    let value = parts.next().map(|raw| {
        let parsed = serde_json::from_str::<Value>(raw).ok();
        match (op, parsed) {
            // Patterns and prefixes are text even when they look like JSON.
            (Op::Prefix | Op::Regex | Op::Contains, _) => Value::String(raw.to_owned()),
            (Op::In, Some(v @ Value::Array(_))) => v,
            (Op::In, _) => Value::Array(
                raw.split(',')
                    .map(|p| Value::String(p.trim().to_owned()))
                    .collect(),
            ),
            (_, Some(v)) => v,
            (_, None) => Value::String(raw.to_owned()),
        }
    });
    if field.is_empty() {
        return Err(format!("--where {s:?}: the field is empty"));
    }
    if value.is_none() && op != Op::Exists {
        return Err(format!(
            "--where {s:?}: op {op_name} needs a value (FIELD:OP:VALUE)"
        ));
    }
    Ok(Condition::new(field, op, value))
}

/// Parses `OFFSET:LIMIT` (either may be empty: `:20`, `100:`).
pub fn parse_window(s: &str) -> Result<(usize, usize), String> {
    let (o, l) = s
        .split_once(':')
        .ok_or_else(|| format!("--lines {s:?}: expected OFFSET:LIMIT, e.g. 0:100"))?;
    let num = |x: &str, default: usize| -> Result<usize, String> {
        if x.is_empty() {
            Ok(default)
        } else {
            x.parse()
                .map_err(|_| format!("--lines {s:?}: {x:?} is not a number"))
        }
    };
    Ok((num(o, 0)?, num(l, lro_extract::DEFAULT_LINE_LIMIT)?))
}

/// Parses `NAME=VALUE` for `--param`.
pub fn parse_param(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("--param {s:?}: expected NAME=VALUE"))?;
    if k.is_empty() {
        return Err(format!("--param {s:?}: the name is empty"));
    }
    Ok((k.to_owned(), v.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditions() {
        let c = parse_condition("id:in:m1, m2").unwrap();
        assert_eq!(c.value, Some(json!(["m1", "m2"])));
        let c = parse_condition("id:in:[1,2]").unwrap();
        assert_eq!(c.value, Some(json!([1, 2])));
        let c = parse_condition("created:gte:2025-01-01T00:00:00Z").unwrap();
        assert_eq!(c.value, Some(json!("2025-01-01T00:00:00Z")));
        let c = parse_condition("title:exists").unwrap();
        assert_eq!((c.op, c.value), (Op::Exists, None));
        let c = parse_condition("a:eq:null").unwrap();
        assert_eq!(c.value, Some(Value::Null));
        let c = parse_condition("a:contains:1").unwrap();
        assert_eq!(c.value, Some(json!("1")));
        assert!(
            parse_condition("a:like:x")
                .unwrap_err()
                .contains("unknown op")
        );
        assert!(
            parse_condition("a:eq")
                .unwrap_err()
                .contains("needs a value")
        );
        assert!(parse_condition("a").is_err());
    }

    #[test]
    fn windows_and_params() {
        assert_eq!(parse_window(":20").unwrap(), (0, 20));
        assert_eq!(parse_window("5:").unwrap(), (5, 100));
        assert!(parse_window("x:1").is_err());
        assert!(parse_window("5").is_err());
        assert_eq!(parse_param("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert!(parse_param("=x").is_err());
    }
}
