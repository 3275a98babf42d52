//! One configured server, read from either format into the same model, and
//! the one decision made about it: wrap it (and how), leave it (and why), or
//! see that it is wrapped already.
//!
//! The model keeps every property's raw text, so that a wrapped entry keeps
//! what `lro install` does not understand (unknown keys, their values as
//! written) and only the properties it replaces are written anew.

use crate::client::Dialect;

/// A value as the decisions need it: strings, lists and maps of them, and
/// anything else only as "something".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Val {
    /// A string.
    Str(String),
    /// A list.
    List(Vec<Val>),
    /// A map, in written order.
    Map(Vec<(String, Val)>),
    /// A number, a boolean, null, a date.
    Other,
}

impl Val {
    fn as_str(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    fn strings(&self) -> Option<Vec<String>> {
        match self {
            Val::List(items) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => None,
        }
    }

    fn string_map(&self) -> Option<Vec<(String, String)>> {
        match self {
            Val::Map(items) => items
                .iter()
                .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect(),
            _ => None,
        }
    }
}

/// One property of an entry: its key, and its value both as written and as
/// read.
#[derive(Debug, Clone)]
pub(crate) struct Prop {
    /// The key, unquoted.
    pub key: String,
    /// The key as written (quotes included).
    pub raw_key: String,
    /// The value as written.
    pub raw_value: String,
    /// The value as read.
    pub value: Val,
}

/// A value `lro install` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum New {
    /// A string.
    Str(String),
    /// A list of strings.
    List(Vec<String>),
    /// A map of strings, in this order.
    Map(Vec<(String, String)>),
}

/// A string in double quotes with JSON's escapes, which are also TOML's
/// (serde_json never writes `\/`, the one JSON escape TOML lacks).
pub(crate) fn quote(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// `["a", "b"]`, in either format.
pub(crate) fn quoted_list(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| quote(s)).collect();
    format!("[{}]", items.join(", "))
}

/// One property of a wrapped entry: one kept as written, or one written anew.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Out {
    /// The entry's own property at this index, unchanged.
    Keep(usize),
    /// A property written by `lro install`.
    Set(String, New),
}

/// The command that runs `lro`: a program and the arguments before
/// `proxy` (none for the binary itself, `-y lro-mcp` for `npx -y lro-mcp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LroCommand {
    /// The program.
    pub program: String,
    /// Arguments before `proxy`.
    pub args: Vec<String>,
}

impl LroCommand {
    /// Splits a command line into words as a POSIX shell would, without
    /// expansions: `npx -y 'my package'` is `npx`, `-y`, `my package`.
    pub fn parse(line: &str) -> Option<Self> {
        let mut words = shell_words(line)?.into_iter();
        let program = words.next()?;
        Some(Self {
            program,
            args: words.collect(),
        })
    }

    /// Whether `command` and `args` run this `lro`'s (or any `lro`'s)
    /// proxy: the entry is wrapped already.
    fn runs_proxy(&self, command: &str, args: &[String]) -> bool {
        let mine = command == self.program
            && args.len() > self.args.len()
            && args[..self.args.len()] == self.args[..]
            && args[self.args.len()] == "proxy";
        let any_lro = std::path::Path::new(command)
            .file_name()
            .is_some_and(|n| n == "lro")
            && args.first().is_some_and(|a| a == "proxy");
        mine || any_lro
    }
}

/// Why an entry is left as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leave {
    /// It runs `lro proxy` already.
    Wrapped,
    /// The client authorizes it with OAuth, which `lro proxy` cannot carry.
    OAuth,
    /// A remote entry with no credentials in the file: the client may
    /// authorize it with OAuth.
    MaybeOAuth,
    /// A remote server over a transport `lro proxy --url` does not speak
    /// (legacy SSE, WebSocket).
    Transport(String),
    /// Not a form `lro install` reads (the reason).
    Unreadable(String),
}

