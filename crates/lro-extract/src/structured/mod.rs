//! The structured form: `where` / `fields` / `sort_by` / `offset` /
//! `limit` / `count` / `group_by`, evaluated natively over `serde_json`
//! values while streaming the file line by line.
//!
//! Only sorting keeps records in memory (the rendered output line and the
//! sort key of each match); `count` and `group_by` keep a counter per group,
//! and plain filtering stops reading as soon as `limit` is reached. An
//! empty answer says why, where the records show it (`diagnose.rs`).

mod diagnose;

use std::{cmp::Ordering, collections::HashMap, io::Read};

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::{
    ExtractError,
    failures::Unread,
    jq::{Guard, Lines},
    output::{Collector, Flow},
    render,
    request::{Condition, ExtractRequest, Match, Op},
};

/// A validated structured query.
#[derive(Debug, Clone)]
pub(crate) struct Structured {
    conds: Vec<Cond>,
    any: bool,
    fields: Option<Vec<Vec<String>>>,
    sort: Option<(Vec<String>, bool)>,
    offset: usize,
    limit: Option<usize>,
    count: bool,
    group_by: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
struct Cond {
    field: String,
    path: Vec<String>,
    op: Op,
    value: Value,
    regex: Option<Regex>,
    lower: Option<String>,
    caseless: diagnose::Caseless,
}

fn invalid(msg: impl Into<String>) -> ExtractError {
    ExtractError::InvalidRequest(msg.into())
}

fn parse_path(what: &str, path: &str) -> Result<Vec<String>, ExtractError> {
    let segs: Vec<String> = path.split('.').map(str::to_owned).collect();
    if path.is_empty() || segs.iter().any(String::is_empty) {
        return Err(invalid(format!(
            "{what} {path:?} is not a dotted field path like \"provenance.confidence\""
        )));
    }
    Ok(segs)
}

impl Cond {
    fn new(c: &Condition) -> Result<Self, ExtractError> {
        let path = parse_path("field", &c.field)?;
        let op = c.op;
        let need = |what: &str| {
            invalid(format!(
                "condition on {:?}: op {} needs {what} as value",
                c.field,
                op.as_str()
            ))
        };
        let value = match (op, &c.value) {
            (Op::Exists, None) => Value::Bool(true),
            (Op::Exists, Some(v @ Value::Bool(_))) => v.clone(),
            (Op::Exists, Some(_)) => return Err(need("true or false (or nothing)")),
            (_, None) => return Err(need("a value")),
            (Op::Prefix | Op::Regex, Some(v @ Value::String(_))) => v.clone(),
            (Op::Prefix | Op::Regex, Some(_)) => return Err(need("a string")),
            (Op::Contains, Some(Value::Array(_) | Value::Object(_) | Value::Null)) => {
                return Err(need("a string, number or boolean"));
            }
            (
                Op::Gt | Op::Gte | Op::Lt | Op::Lte,
                Some(v @ (Value::Number(_) | Value::String(_))),
            ) => v.clone(),
            (Op::Gt | Op::Gte | Op::Lt | Op::Lte, Some(_)) => {
                return Err(need("a number or string"));
            }
            (Op::In, Some(v @ Value::Array(_))) => v.clone(),
            (Op::In, Some(_)) => return Err(need("an array")),
            (_, Some(v)) => v.clone(),
        };
        let regex =
            match (op, &value) {
                (Op::Regex, Value::String(re)) => Some(Regex::new(re).map_err(|e| {
                    invalid(format!("condition on {:?}: invalid regex: {e}", c.field))
                })?),
                _ => None,
            };
        let lower = match (op, &value) {
            (Op::Contains, Value::String(s)) => Some(s.to_lowercase()),
            _ => None,
        };
        let caseless = diagnose::Caseless::new(op, &value);
        Ok(Self {
            field: c.field.clone(),
            path,
            op,
            value,
            regex,
            lower,
            caseless,
        })
    }

