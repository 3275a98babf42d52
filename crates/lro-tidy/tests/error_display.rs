//! One error convention, as axum-core and `lro_host::HostError` keep it: an
//! error's cause is reached through `source()` only, never printed in its
//! `Display` too, so that `lro_core::error::chain` prints every level once.
//!
//! Read from the source of every crate and example: no `#[error("…")]`
//! interpolates, in its format string or its arguments, the field that is
//! the variant's source (named `source`, or marked `#[source]` or
//! `#[from]`). `#[error(transparent)]` forwards both and is fine.

mod support;

use std::path::PathBuf;

use support::rust_files;

/// The repository root.
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text from `open` (a `(`, `{` or `[` at `text[at]`) to its match,
/// without the brackets; string and char literals and comments are skipped.
fn balanced(text: &str, at: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = at;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'{' | b'[' => depth += 1,
            b')' | b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[at + 1..i]);
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                i += 3;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where the string literal that `text` starts with ends (past its closing
/// quote).
fn balanced_str(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'"' => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// `text` cut at its top-level commas.
fn split_top(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut from, mut in_str) = (0i32, 0usize, false);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_str {
            match c {
                b'\\' => i += 1,
                b'"' => in_str = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_str = true,
                // A comment's commas are not the fields'.
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    while i + 1 < bytes.len() && bytes[i + 1] != b'\n' {
                        i += 1;
                    }
                }
                b'(' | b'{' | b'[' | b'<' => depth += 1,
                b')' | b'}' | b']' | b'>' => depth -= 1,
                b',' if depth == 0 => {
                    parts.push(&text[from..i]);
                    from = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    parts.push(&text[from..]);
    parts.retain(|p| !p.trim().is_empty());
    parts
}

/// The name of the field that is the source, in the body of a struct or
/// variant (`{ … }` named, `( … )` by position): the one marked
/// `#[source]` or `#[from]`, else the one named `source`.
fn source_field(body: &str, named: bool) -> Option<String> {
    let mut by_name = None;
    for (index, field) in split_top(body).into_iter().enumerate() {
        let mut rest = field.trim_start();
        let mut marked = false;
        loop {
            if rest.starts_with("///") || rest.starts_with("//") {
                rest = rest[rest.find('\n').map_or(rest.len(), |n| n + 1)..].trim_start();
            } else if rest.starts_with("#[") {
                let attr = balanced(rest, 1).unwrap();
                marked |= attr == "source" || attr == "from";
                rest = rest[attr.len() + 3..].trim_start();
            } else {
                break;
            }
        }
        let name = if named {
            let rest = match rest.strip_prefix("pub") {
                Some(r) if r.starts_with('(') => &r[r.find(')').unwrap() + 1..],
                Some(r) if r.starts_with(char::is_whitespace) => r,
                _ => rest,
            };
            rest.trim_start()
                .split(':')
                .next()
                .unwrap()
                .trim()
                .to_owned()
        } else {
            index.to_string()
        };
        if marked {
            return Some(name);
        }
        if name == "source" {
            by_name = Some(name);
        }
    }
    by_name
}

/// Whether the `#[error(…)]` arguments interpolate `field`: `{field}` or
/// `{field:…}` in the format string, `field`, `.field` or `*.field` among
/// the arguments after it.
fn interpolates(args: &str, field: &str) -> bool {
    let args = args.trim();
    if args == "transparent" {
        return false;
    }
    // The format string is the first literal; the arguments follow it.
    let Some(end) = args.starts_with('"').then(|| balanced_str(args)).flatten() else {
        return false;
    };
    let (format, rest) = args.split_at(end);
    let in_format = format.match_indices('{').any(|(at, _)| {
        let after = &format[at + 1..];
        !format[..at].ends_with('{')
            && after.starts_with(field)
            && after[field.len()..].starts_with(['}', ':'])
    });
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let in_args = rest.match_indices(field).any(|(at, _)| {
        let before = rest[..at].chars().next_back();
        let after = rest[at + field.len()..].chars().next();
        !before.is_some_and(is_ident)
            && !after.is_some_and(is_ident)
            // A positional field is written `.0`; a bare digit is a
            // literal.
            && (before == Some('.') || !field.starts_with(|c: char| c.is_ascii_digit()))
    });
    in_format || in_args
}

/// Every `#[error(…)]` in `text` that interpolates its item's source, as
/// `item: arguments`.
fn violations(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("#[error(") {
        let Some(args) = balanced(text, at + 7) else {
            panic!("an #[error( that does not close: {}", &text[at..]);
        };
        // The item the attribute is on: past further attributes and the
        // `struct`/`enum` keywords, its name, then its fields.
        let mut rest = text[at + 7 + args.len() + 3..].trim_start();
        while rest.starts_with("#[") || rest.starts_with("//") {
            rest = if rest.starts_with("//") {
                &rest[rest.find('\n').unwrap() + 1..]
            } else {
                &rest[balanced(rest, 1).unwrap().len() + 3..]
            }
            .trim_start();
        }
        // Past a `pub(crate)`, whose parenthesis is not the fields'.
        if let Some(r) = rest.strip_prefix("pub(") {
            rest = &r[r.find(')').unwrap() + 1..];
        }
        let head_end = rest.find(['{', '(', ',', ';', '}']).unwrap();
        let head = rest[..head_end].trim();
        let name = head.split_whitespace().last().unwrap_or(head);
        let body = match rest.as_bytes()[head_end] {
            open @ (b'{' | b'(') => Some((balanced(rest, head_end).unwrap(), open == b'{')),
            _ => None,
        };
        if let Some((body, named)) = body
            && let Some(field) = source_field(body, named)
            && interpolates(args, &field)
        {
            found.push(format!("{name}: #[error({})]", args.trim()));
        }
    }
    found
}

#[test]
fn no_error_prints_its_source() {
    let mut files = Vec::new();
    for group in ["crates", "examples"] {
        rust_files(&repo().join(group), &mut files);
    }
    // This file's samples break the rule on purpose.
    files.retain(|f| !f.starts_with(repo().join("crates/lro-tidy")));
    files.sort();
    let mut found = Vec::new();
    let mut seen = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        seen += text.matches("#[error(").count();
        for v in violations(&text) {
            found.push(format!(
                "{}: {v}",
                file.strip_prefix(repo()).unwrap().display()
            ));
        }
    }
    assert!(seen > 50, "the check sees the workspace's errors ({seen})");
    assert!(
        found.is_empty(),
        "these errors print their source in Display too; leave it to \
         `source()` (lro_core::error::chain prints it):\n{}",
        found.join("\n")
    );
}

/// The check sees each way a cause is written into a message, and lets
/// alone what only looks like one.
#[test]
fn the_check_tells_a_printed_source_from_a_kept_one() {
    let bad = r#"
        enum E {
            /// Named.
            #[error("cannot open {path}: {source}")]
            Open { path: String, source: io::Error },
            #[error("{upstream} did not start: {source}")]
            Start {
                upstream: String,
                /// What happened instead: its error, its exit status, or
                /// the timeout.
                #[source]
                source: Box<dyn Error>,
            },
            #[error("cannot read: {0}")]
            Read(#[from] io::Error),
            #[error("cannot parse {}: {}", .0, .1)]
            Parse(String, #[source] Box<dyn Error>),
            #[error("bad {key}: {}", cause.kind)]
            Key {
                key: String,
                #[source]
                cause: figment::Error,
            },
        }
        #[derive(thiserror::Error)]
        #[error("{inner:?}")]
        pub(crate) struct S {
            #[from]
            pub(crate) inner: Box<dyn Error>,
        }
    "#;
    let found = violations(bad);
    assert_eq!(found.len(), 6, "{found:#?}");
    let good = r#"
        enum E {
            #[error("cannot open {path}")]
            Open { path: String, source: io::Error },
            #[error(transparent)]
            Read(#[from] io::Error),
            #[error("cannot parse {0} ({} bytes, {{1}})", .0.len())]
            Parse(String, #[source] Box<dyn Error>),
            #[error("{0} files failed")]
            Count(usize),
            #[error("cannot store {source_name}")]
            Store { source_name: String, #[source] err: io::Error },
        }
    "#;
    assert_eq!(violations(good), Vec::<String>::new());
}
