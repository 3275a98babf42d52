//! lro-core is the protocol as data and functions: it touches no file
//! system. Its code outside unit tests names no `std::fs` (nor
//! `std::os::unix::fs`), `cap_std`, `cap_fs_ext` or `rustix`, and calls no
//! `File::open` or `File::create`; files are lro-store's. Configuration
//! loading through figment, which reads the file itself, may stay.
//!
//! Read from the source: comments, string and character literals and
//! `#[cfg(test)]` items are left out, `use` trees are expanded, so
//! `use std::{fs, io}` is seen as `std::fs`.

mod support;

use std::path::Path;

use support::rust_files;

/// What lro-core's code may not name.
const FORBIDDEN: [&str; 4] = ["std::fs", "std::os::unix::fs", "cap_std", "cap_fs_ext"];
/// Crates and calls lro-core's code may not name anywhere in a path.
const FORBIDDEN_ANYWHERE: [&str; 3] = ["rustix", "File::open", "File::create"];

/// `text` without comments, string and character literals (each left as
/// `""`), and with every `#[cfg(test)]` item cut out.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let starts = |s: &str| rest.iter().take(s.len()).copied().eq(s.chars());
        if starts("//") {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if starts("/*") {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if raw_string_at(&chars, i) {
            let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            i += 2 + hashes;
            while i < chars.len()
                && !chars[i..]
                    .iter()
                    .take(close.len())
                    .copied()
                    .eq(close.chars())
            {
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
        } else if chars[i] == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if chars[i] == '\''
            && (chars.get(i + 1) == Some(&'\\') || chars.get(i + 2) == Some(&'\''))
        {
            // A character literal; `'a` alone is a lifetime.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    without_test_items(&out)
}

/// Whether a raw string (`r"…"`, `r#"…"#`, `br"…"`) starts at `i`: not a
/// raw identifier (`r#type`) nor the end of another one.
fn raw_string_at(chars: &[char], i: usize) -> bool {
    let prev = i.checked_sub(1).map(|p| chars[p]);
    let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
    chars[i] == 'r'
        && chars.get(i + 1 + hashes) == Some(&'"')
        && prev.is_none_or(|c| c == 'b' || !(c.is_ascii_alphanumeric() || c == '_'))
}

/// `code` with each `#[cfg(test)]` item (its attributes, then up to its
/// `;` or through its `{ ... }` block) cut out.
fn without_test_items(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Every path `code` names: the paths of its `use` trees, expanded, and
/// every other run of `::`-joined identifiers, each with spaces removed.
fn paths(code: &str) -> Vec<String> {
    let squeezed: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let tight = squeezed
        .replace(" ::", "::")
        .replace(":: ", "::")
        .replace("::{ ", "::{")
        .replace(" }", "}")
        .replace(", ", ",");
    let mut out = Vec::new();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(found) = tight[from..].find(|c: char| is_ident(c)) {
        let start = from + found;
        let mut end = start;
        let bytes = tight.as_bytes();
        loop {
            while end < tight.len() && is_ident(bytes[end] as char) {
                end += 1;
            }
            if tight[end..].starts_with("::{") {
                let group = &tight[end + 3..];
                let close = closing(group);
                for inner in expand(&group[..close]) {
                    out.push(format!("{}::{inner}", &tight[start..end]));
                }
                end += 3 + close + 1;
                break;
            }
            if tight[end..].starts_with("::") {
                end += 2;
                continue;
            }
            break;
        }
        out.push(tight[start..end].to_owned());
        from = end.max(start + 1);
    }
    out
}

/// Where the group that `group` opens closes.
fn closing(group: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    group.len()
}

/// The paths of a use group's inside: `fs,io::{Read,Write}` is `fs`,
/// `io::Read`, `io::Write`.
fn expand(group: &str) -> Vec<String> {
    let mut items = Vec::new();
    let (mut depth, mut from) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[from..]);
    let mut out = Vec::new();
    for item in items.into_iter().map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once("::{") {
            Some((head, tail)) => {
                let tail = &tail[..closing(tail)];
                out.extend(expand(tail).into_iter().map(|p| format!("{head}::{p}")));
            }
            None => out.push(item.split(' ').next().unwrap_or(item).to_owned()),
        }
    }
    out
}

/// What `text`, a source file of lro-core, names that it may not.
fn violations(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for path in paths(&code_only(text)) {
        let under = |prefix: &str| {
            path == prefix
                || path.starts_with(&format!("{prefix}::"))
                || path.starts_with(&format!("::{prefix}"))
        };
        let named = FORBIDDEN.iter().find(|f| under(f)).or_else(|| {
            FORBIDDEN_ANYWHERE.iter().find(|f| {
                path.split("::")
                    .collect::<Vec<_>>()
                    .windows(f.split("::").count())
                    .any(|w| w.join("::") == **f)
            })
        });
        if let Some(name) = named {
            found.push(format!("{name} (in `{path}`)"));
        }
    }
    found
}

#[test]
fn lro_core_touches_no_file_system() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lro-core/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "{files:?}");
    let mut bad = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for v in violations(&text) {
            bad.push(format!(
                "{}: {v}",
                file.strip_prefix(&src).unwrap().display()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "lro-core does I/O (move it to lro-store):\n{}",
        bad.join("\n")
    );
}

#[test]
fn a_planted_violation_is_found() {
    for (planted, named) in [
        ("use std::fs;", "std::fs"),
        ("use std::{\n    fs,\n    io,\n};", "std::fs"),
        ("use std::{io, fs::File as F};", "std::fs"),
        (
            "fn f() { std::fs::write(\"a\", \"b\").unwrap(); }",
            "std::fs",
        ),
        (
            "use std::os::unix::fs::PermissionsExt as _;",
            "std::os::unix::fs",
        ),
        ("use cap_std::fs::Dir;", "cap_std"),
        ("use cap_fs_ext::DirExt as _;", "cap_fs_ext"),
        (
            "fn uid() -> u32 { rustix::process::geteuid().as_raw() }",
            "rustix",
        ),
        ("fn f() { let _ = File::open(p); }", "File::open"),
        ("fn f() { let _ = std::fs::File::create(p); }", "std::fs"),
        ("fn f() { let _ = File :: create(p); }", "File::create"),
    ] {
        let found = violations(planted);
        assert!(
            found.iter().any(|v| v.starts_with(named)),
            "{planted:?}: {found:?}"
        );
    }
    // Tests, comments and strings may name them; `io` and lookalikes are fine.
    for clean in [
        "#[cfg(test)]\nmod tests {\n    use std::fs;\n    fn f() { fs::write(\"a\", \"{\").unwrap(); }\n}",
        "#[cfg(test)]\n#[path = \"x.rs\"]\nmod sink;\nfn g() {}",
        "// std::fs::write\n/* cap_std */ fn f() {}",
        "const S: &str = \"use std::fs;\"; const C: char = '\"'; fn f<'a>(x: &'a str) {}",
        "const R: &str = r#\"std::fs \"quoted\"\"#; fn r#type() {}",
        "use std::{io::{self, Write}, path::Path}; fn f(w: &mut dyn Write) {}",
        "use crate::file::OffloadFileName; fn open(f: &mystd::fs::X) {}",
    ] {
        assert_eq!(violations(clean), Vec::<String>::new(), "{clean:?}");
    }
}