    fn holds(&self, record: &Value) -> bool {
        let field = get_path(record, &self.path);
        let present = field.filter(|v| !v.is_null());
        let null = Value::Null;
        let field_or_null = field.unwrap_or(&null);
        match self.op {
            Op::Eq => json_eq(field_or_null, &self.value),
            Op::Ne => !json_eq(field_or_null, &self.value),
            Op::Prefix => match (present, &self.value) {
                (Some(Value::String(s)), Value::String(p)) => s.starts_with(p.as_str()),
                _ => false,
            },
            Op::Contains => match present {
                Some(Value::String(s)) => self
                    .lower
                    .as_ref()
                    .is_some_and(|needle| s.to_lowercase().contains(needle.as_str())),
                Some(Value::Array(items)) => items.iter().any(|i| json_eq(i, &self.value)),
                _ => false,
            },
            Op::Regex => match (present, &self.regex) {
                (Some(Value::String(s)), Some(re)) => re.is_match(s),
                _ => false,
            },
            Op::Gt => compare(present, &self.value) == Some(Ordering::Greater),
            Op::Gte => matches!(
                compare(present, &self.value),
                Some(Ordering::Greater | Ordering::Equal)
            ),
            Op::Lt => compare(present, &self.value) == Some(Ordering::Less),
            Op::Lte => matches!(
                compare(present, &self.value),
                Some(Ordering::Less | Ordering::Equal)
            ),
            Op::In => self
                .value
                .as_array()
                .is_some_and(|set| set.iter().any(|v| json_eq(field_or_null, v))),
            Op::Exists => present.is_some() == (self.value == Value::Bool(true)),
        }
    }
}

/// The value at a dotted path; numeric segments index arrays.
pub(crate) fn get_path<'v, S: AsRef<str>>(record: &'v Value, path: &[S]) -> Option<&'v Value> {
    let mut cur = record;
    for seg in path {
        let seg = seg.as_ref();
        cur = match cur {
            Value::Object(map) => map.get(seg)?,
            Value::Array(items) => items.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// JSON equality with numbers compared by value (`1 == 1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn compare(field: Option<&Value>, value: &Value) -> Option<Ordering> {
    match (field?, value) {
        (Value::Number(a), Value::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Value::String(a), Value::String(b)) => Some(a.as_str().cmp(b.as_str())),
        _ => None,
    }
}

fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(false) => 1,
        Value::Bool(true) => 2,
        Value::Number(_) => 3,
        Value::String(_) => 4,
        Value::Array(_) => 5,
        Value::Object(_) => 6,
    }
}

/// jq's total order: null < false < true < numbers < strings < arrays <
/// objects.
fn jq_cmp(a: &Value, b: &Value) -> Ordering {
    let rank = type_rank(a).cmp(&type_rank(b));
    if rank != Ordering::Equal {
        return rank;
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.total_cmp(&y)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (a, b) in x.iter().zip(y) {
                let c = jq_cmp(a, b);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xk: Vec<&String> = x.keys().collect();
            let mut yk: Vec<&String> = y.keys().collect();
            xk.sort();
            yk.sort();
            xk.cmp(&yk).then_with(|| {
                for k in xk {
                    let c = jq_cmp(&x[k], &y[k]);
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                Ordering::Equal
            })
        }
        _ => Ordering::Equal,
    }
}

/// A record as a value, as deep as jq reads (past serde's own 128 levels),
/// and with what serde refuses read as jq reads it (`1E400`, a lone
/// surrogate escape); jq's message when jq refuses it.
fn read(line: &[u8]) -> Result<Value, String> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_slice(line);
    de.disable_recursion_limit();
    match Value::deserialize(&mut de).and_then(|v| de.end().map(|()| v)) {
        Ok(v) => Ok(v),
        Err(_) => crate::jq::record_value(line),
    }
}

