//! The MCP server a client of this project reaches: a command launched
//! over stdio, or a streamable-HTTP URL with the headers sent to it.
//!
//! `lro proxy` forwards to one (its upstream), `lro audit` judges one (its
//! target): both take the same description, parsed the same way, shown the
//! same way with its secrets left out. It is a description only: launching
//! and connecting are each client's own, and so is every judgement (the
//! auditor shares none with what it judges).
//!
//! ```
//! use lro_upstream::Upstream;
//!
//! let child = Upstream::command("python3", ["server.py"]).env("LEVEL", "debug");
//! assert_eq!(child.to_string(), "`python3 server.py`");
//! let remote = Upstream::http("https://mcp.example.com/mcp")
//!     .unwrap()
//!     .header("Authorization: Bearer ${TOKEN}", |_| Some("s3cret".into()))
//!     .unwrap();
//! // Header values never appear in logs or errors.
//! assert!(!format!("{remote:?}").contains("s3cret"));
//! ```

use std::{ffi::OsString, fmt};

use http::{HeaderName, HeaderValue};

/// An MCP server to reach.
///
/// Not `#[non_exhaustive]`: the proxy and the auditor each reach every kind,
/// so a new kind should fail their builds until they do.
#[derive(Clone)]
pub enum Upstream {
    /// A command launched as a child; MCP over its stdin/stdout.
    Command {
        /// The program.
        program: OsString,
        /// Its arguments.
        args: Vec<OsString>,
        /// Environment variables set for it, beyond those it inherits.
        env: Vec<(OsString, OsString)>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Headers sent with every request, values already expanded.
        headers: Vec<(HeaderName, HeaderValue)>,
    },
}

/// Why an upstream cannot be described as given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// A header is not `Name: value`, or names an unset variable.
    #[error("invalid header `{header}`: {reason}")]
    Header {
        /// The header as given, with its value elided.
        header: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The URL is not an `http` or `https` URL.
    #[error("invalid upstream URL `{url}`: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl Upstream {
    /// A command launched as a stdio child.
    pub fn command<I, A>(program: impl Into<OsString>, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        Self::Command {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }

    /// A streamable-HTTP endpoint.
    ///
    /// # Errors
    ///
    /// [`UpstreamError::Url`] when `url` is not an `http://` or `https://`
    /// URL.
    pub fn http(url: impl Into<String>) -> Result<Self, UpstreamError> {
        let url = url.into();
        let parsed: http::Uri =
            url.parse()
                .map_err(|err: http::uri::InvalidUri| UpstreamError::Url {
                    url: url.clone(),
                    reason: err.to_string(),
                })?;
        match parsed.scheme_str() {
            Some("http" | "https") if parsed.host().is_some() => Ok(Self::Http {
                url,
                headers: Vec::new(),
            }),
            _ => Err(UpstreamError::Url {
                url,
                reason: "expected http://HOST/PATH or https://HOST/PATH".to_owned(),
            }),
        }
    }

    /// Adds an environment variable for a command; an HTTP upstream
    /// ignores it. Defaults to none beyond the inherited environment.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        if let Self::Command { env, .. } = &mut self {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Adds a header given as `Name: value` to an HTTP upstream. `${VAR}` in
    /// the value is replaced by `env(VAR)`, so secrets can stay in the
    /// environment instead of a client's configuration file. A command
    /// upstream ignores headers.
    ///
    /// Defaults to no headers beyond the transport's own.
    ///
    /// # Errors
    ///
    /// [`UpstreamError::Header`] for a malformed header or an unset
    /// variable; the message never contains the value.
    pub fn header(
        mut self,
        spec: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, UpstreamError> {
        let (name, value) = parse_header(spec, env)?;
        if let Self::Http { headers, .. } = &mut self {
            if headers.iter().any(|(n, _)| *n == name) {
                return Err(UpstreamError::Header {
                    header: format!("{name}: …"),
                    reason: "given twice; give one value".to_owned(),
                });
            }
            headers.push((name, value));
        }
        Ok(self)
    }

    /// Whether it is a command the client launches (and so configures and
    /// hears on stderr), not a server that runs already.
    pub fn is_launched(&self) -> bool {
        matches!(self, Self::Command { .. })
    }
}

/// Headers the streamable-HTTP transport sets itself; rmcp refuses a
/// custom one of these names at the first request.
const RESERVED_HEADERS: [&str; 5] = [
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// `url` with its user info and query replaced by `…`: they may hold
/// credentials, and URLs end up in logs and in errors the client sees.
fn redact_url(url: &str) -> String {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return url.to_owned();
    };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return url.to_owned();
    };
    let host = match authority.as_str().rsplit_once('@') {
        Some((_, host)) => format!("…@{host}"),
        None => authority.to_string(),
    };
    let query = if uri.query().is_some() { "?…" } else { "" };
    format!("{scheme}://{host}{}{query}", uri.path())
}

/// `text` with every `http(s)://` URL in it redacted: user info and query
/// replaced by `…`, as an [`Upstream`] shows its own URL.
pub fn redact_urls(text: &str) -> String {
    text.split_inclusive(char::is_whitespace)
        .map(|word| {
            let trimmed = word.trim_end();
            match trimmed.find("http://").or_else(|| trimmed.find("https://")) {
                Some(at) => {
                    let end = trimmed[at..]
                        .find(['"', '\'', ')', '>', ','])
                        .map_or(trimmed.len(), |e| at + e);
                    format!(
                        "{}{}{}{}",
                        &trimmed[..at],
                        redact_url(&trimmed[at..end]),
                        &trimmed[end..],
                        &word[trimmed.len()..]
                    )
                }
                None => word.to_owned(),
            }
        })
        .collect()
}

/// Parses `Name: value`, expanding `${VAR}` in the value.
fn parse_header(
    spec: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(HeaderName, HeaderValue), UpstreamError> {
    // The spec may be a bare secret (the name forgotten): never echo it.
    let (name, raw) = spec.split_once(':').ok_or_else(|| UpstreamError::Header {
        header: "…".to_owned(),
        reason: "expected `Name: value`".to_owned(),
    })?;
    let shown = format!("{}: …", name.trim());
    let bad = |reason: String| UpstreamError::Header {
        header: shown.clone(),
        reason,
    };
    let name: HeaderName = name
        .trim()
        .parse()
        .map_err(|_| bad("not a valid header name".to_owned()))?;
    if RESERVED_HEADERS.contains(&name.as_str()) {
        return Err(bad("the MCP transport sets this header itself".to_owned()));
    }
    let mut value = String::new();
    let mut rest = raw.trim();
    while let Some(start) = rest.find("${") {
        value.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| bad("`${` without a closing `}`".to_owned()))?;
        let var = &after[..end];
        let found =
            env(var).ok_or_else(|| bad(format!("environment variable {var} is not set")))?;
        value.push_str(&found);
        rest = &after[end + 1..];
    }
    value.push_str(rest);
    let mut value = HeaderValue::from_str(&value)
        .map_err(|_| bad("the value is not a valid header value".to_owned()))?;
    value.set_sensitive(true);
    Ok((name, value))
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { program, args, .. } => {
                write!(f, "`{}", program.to_string_lossy())?;
                for arg in args {
                    write!(f, " {}", arg.to_string_lossy())?;
                }
                f.write_str("`")
            }
            Self::Http { url, .. } => f.write_str(&redact_url(url)),
        }
    }
}

