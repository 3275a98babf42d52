//! JSON configuration files (with comments and trailing commas, as the
//! editors' files allow): where each server entry's text is, and a wrapped
//! entry's text in the file's own indentation.
//!
//! Nothing is re-serialised: an edit replaces one entry's text, so every
//! other byte of the file (comments, key order, spacing) stays as it was.

use std::ops::Range;

use jsonc_parser::{
    CollectOptions, ParseOptions,
    ast::{Object, ObjectProp, ObjectPropName, Value},
    parse_to_ast,
};

use crate::{
    entry::{New, Out, Prop, Val, quote, quoted_list},
    error::Error,
    file::Found,
};

/// The entries of the servers map reached by the keys `at`; none when the
/// file has no such map. A file that does not parse, or whose map is not an
/// object, is an error.
pub(crate) fn entries(text: &str, at: &[String]) -> Result<Vec<Found>, Error> {
    let parsed = parse_to_ast(text, &CollectOptions::default(), &ParseOptions::default())
        .map_err(|e| Error::Parse(e.to_string()))?;
    let Some(root) = parsed.value else {
        // An empty file holds no servers.
        return Ok(Vec::new());
    };
    let mut value = &root;
    for key in at {
        let Value::Object(object) = value else {
            return Err(Error::Parse(format!(
                "{} is not an object",
                path_of(at, key)
            )));
        };
        match object.get(key) {
            Some(prop) => value = &prop.value,
            None => return Ok(Vec::new()),
        }
    }
    let Value::Object(servers) = value else {
        return Err(Error::Parse(format!("{} is not an object", at.join("."))));
    };
    let unit = indent_unit(text, &root);
    Ok(servers
        .properties
        .iter()
        .map(|p| found(text, p, &unit))
        .collect())
}

fn path_of(at: &[String], upto: &str) -> String {
    let n = at.iter().position(|k| k == upto).unwrap_or(0);
    if n == 0 {
        "the file".to_owned()
    } else {
        at[..n].join(".")
    }
}

fn found(text: &str, prop: &ObjectProp<'_>, unit: &str) -> Found {
    let range = range(&prop.value);
    let props = match &prop.value {
        Value::Object(object) => Some(props(text, object)),
        _ => None,
    };
    Found {
        name: prop.name.as_str().to_owned(),
        range: range.clone(),
        props,
        indent: line_indent(text, prop.range.start).to_owned(),
        unit: unit.to_owned(),
        one_line: !text[range].contains('\n'),
        header: None,
    }
}

fn props(text: &str, object: &Object<'_>) -> Vec<Prop> {
    object
        .properties
        .iter()
        .map(|p| Prop {
            key: p.name.as_str().to_owned(),
            raw_key: text[name_range(&p.name)].to_owned(),
            raw_value: text[range(&p.value)].to_owned(),
            value: val(&p.value),
        })
        .collect()
}

fn name_range(name: &ObjectPropName<'_>) -> Range<usize> {
    let r = match name {
        ObjectPropName::String(s) => s.range,
        ObjectPropName::Word(w) => w.range,
    };
    r.start..r.end
}

fn val(value: &Value<'_>) -> Val {
    match value {
        Value::StringLit(s) => Val::Str(s.value.to_string()),
        Value::Array(a) => Val::List(a.elements.iter().map(val).collect()),
        Value::Object(o) => Val::Map(
            o.properties
                .iter()
                .map(|p| (p.name.as_str().to_owned(), val(&p.value)))
                .collect(),
        ),
        _ => Val::Other,
    }
}

fn range(value: &Value<'_>) -> Range<usize> {
    let r = match value {
        Value::StringLit(v) => v.range,
        Value::NumberLit(v) => v.range,
        Value::BooleanLit(v) => v.range,
        Value::Object(v) => v.range,
        Value::Array(v) => v.range,
        Value::NullKeyword(v) => v.range,
    };
    r.start..r.end
}