fn project(record: &Value, fields: &[Vec<String>]) -> Value {
    let mut out = Map::new();
    for path in fields {
        let Some(v) = get_path(record, path) else {
            continue;
        };
        let mut slot = &mut out;
        for seg in &path[..path.len() - 1] {
            let entry = slot
                .entry(seg.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            slot = entry.as_object_mut().expect("just made an object");
        }
        slot.insert(path[path.len() - 1].clone(), v.clone());
    }
    Value::Object(out)
}

impl Structured {
    /// Validates the structured fields of `req`.
    pub(crate) fn from_request(req: &ExtractRequest) -> Result<Self, ExtractError> {
        let count = req.count.unwrap_or(false);
        if count
            && (req.fields.is_some()
                || req.sort_by.is_some()
                || req.offset.is_some()
                || req.limit.is_some()
                || req.group_by.is_some())
        {
            return Err(invalid(
                "count returns only {\"count\": N}; it cannot be combined with fields, sort_by, offset, limit or group_by",
            ));
        }
        if req.group_by.is_some() && (req.fields.is_some() || req.sort_by.is_some()) {
            return Err(invalid(
                "group_by returns {key, count} lines; it cannot be combined with fields or sort_by",
            ));
        }
        let conds = req
            .r#where
            .iter()
            .flatten()
            .map(Cond::new)
            .collect::<Result<Vec<_>, _>>()?;
        let fields = match &req.fields {
            Some(f) if f.is_empty() => return Err(invalid("fields must name at least one field")),
            Some(f) => Some(
                f.iter()
                    .map(|p| parse_path("field", p))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let sort = match &req.sort_by {
            Some(s) => {
                let (desc, path) = match s.strip_prefix('-') {
                    Some(rest) => (true, rest),
                    None => (false, s.as_str()),
                };
                Some((parse_path("sort_by", path)?, desc))
            }
            None => None,
        };
        let group_by = req
            .group_by
            .as_deref()
            .map(|g| parse_path("group_by", g))
            .transpose()?;
        Ok(Self {
            conds,
            any: req.r#match.unwrap_or_default() == Match::Any,
            fields,
            sort,
            offset: req.offset.unwrap_or(0),
            limit: req.limit,
            count,
            group_by,
        })
    }

    /// Whether `record` satisfies `where` (always, without conditions).
    pub(crate) fn matches(&self, record: &Value) -> bool {
        if self.conds.is_empty() {
            return true;
        }
        if self.any {
            self.conds.iter().any(|c| c.holds(record))
        } else {
            self.conds.iter().all(|c| c.holds(record))
        }
    }

    /// The output line for a matching record: the original line when
    /// whole, else the projection.
    fn render(&self, record: &Value, line: &[u8]) -> Vec<u8> {
        match &self.fields {
            None => crate::jq::canonical(line).into_owned(),
            Some(fields) => render::to_vec(&project(record, fields)),
        }
    }

    /// Streams the records of `reader` into `out`.
    pub(crate) fn run(
        &self,
        reader: impl Read,
        first_line: usize,
        guard: &Guard,
        out: &mut Collector,
    ) -> Result<(), ExtractError> {
        let mut lines = Lines::new(reader, first_line);
        let mut matched = 0usize;
        let mut groups: HashMap<String, (Value, usize)> = HashMap::new();
        let mut sorted: Vec<(Value, Vec<u8>)> = Vec::new();
        let mut seen: Vec<diagnose::Seen> = self.conds.iter().map(|_| Default::default()).collect();
        while let Some((line_no, line)) = lines.next_line()? {
            if guard.cancelled() {
                return Err(ExtractError::Timeout {
                    limit: Default::default(),
                });
            }
            // A record jq cannot read is left out and named, as the jq
            // modes do; one never fails the whole answer.
            if crate::jq::too_deep(line) {
                out.failures.unread(line_no, Unread::Deep);
                continue;
            }
            let record = match read(line) {
                Ok(record) => record,
                Err(message) => {
                    out.failures.unread(line_no, Unread::Refused(message));
                    continue;
                }
            };
            if !self.matches(&record) {
                if matched == 0 {
                    for (c, seen) in self.conds.iter().zip(&mut seen) {
                        c.observe(&record, seen);
                    }
                }
                continue;
            }
            matched += 1;
            if self.count {
                continue;
            }
            if let Some(path) = &self.group_by {
                let key = get_path(&record, path).cloned().unwrap_or(Value::Null);
                let keys = match key {
                    Value::Array(items) => items,
                    other => vec![other],
                };
                for k in keys {
                    groups.entry(group_id(&k)).or_insert((k, 0)).1 += 1;
                }
                continue;
            }
            if let Some((path, _)) = &self.sort {
                let key = get_path(&record, path).cloned().unwrap_or(Value::Null);
                sorted.push((key, self.render(&record, line)));
                continue;
            }
            if matched <= self.offset {
                continue;
            }
            if self.limit.is_some_and(|l| matched - self.offset > l) {
                break;
            }
            let rendered = self.render(&record, line);
            let keep = out.keeps_values();
            let flow = out.push(&rendered, || {
                if !keep {
                    Value::Null
                } else if let Some(f) = &self.fields {
                    project(&record, f)
                } else {
                    record.clone()
                }
            });
            if flow == Flow::Stop {
                return Ok(());
            }
        }
        if matched == 0 {
            for (c, seen) in self.conds.iter().zip(&seen) {
                if let Some(notice) = c.explain(seen) {
                    out.note(notice);
                }
            }
        }
        if self.count {
            let v = json!({ "count": matched });
            out.push(&render::to_vec(&v), || v.clone());
            return Ok(());
        }
        if self.group_by.is_some() {
            let mut list: Vec<(Value, usize)> = groups.into_values().collect();
            list.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| jq_cmp(&a.0, &b.0)));
            let take = self.limit.unwrap_or(usize::MAX);
            for (key, count) in list.into_iter().skip(self.offset).take(take) {
                // Written by hand so `key` comes first (serde_json sorts keys).
                let mut line = b"{\"key\":".to_vec();
                render::write_value(&mut line, &key);
                line.extend_from_slice(format!(",\"count\":{count}}}").as_bytes());
                let v = json!({ "key": key, "count": count });
                if out.push(&line, || v) == Flow::Stop {
                    break;
                }
            }
            return Ok(());
        }
        if let Some((_, desc)) = &self.sort {
            // Stable, so equal keys keep file order (as jq's sort_by).
            sorted.sort_by(|a, b| {
                let c = jq_cmp(&a.0, &b.0);
                if *desc { c.reverse() } else { c }
            });
            let take = self.limit.unwrap_or(usize::MAX);
            for (_, line) in sorted.into_iter().skip(self.offset).take(take) {
                let flow = out.push(&line, || {
                    serde_json::from_slice(&line).unwrap_or(Value::Null)
                });
                if flow == Flow::Stop {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// The text a group is known by: its value with every object's keys in
/// order, so that objects jq 1.6 holds equal (`{"a":1,"b":2}`,
/// `{"b":2,"a":1}`) make one group.
fn group_id(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut members: Vec<_> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            let members: Vec<String> = members
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), group_id(v)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(group_id).collect();
            format!("[{}]", items.join(","))
        }
        scalar => scalar.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_that_differ_in_key_order_group_as_one() {
        let a = json!({"t": {"a": 1, "b": [{"y": 2, "x": 1}]}});
        let b = json!({"t": {"b": [{"x": 1, "y": 2}], "a": 1}});
        assert_eq!(group_id(&a), group_id(&b));
        assert_ne!(group_id(&json!({"a": 1})), group_id(&json!({"a": 2})));
    }

    fn plan(v: Value) -> Result<Structured, ExtractError> {
        let mut req = serde_json::from_value::<ExtractRequest>(v).unwrap();
        req.file_path = "x".into();
        Structured::from_request(&req)
    }

    fn cond(field: &str, op: &str, value: Value) -> Structured {
        plan(json!({"file_path": "x", "where": [{"field": field, "op": op, "value": value}]}))
            .unwrap()
    }

    #[test]
    fn operators() {
        let r = json!({"s": "Cache Warming", "n": 3, "f": 0.5, "tags": ["a", "b"], "d": "2025-02-01", "z": null});
        assert!(cond("n", "eq", json!(3.0)).matches(&r));
        assert!(cond("missing", "eq", Value::Null).matches(&r));
        assert!(cond("n", "ne", json!(4)).matches(&r));
        assert!(cond("s", "prefix", json!("Cache")).matches(&r));
        assert!(!cond("s", "prefix", json!("cache")).matches(&r));
        assert!(cond("s", "contains", json!("WARM")).matches(&r));
        assert!(cond("tags", "contains", json!("b")).matches(&r));
        assert!(!cond("tags", "contains", json!("c")).matches(&r));
        assert!(cond("s", "regex", json!("^C.*g$")).matches(&r));
        assert!(cond("f", "gt", json!(0.4)).matches(&r));
        assert!(cond("f", "gte", json!(0.5)).matches(&r));
        assert!(!cond("f", "lt", json!(0.5)).matches(&r));
        assert!(cond("n", "lte", json!(3)).matches(&r));
        assert!(cond("d", "gte", json!("2025-01-31")).matches(&r));
        assert!(
            !cond("s", "gt", json!(1)).matches(&r),
            "mixed types never compare"
        );
        assert!(cond("n", "in", json!([1, 2, 3])).matches(&r));
        assert!(!cond("n", "in", json!(["3"])).matches(&r));
        let exists = |f: &str, v: Option<bool>| {
            let mut c = json!({"field": f, "op": "exists"});
            if let Some(v) = v {
                c["value"] = json!(v);
            }
            plan(json!({"file_path": "x", "where": [c]}))
                .unwrap()
                .matches(&r)
        };
        assert!(exists("s", None));
        assert!(!exists("z", None), "null counts as absent");
        assert!(exists("nope", Some(false)));
    }

    #[test]
    fn any_and_all() {
        let r = json!({"a": 1, "b": 2});
        let both = |m: &str| {
            plan(json!({"file_path": "x", "match": m, "where": [
                {"field": "a", "op": "eq", "value": 1},
                {"field": "b", "op": "eq", "value": 9}]}))
            .unwrap()
            .matches(&r)
        };
        assert!(!both("all"));
        assert!(both("any"));
    }

    #[test]
    fn validation_messages() {
        let e = plan(json!({"file_path": "x", "count": true, "limit": 2})).unwrap_err();
        assert!(e.to_string().contains("count returns only"), "{e}");
        let e = plan(json!({"file_path": "x", "where": [{"field": "a", "op": "in", "value": 1}]}))
            .unwrap_err();
        assert!(e.to_string().contains("needs an array"), "{e}");
        let e =
            plan(json!({"file_path": "x", "where": [{"field": "a", "op": "regex", "value": "("}]}))
                .unwrap_err();
        assert!(e.to_string().contains("invalid regex"), "{e}");
        let e = plan(json!({"file_path": "x", "sort_by": "a..b"})).unwrap_err();
        assert!(e.to_string().contains("dotted field path"), "{e}");
        let e = plan(json!({"file_path": "x", "where": [{"field": "a", "op": "eq"}]})).unwrap_err();
        assert!(e.to_string().contains("needs a value"), "{e}");
    }

    #[test]
    fn projection_keeps_nesting() {
        let r = json!({"id": "m", "p": {"c": 0.5, "t": "x"}, "q": 1});
        let fields = vec![
            vec!["id".to_owned()],
            vec!["p".to_owned(), "c".to_owned()],
            vec!["nope".to_owned()],
        ];
        assert_eq!(project(&r, &fields), json!({"id": "m", "p": {"c": 0.5}}));
    }

    #[test]
    fn jq_order() {
        let mut v = vec![
            json!("b"),
            json!(2),
            Value::Null,
            json!(true),
            json!([1]),
            json!({}),
            json!(false),
            json!("a"),
            json!(1.5),
        ];
        v.sort_by(jq_cmp);
        assert_eq!(
            v,
            [
                Value::Null,
                json!(false),
                json!(true),
                json!(1.5),
                json!(2),
                json!("a"),
                json!("b"),
                json!([1]),
                json!({})
            ]
        );
    }

    #[test]
    fn module_example() {
        use serde_json::json;

        let req: ExtractRequest = serde_json::from_value(json!({
            "file_path": "x",
            "where": [{"field": "p.c", "op": "gte", "value": 0.5}],
            "count": true
        }))
        .unwrap();
        let plan = Structured::from_request(&req).unwrap();
        assert!(plan.matches(&json!({"p": {"c": 0.7}})));
        assert!(!plan.matches(&json!({"p": {"c": 0.2}})));
        assert_eq!(
            get_path(&json!({"a": [{"b": 1}]}), &["a", "0", "b"]),
            Some(&json!(1))
        );
    }
}