// Header and environment values may be secrets (bearer tokens); Debug shows
// only their names.
impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { program, args, env } => f
                .debug_struct("Command")
                .field("program", program)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .finish(),
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &redact_url(url))
                .field(
                    "headers",
                    &headers.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
                )
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        (var == "TOKEN").then(|| "abc".to_owned())
    }

    #[test]
    fn headers_expand_variables_and_hide_values() {
        let (name, value) = parse_header("Authorization: Bearer ${TOKEN}", env).unwrap();
        assert_eq!(name, "authorization");
        assert_eq!(value, "Bearer abc");
        assert!(value.is_sensitive());
        let (_, plain) = parse_header("X-Team: a${TOKEN}b${TOKEN}", env).unwrap();
        assert_eq!(plain, "aabcbabc");
    }

    #[test]
    fn header_errors_name_the_problem_but_not_the_value() {
        let err = parse_header("Authorization: Bearer ${MISSING}", env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid header `Authorization: …`: environment variable MISSING is not set"
        );
        let err = parse_header("no colon here", env).unwrap_err();
        assert!(err.to_string().contains("expected `Name: value`"));
        let err = parse_header("X: ${UNCLOSED", env).unwrap_err();
        assert!(err.to_string().contains("closing"));
        assert!(parse_header("Bad Name: v", env).is_err());
    }

    #[test]
    fn urls_never_show_credentials() {
        let up = Upstream::http("https://user:pw@mcp.example.com:8443/mcp?api_key=s3cret").unwrap();
        assert_eq!(up.to_string(), "https://…@mcp.example.com:8443/mcp?…");
        assert!(!format!("{up:?}").contains("s3cret"));
        assert_eq!(
            redact_urls("error sending request for url (https://u:p@h/mcp?k=v): refused"),
            "error sending request for url (https://…@h/mcp?…): refused"
        );
        assert_eq!(
            redact_urls("plain http://127.0.0.1:9/mcp text"),
            "plain http://127.0.0.1:9/mcp text"
        );
    }

    #[test]
    fn reserved_and_repeated_headers_are_refused() {
        assert!(parse_header("Mcp-Session-Id: x", env).is_err());
        assert!(parse_header("Accept: */*", env).is_err());
        let twice = Upstream::http("http://127.0.0.1:1/mcp")
            .unwrap()
            .header("X-A: 1", env)
            .unwrap()
            .header("x-a: 2", env);
        assert!(twice.unwrap_err().to_string().contains("given twice"));
        let bare = parse_header("ghp_s3cret", env).unwrap_err().to_string();
        assert!(!bare.contains("s3cret"), "{bare}");
    }

    #[test]
    fn environment_values_stay_out_of_debug() {
        let up = Upstream::command("python3", ["server.py"]).env("SECRET", "s3cret");
        assert!(up.is_launched());
        assert_eq!(up.to_string(), "`python3 server.py`");
        let shown = format!("{up:?}");
        assert!(
            shown.contains("SECRET") && !shown.contains("s3cret"),
            "{shown}"
        );
        let url = Upstream::http("http://127.0.0.1:1/mcp")
            .unwrap()
            .env("A", "b");
        assert!(!url.is_launched());
    }

    #[test]
    fn urls_must_be_http() {
        assert!(Upstream::http("http://127.0.0.1:1/mcp").is_ok());
        assert!(Upstream::http("ftp://host/x").is_err());
        assert!(Upstream::http("not a url").is_err());
    }
}