/// The whitespace that starts the line holding byte `at`.
fn line_indent(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = &text[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// The file's indentation step: that of the root object's first property
/// (two spaces when the file has none on a line of its own).
fn indent_unit(text: &str, root: &Value<'_>) -> String {
    if let Value::Object(o) = root
        && let Some(first) = o.properties.first()
    {
        let indent = line_indent(text, first.range.start);
        let on_own_line = text[..first.range.start]
            .trim_end_matches([' ', '\t'])
            .ends_with('\n');
        if on_own_line && !indent.is_empty() {
            return indent.to_owned();
        }
    }
    "  ".to_owned()
}

/// The text of a wrapped entry: its kept properties as written, the new
/// ones written in the file's indentation (on one line when the entry was).
pub(crate) fn render(found: &Found, props: &[Prop], outs: &[Out]) -> String {
    let items: Vec<String> = outs
        .iter()
        .map(|out| match out {
            Out::Keep(i) => format!("{}: {}", props[*i].raw_key, props[*i].raw_value),
            Out::Set(key, new) => {
                let inner = format!("{}{}", found.indent, found.unit);
                format!(
                    "{}: {}",
                    quote(key),
                    new_value(new, &inner, &found.unit, found.one_line)
                )
            }
        })
        .collect();
    if found.one_line {
        return format!("{{ {} }}", items.join(", "));
    }
    let inner = format!("{}{}", found.indent, found.unit);
    let mut text = String::from("{\n");
    text.push_str(
        &items
            .iter()
            .map(|i| format!("{inner}{i}"))
            .collect::<Vec<_>>()
            .join(",\n"),
    );
    text.push('\n');
    text.push_str(&found.indent);
    text.push('}');
    text
}

fn new_value(new: &New, indent: &str, unit: &str, one_line: bool) -> String {
    match new {
        New::Str(s) => quote(s),
        New::List(items) => quoted_list(items),
        New::Map(pairs) if one_line || pairs.is_empty() => format!(
            "{{ {} }}",
            pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", quote(k), quote(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        New::Map(pairs) => {
            let lines: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{indent}{unit}{}: {}", quote(k), quote(v)))
                .collect();
            format!("{{\n{}\n{indent}}}", lines.join(",\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_with_their_exact_text_past_comments_and_trailing_commas() {
        let text = "{\n  // mine\n  \"mcpServers\": {\n    \"a\": { \"command\": /* c */ \"x\", /* c */ },\n  },\n}\n";
        let found = entries(text, &["mcpServers".to_owned()]).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            &text[found[0].range.clone()],
            "{ \"command\": /* c */ \"x\", /* c */ }"
        );
        let props = found[0].props.as_ref().unwrap();
        assert_eq!(props[0].raw_key, "\"command\"");
        assert_eq!(props[0].raw_value, "\"x\"");
        assert_eq!(found[0].indent, "    ");
        assert_eq!(found[0].unit, "  ");
        assert!(found[0].one_line);
    }

    #[test]
    fn a_missing_map_holds_nothing_and_a_bad_file_is_an_error() {
        assert!(entries("{}", &["servers".to_owned()]).unwrap().is_empty());
        assert!(entries("", &["servers".to_owned()]).unwrap().is_empty());
        assert!(matches!(
            entries("{\"servers\": [}", &["servers".to_owned()]),
            Err(Error::Parse(_))
        ));
        assert!(matches!(
            entries("{\"servers\": []}", &["servers".to_owned()]),
            Err(Error::Parse(_))
        ));
    }

    #[test]
    fn a_rendered_entry_keeps_raw_values_and_indents_new_ones() {
        let text = "{\n\t\"s\": {\n\t\t\"a\": {\n\t\t\t\"command\": \"x\",\n\t\t\t\"n\": 1.50\n\t\t}\n\t}\n}";
        let found = entries(text, &["s".to_owned()]).unwrap().remove(0);
        let props = found.props.clone().unwrap();
        let outs = [
            Out::Set("command".into(), New::Str("lro".into())),
            Out::Keep(1),
            Out::Set("env".into(), New::Map(vec![("K".into(), "v\"".into())])),
        ];
        assert_eq!(
            render(&found, &props, &outs),
            "{\n\t\t\t\"command\": \"lro\",\n\t\t\t\"n\": 1.50,\n\t\t\t\"env\": {\n\t\t\t\t\"K\": \"v\\\"\"\n\t\t\t}\n\t\t}"
        );
    }
}
