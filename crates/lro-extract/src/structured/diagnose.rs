//! Why a structured query matched nothing, said so that it names the fix.
//!
//! An empty answer is the model's worst case: it cannot tell "no such
//! records" from "my condition was wrong". So while no record has matched,
//! each condition records what it saw (was the field there, did it hold
//! numbers or strings, would the comparison have matched ignoring case),
//! and when the answer is empty, every condition that held for no record
//! gets a notice: a field no record has (with the closest name), a number
//! written as a string or the other way round, and a case-sensitive
//! comparison that matches only when case is ignored. Once a record
//! matches, nothing more is recorded: a non-empty answer gets no notices.

use std::collections::BTreeSet;

use regex::{Regex, RegexBuilder};
use serde_json::Value;

use super::{Cond, get_path};
use crate::request::Op;

/// Field names kept for the "closest name" hint, at most.
const MAX_KEYS: usize = 200;

/// What one condition saw on the records that matched nothing.
#[derive(Debug, Default)]
pub(super) struct Seen {
    held: bool,
    present: usize,
    numbers: usize,
    strings: usize,
    other_case: bool,
    keys: BTreeSet<String>,
}

/// A condition's case-insensitive twin, for the case hint.
#[derive(Debug, Clone)]
pub(super) enum Caseless {
    /// Not a case-sensitive string comparison.
    None,
    /// `eq` or `prefix` with a string, lowercased.
    Lower(String),
    /// `regex`, compiled ignoring case.
    Regex(Regex),
}

impl Caseless {
    pub(super) fn new(op: Op, value: &Value) -> Self {
        match (op, value) {
            (Op::Eq | Op::Prefix, Value::String(s)) => Caseless::Lower(s.to_lowercase()),
            (Op::Regex, Value::String(re)) => RegexBuilder::new(re)
                .case_insensitive(true)
                .build()
                .map_or(Caseless::None, Caseless::Regex),
            _ => Caseless::None,
        }
    }
}

impl Cond {
    /// Records what `record` shows about this condition.
    pub(super) fn observe(&self, record: &Value, seen: &mut Seen) {
        if self.holds(record) {
            seen.held = true;
            return;
        }
        match get_path(record, &self.path) {
            None | Some(Value::Null) => {
                if seen.present == 0 && seen.keys.len() < MAX_KEYS {
                    let parent = get_path(record, &self.path[..self.path.len() - 1]);
                    if let Some(Value::Object(map)) = parent {
                        seen.keys.extend(map.keys().take(MAX_KEYS).cloned());
                    }
                }
            }
            Some(v) => {
                seen.present += 1;
                match v {
                    Value::Number(_) => seen.numbers += 1,
                    Value::String(s) => {
                        seen.strings += 1;
                        seen.other_case |= self.matches_ignoring_case(s);
                    }
                    _ => {}
                }
            }
        }
    }

    fn matches_ignoring_case(&self, s: &str) -> bool {
        match (&self.caseless, self.op) {
            (Caseless::Lower(v), Op::Eq) => s.to_lowercase() == *v,
            (Caseless::Lower(v), _) => s.to_lowercase().starts_with(v.as_str()),
            (Caseless::Regex(re), _) => re.is_match(s),
            (Caseless::None, _) => false,
        }
    }