impl std::fmt::Display for Leave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Leave::Wrapped => "already wrapped",
            Leave::OAuth => "authorized by the client with OAuth, which lro proxy cannot carry",
            Leave::MaybeOAuth => {
                "remote with no credentials in the file: the client may authorize it with OAuth, \
                 which lro proxy cannot carry (--only NAME wraps it anyway)"
            }
            Leave::Transport(kind) => {
                return write!(
                    f,
                    "{kind} transport (lro proxy --url speaks streamable HTTP)"
                );
            }
            Leave::Unreadable(why) => why,
        })
    }
}

/// What to do with one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Write it as these properties.
    Wrap(Vec<Out>),
    /// Leave it.
    Leave(Leave),
}

/// Decides about one entry.
///
/// `forced` is true when the user named the entry with `--only`, which
/// wraps a remote entry with no credentials too.
pub(crate) fn decide(
    props: &[Prop],
    dialect: &Dialect,
    lro: &LroCommand,
    forced: bool,
) -> Decision {
    let get = |key: &str| props.iter().position(|p| p.key == key);
    let str_of = |key: &str| get(key).and_then(|i| props[i].value.as_str());

    if dialect.oauth_keys.iter().any(|k| get(k).is_some()) {
        return Decision::Leave(Leave::OAuth);
    }
    if let Some(command) = str_of("command") {
        let args = match get("args") {
            None => Vec::new(),
            Some(i) => match props[i].value.strings() {
                Some(args) => args,
                None => return unreadable("its args are not a list of strings"),
            },
        };
        if lro.runs_proxy(command, &args) {
            return Decision::Leave(Leave::Wrapped);
        }
        return Decision::Wrap(wrap_stdio(props, lro, command, args));
    }
    if get("command").is_some() {
        return unreadable("its command is not a string");
    }
    if let Some(kind) = str_of("type")
        && dialect.other_transports.contains(&kind)
    {
        return Decision::Leave(Leave::Transport(kind.to_owned()));
    }
    let Some((url_key, url)) = dialect
        .url_keys
        .iter()
        .find_map(|k| str_of(k).map(|u| (*k, u)))
    else {
        return unreadable("neither a command nor a URL");
    };
    wrap_http(props, dialect, lro, url_key, url, forced)
}

fn unreadable(why: &str) -> Decision {
    Decision::Leave(Leave::Unreadable(why.to_owned()))
}

/// `command` becomes `lro`, `args` become `proxy -- COMMAND ARGS…`; every
/// other property (env, cwd, type, the client's own keys) stays as written.
fn wrap_stdio(props: &[Prop], lro: &LroCommand, command: &str, args: Vec<String>) -> Vec<Out> {
    let mut new_args = lro.args.clone();
    new_args.extend(["proxy".to_owned(), "--".to_owned(), command.to_owned()]);
    new_args.extend(args);
    let mut out = Vec::with_capacity(props.len() + 1);
    let has_args = props.iter().any(|p| p.key == "args");
    for (i, p) in props.iter().enumerate() {
        match p.key.as_str() {
            "command" => {
                out.push(Out::Set("command".into(), New::Str(lro.program.clone())));
                if !has_args {
                    out.push(Out::Set("args".into(), New::List(new_args.clone())));
                }
            }
            "args" => out.push(Out::Set("args".into(), New::List(new_args.clone()))),
            _ => out.push(Out::Keep(i)),
        }
    }
    out
}

