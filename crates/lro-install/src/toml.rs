//! Codex's TOML: where each `[mcp_servers.NAME]` table's text is, and a
//! wrapped table's text.
//!
//! An entry is a table of its own (`[mcp_servers.docs]`: its header and key
//! lines, up to the end of its last key's line) or an inline table under
//! `[mcp_servers]` (`docs = { command = "x" }`: the value). Tables under the
//! entry (`[mcp_servers.docs.env]`) are left where they are.

use toml_edit::{Document, Item, Table, Value};

use crate::{
    entry::{New, Out, Prop, Val, quote, quoted_list},
    error::Error,
    file::Found,
};

/// The entries of the `[mcp_servers]` map; none when the file has none.
pub(crate) fn entries(text: &str, at: &[String]) -> Result<Vec<Found>, Error> {
    let doc = Document::parse(text).map_err(|e| Error::Parse(e.to_string().trim().to_owned()))?;
    let mut table: &Table = doc.as_table();
    for key in at {
        match table.get(key) {
            None => return Ok(Vec::new()),
            Some(Item::Table(t)) => table = t,
            Some(_) => return Err(Error::Parse(format!("{} is not a table", at.join(".")))),
        }
    }
    let mut found = Vec::new();
    for (name, item) in table.iter() {
        let entry = match item {
            Item::Table(t) if !t.is_dotted() => table_entry(text, name, t),
            Item::Value(Value::InlineTable(t)) => {
                let Some(range) = t.span() else { continue };
                let props = t
                    .get_values()
                    .iter()
                    .filter_map(|(keys, v)| {
                        let key = match keys.as_slice() {
                            [key] => *key,
                            _ => return None,
                        };
                        Some(Prop {
                            key: key.get().to_owned(),
                            raw_key: text[key.span()?].to_owned(),
                            raw_value: text[v.span()?].to_owned(),
                            value: val(v),
                        })
                    })
                    .collect();
                Found {
                    name: name.to_owned(),
                    range,
                    props: Some(props),
                    indent: String::new(),
                    unit: String::new(),
                    one_line: true,
                    header: None,
                }
            }
            // Dotted keys and other values are not a form `lro install`
            // edits; their entry is reported as unreadable.
            _ => unreadable(name),
        };
        found.push(entry);
    }
    Ok(found)
}

fn table_entry(text: &str, name: &str, table: &Table) -> Found {
    let mut props = Vec::new();
    let mut end = None;
    let header = table.span();
    for (key, item) in table.iter() {
        let Item::Value(v) = item else { continue };
        let (Some(key_span), Some(value_span)) = (table.key(key).and_then(|k| k.span()), v.span())
        else {
            continue;
        };
        end = end.max(Some(value_span.end));
        props.push(Prop {
            key: key.to_owned(),
            raw_key: text[key_span].to_owned(),
            raw_value: text[value_span].to_owned(),
            value: val(v),
        });
    }
    let (Some(header), Some(end)) = (header, end) else {
        return unreadable(name);
    };
    let start = text[..header.start].rfind('\n').map_or(0, |n| n + 1);
    // Up to the end of the last key's line: its comment is the entry's.
    let end = text[end..].find('\n').map_or(text.len(), |n| end + n + 1);
    Found {
        name: name.to_owned(),
        range: start..end,
        props: Some(props),
        indent: text[start..header.start].to_owned(),
        unit: String::new(),
        one_line: false,
        header: Some(text[header].to_owned()),
    }
}

fn unreadable(name: &str) -> Found {
    Found {
        name: name.to_owned(),
        range: 0..0,
        props: None,
        indent: String::new(),
        unit: String::new(),
        one_line: true,
        header: None,
    }
}

fn val(value: &Value) -> Val {
    match value {
        Value::String(s) => Val::Str(s.value().clone()),
        Value::Array(a) => Val::List(a.iter().map(val).collect()),
        Value::InlineTable(t) => Val::Map(t.iter().map(|(k, v)| (k.to_owned(), val(v))).collect()),
        _ => Val::Other,
    }
}

/// The text of a wrapped entry, in the form it was written in: a table
/// (header and key lines) or an inline table.
pub(crate) fn render(found: &Found, props: &[Prop], outs: &[Out]) -> String {
    let items: Vec<String> = outs
        .iter()
        .map(|out| match out {
            Out::Keep(i) => format!("{} = {}", props[*i].raw_key, props[*i].raw_value),
            Out::Set(key, new) => format!("{} = {}", key_text(key), new_value(new)),
        })
        .collect();
    let Some(header) = &found.header else {
        return format!("{{ {} }}", items.join(", "));
    };
    let mut text = format!("{}{header}\n", found.indent);
    for item in items {
        text.push_str(&item);
        text.push('\n');
    }
    text
}

fn key_text(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_owned()
    } else {
        quote(key)
    }
}

fn new_value(new: &New) -> String {
    match new {
        New::Str(s) => quote(s),
        New::List(items) => quoted_list(items),
        New::Map(pairs) => format!(
            "{{ {} }}",
            pairs
                .iter()
                .map(|(k, v)| format!("{} = {}", key_text(k), quote(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODEX: &str = r#"model = "o3"

# servers
[mcp_servers.docs]  # the docs
command = "npx"  # runs it
args = ["-y", "docs-mcp"]
startup_timeout_sec = 20

[mcp_servers.docs.env]
KEY = "v"

[mcp_servers]
inline = { command = "uvx", args = ["x"] }
"#;

    #[test]
    fn tables_and_inline_tables_are_found_with_their_exact_text() {
        let found = entries(CODEX, &["mcp_servers".to_owned()]).unwrap();
        let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["docs", "inline"]);
        assert_eq!(
            &CODEX[found[0].range.clone()],
            "[mcp_servers.docs]  # the docs\ncommand = \"npx\"  # runs it\nargs = [\"-y\", \"docs-mcp\"]\nstartup_timeout_sec = 20\n"
        );
        let keys: Vec<&str> = found[0]
            .props
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| p.key.as_str())
            .collect();
        assert_eq!(keys, ["command", "args", "startup_timeout_sec"]);
        assert_eq!(
            &CODEX[found[1].range.clone()],
            "{ command = \"uvx\", args = [\"x\"] }"
        );
    }

    #[test]
    fn a_rendered_table_keeps_raw_values() {
        let found = entries(CODEX, &["mcp_servers".to_owned()])
            .unwrap()
            .remove(0);
        let props = found.props.clone().unwrap();
        let outs = [
            Out::Set("command".into(), New::Str("lro".into())),
            Out::Set("args".into(), New::List(vec!["proxy".into(), "--".into()])),
            Out::Keep(2),
        ];
        assert_eq!(
            render(&found, &props, &outs),
            "[mcp_servers.docs]\ncommand = \"lro\"\nargs = [\"proxy\", \"--\"]\nstartup_timeout_sec = 20\n"
        );
    }

    #[test]
    fn a_bad_file_is_an_error() {
        assert!(matches!(
            entries("[mcp_servers\n", &["mcp_servers".to_owned()]),
            Err(Error::Parse(_))
        ));
        assert!(matches!(
            entries("mcp_servers = 1\n", &["mcp_servers".to_owned()]),
            Err(Error::Parse(_))
        ));
    }
}