    /// The notice for a condition that held for no record, if its record
    /// shows why.
    pub(super) fn explain(&self, seen: &Seen) -> Option<String> {
        if seen.held {
            return None;
        }
        let field = &self.field;
        if seen.present == 0 {
            let leaf = &self.path[self.path.len() - 1];
            let closest = seen
                .keys
                .iter()
                .map(|k| (strsim::jaro_winkler(leaf, k), k))
                .filter(|(score, _)| *score >= 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0));
            return Some(match closest {
                Some((_, k)) => format!("no record has the field {field:?}; did you mean {k:?}?"),
                None if seen.keys.is_empty() => format!("no record has the field {field:?}"),
                None => format!(
                    "no record has the field {field:?}; the fields there are: {}",
                    seen.keys
                        .iter()
                        .take(12)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        let op = self.op.as_str();
        let ordering = matches!(
            self.op,
            Op::Eq | Op::Ne | Op::Gt | Op::Gte | Op::Lt | Op::Lte
        );
        match &self.value {
            Value::String(s) if ordering && seen.numbers > 0 && seen.strings == 0 => {
                Some(match s.parse::<f64>() {
                    Ok(_) => format!(
                        "{field:?} holds numbers: write the value as a number ({s}), not a string (\"{s}\")"
                    ),
                    Err(_) => format!(
                        "{field:?} holds numbers, and {op} compared them with the string {s:?}: give a number"
                    ),
                })
            }
            Value::Number(n) if ordering && seen.strings > 0 && seen.numbers == 0 => Some(format!(
                "{field:?} holds strings, not numbers, so {op} {n} compared with none of them: \
                 compare with the string \"{n}\" (text order), or use query with tonumber, e.g. \
                 select((.{field} | tonumber) {} {n})",
                jq_operator(self.op)
            )),
            Value::String(s) if seen.other_case => {
                let pattern = match self.op {
                    Op::Prefix => format!("(?i)^{}", regex::escape(s)),
                    Op::Eq => format!("(?i)^{}$", regex::escape(s)),
                    _ => format!("(?i){s}"),
                };
                Some(format!(
                    "{op} on {field:?} is case-sensitive and matched nothing, but matches ignoring \
                     case: use the exact case, or {{\"field\": {field:?}, \"op\": \"regex\", \
                     \"value\": {pattern:?}}}"
                ))
            }
            _ => None,
        }
    }
}

fn jq_operator(op: Op) -> &'static str {
    match op {
        Op::Ne => "!=",
        Op::Gt => ">",
        Op::Gte => ">=",
        Op::Lt => "<",
        Op::Lte => "<=",
        _ => "==",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::request::Condition;

    fn records() -> Vec<Value> {
        (0..6)
            .map(|i| {
                json!({"id": format!("m{i}"), "priority": i % 5, "level": (i % 5).to_string(),
                       "namespace": "_semantic/a", "meta": {"owner": "ann"}})
            })
            .collect()
    }

    fn notice(cond: Value) -> Option<String> {
        let c = Cond::new(&serde_json::from_value::<Condition>(cond).unwrap()).unwrap();
        let mut seen = Seen::default();
        for r in records() {
            c.observe(&r, &mut seen);
        }
        c.explain(&seen)
    }

    #[test]
    fn a_number_written_as_a_string_names_the_number() {
        let n = notice(json!({"field": "priority", "op": "gte", "value": "3"})).unwrap();
        assert!(
            n.contains("write the value as a number (3), not a string (\"3\")"),
            "{n}"
        );
    }

    #[test]
    fn a_string_field_compared_as_a_number_names_both_fixes() {
        let n = notice(json!({"field": "level", "op": "gte", "value": 3})).unwrap();
        assert!(n.contains("holds strings, not numbers"), "{n}");
        assert!(n.contains("select((.level | tonumber) >= 3)"), "{n}");
    }

    #[test]
    fn a_missing_field_names_the_closest_one_or_lists_them() {
        let n = notice(json!({"field": "priorty", "op": "eq", "value": 1})).unwrap();
        assert!(n.ends_with("did you mean \"priority\"?"), "{n}");
        let n = notice(json!({"field": "meta.ownr", "op": "eq", "value": "ann"})).unwrap();
        assert!(n.ends_with("did you mean \"owner\"?"), "{n}");
        let n = notice(json!({"field": "xyzzy", "op": "exists"})).unwrap();
        assert!(
            n.contains("the fields there are: id, level, meta, namespace, priority"),
            "{n}"
        );
    }

    #[test]
    fn a_case_sensitive_miss_offers_the_case_insensitive_regex() {
        let n =
            notice(json!({"field": "namespace", "op": "prefix", "value": "_Semantic"})).unwrap();
        assert!(n.contains(r#""value": "(?i)^_Semantic""#), "{n}");
        let n = notice(json!({"field": "id", "op": "regex", "value": "M1"})).unwrap();
        assert!(n.contains(r#""value": "(?i)M1""#), "{n}");
    }

    #[test]
    fn a_condition_that_held_or_just_matched_nothing_gets_no_notice() {
        assert_eq!(
            notice(json!({"field": "priority", "op": "gte", "value": 3})),
            None
        );
        assert_eq!(
            notice(json!({"field": "priority", "op": "gte", "value": 30})),
            None
        );
        assert_eq!(
            notice(json!({"field": "namespace", "op": "prefix", "value": "_x"})),
            None
        );
    }
}