/// The URL becomes `lro proxy --url URL`, each header a `--header` whose
/// value is taken from a variable of the entry's environment, so that no
/// secret shows in a process list.
fn wrap_http(
    props: &[Prop],
    dialect: &Dialect,
    lro: &LroCommand,
    url_key: &str,
    url: &str,
    forced: bool,
) -> Decision {
    let mut headers: Vec<(String, String)> = Vec::new();
    // Header name, a prefix, and the variable of the client's environment
    // that holds the rest of its value (Codex's env_http_headers and
    // bearer_token_env_var).
    let mut from_client_env: Vec<(String, &str, String)> = Vec::new();
    for p in props {
        if dialect.header_keys.contains(&p.key.as_str()) {
            match p.value.string_map() {
                Some(map) => headers.extend(map),
                None => return unreadable("its headers are not a map of strings"),
            }
        } else if dialect.env_header_keys.contains(&p.key.as_str()) {
            match p.value.string_map() {
                Some(map) => from_client_env.extend(map.into_iter().map(|(h, v)| (h, "", v))),
                None => return unreadable("its headers are not a map of strings"),
            }
        } else if dialect.bearer_env_keys.contains(&p.key.as_str()) {
            match p.value.as_str() {
                Some(var) => {
                    from_client_env.push(("Authorization".into(), "Bearer ", var.to_owned()));
                }
                None => return unreadable("its bearer token variable is not a string"),
            }
        }
    }
    if headers.is_empty() && from_client_env.is_empty() && !forced {
        return Decision::Leave(Leave::MaybeOAuth);
    }

    let mut args = lro.args.clone();
    args.extend(["proxy".to_owned(), "--url".to_owned(), url.to_owned()]);
    let mut env: Vec<(String, String)> = match props.iter().find(|p| p.key == "env") {
        Some(p) => match p.value.string_map() {
            Some(env) => env,
            None => return unreadable("its env is not a map of strings"),
        },
        None => Vec::new(),
    };
    for (name, value) in &headers {
        let var = variable_for(name, &env);
        args.extend(["--header".to_owned(), dialect.header_arg(name, "", &var)]);
        env.push((var, value.clone()));
    }
    let mut pass_through: Vec<String> = Vec::new();
    for (name, prefix, var) in &from_client_env {
        args.extend(["--header".to_owned(), dialect.header_arg(name, prefix, var)]);
        pass_through.push(var.clone());
    }

    let drop = |key: &str| {
        key == url_key
            || key == "env"
            || dialect.header_keys.contains(&key)
            || dialect.env_header_keys.contains(&key)
            || dialect.bearer_env_keys.contains(&key)
            || (dialect.pass_env_key == Some(key) && !pass_through.is_empty())
    };
    let mut out = Vec::with_capacity(props.len() + 3);
    for (i, p) in props.iter().enumerate() {
        if p.key == url_key {
            out.push(Out::Set("command".into(), New::Str(lro.program.clone())));
            out.push(Out::Set("args".into(), New::List(args.clone())));
        } else if p.key == "type" {
            out.push(Out::Set("type".into(), New::Str("stdio".into())));
        } else if !drop(&p.key) {
            out.push(Out::Keep(i));
        }
    }
    if !env.is_empty() {
        out.push(Out::Set("env".into(), New::Map(env)));
    }
    if let Some(key) = dialect.pass_env_key
        && !pass_through.is_empty()
    {
        let mut names = props
            .iter()
            .find(|p| p.key == key)
            .and_then(|p| p.value.strings())
            .unwrap_or_default();
        for var in pass_through {
            if !names.contains(&var) {
                names.push(var);
            }
        }
        out.push(Out::Set(key.to_owned(), New::List(names)));
    }
    Decision::Wrap(out)
}

/// `LRO_HEADER_AUTHORIZATION` for `Authorization`, with a number added when
/// the entry's environment has that name already.
fn variable_for(header: &str, env: &[(String, String)]) -> String {
    let base: String = header
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let base = format!("LRO_HEADER_{base}");
    let taken = |name: &str| env.iter().any(|(k, _)| k == name);
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}_{n}"))
        .find(|name| !taken(name))
        .unwrap_or(base)
}

/// A command line split into words: single and double quotes and
/// backslashes as a POSIX shell reads them; `None` for an unclosed quote.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => w.push(c),
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_as_a_shell_splits_them() {
        let lro = LroCommand::parse(r#"npx -y 'my pkg' "a \"b\"" c\ d"#).unwrap();
        assert_eq!(lro.program, "npx");
        assert_eq!(lro.args, ["-y", "my pkg", "a \"b\"", "c d"]);
        assert_eq!(LroCommand::parse("npx 'open"), None);
        assert_eq!(LroCommand::parse("   "), None);
    }

    #[test]
    fn a_header_variable_never_takes_a_name_the_entry_has() {
        let env = vec![("LRO_HEADER_X_API_KEY".to_owned(), "v".to_owned())];
        assert_eq!(variable_for("X-Api-Key", &env), "LRO_HEADER_X_API_KEY_2");
        assert_eq!(
            variable_for("Authorization", &env),
            "LRO_HEADER_AUTHORIZATION"
        );
    }
}
