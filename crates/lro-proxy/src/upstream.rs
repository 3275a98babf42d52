//! Where the proxy forwards to: a command spawned as a stdio child, or a
//! streamable-HTTP URL.

use std::{ffi::OsString, fmt};

use http::{HeaderName, HeaderValue};

use crate::ProxyError;

/// The MCP server behind the proxy.
///
/// ```
/// use lro_proxy::Upstream;
///
/// let child = Upstream::command("python3", ["server.py"]);
/// assert_eq!(child.to_string(), "`python3 server.py`");
/// let remote = Upstream::http("https://mcp.example.com/mcp")
///     .unwrap()
///     .header("Authorization: Bearer ${TOKEN}", |_| Some("s3cret".into()))
///     .unwrap();
/// // Header values never appear in logs or errors.
/// assert!(!format!("{remote:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum Upstream {
    /// A command spawned once per client session; MCP over its stdin/stdout.
    Command {
        /// The program.
        program: OsString,
        /// Its arguments.
        args: Vec<OsString>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Headers sent with every request, values already expanded.
        headers: Vec<(HeaderName, HeaderValue)>,
    },
}

impl Upstream {
    /// A command spawned as a stdio child.
    pub fn command<I, A>(program: impl Into<OsString>, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        Self::Command {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }

    /// A streamable-HTTP endpoint.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Url`] when `url` is not an `http://` or `https://` URL.
    pub fn http(url: impl Into<String>) -> Result<Self, ProxyError> {
        let url = url.into();
        let parsed: http::Uri =
            url.parse()
                .map_err(|err: http::uri::InvalidUri| ProxyError::Url {
                    url: url.clone(),
                    reason: err.to_string(),
                })?;
        match parsed.scheme_str() {
            Some("http" | "https") if parsed.host().is_some() => Ok(Self::Http {
                url,
                headers: Vec::new(),
            }),
            _ => Err(ProxyError::Url {
                url,
                reason: "expected http://HOST/PATH or https://HOST/PATH".to_owned(),
            }),
        }
    }

    /// Adds a header given as `Name: value` to an HTTP upstream. `${VAR}` in
    /// the value is replaced by `env(VAR)`, so secrets can stay in the
    /// environment instead of a client's configuration file. A command
    /// upstream ignores headers.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Header`] for a malformed header or an unset variable;
    /// the message never contains the value.
    pub fn header(
        mut self,
        spec: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ProxyError> {
        let (name, value) = parse_header(spec, env)?;
        if let Self::Http { headers, .. } = &mut self {
            headers.push((name, value));
        }
        Ok(self)
    }
}

/// Parses `Name: value`, expanding `${VAR}` in the value.
fn parse_header(
    spec: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(HeaderName, HeaderValue), ProxyError> {
    let (name, raw) = spec.split_once(':').ok_or_else(|| ProxyError::Header {
        header: spec.to_owned(),
        reason: "expected `Name: value`".to_owned(),
    })?;
    let shown = format!("{}: …", name.trim());
    let bad = |reason: String| ProxyError::Header {
        header: shown.clone(),
        reason,
    };
    let name: HeaderName = name
        .trim()
        .parse()
        .map_err(|_| bad("not a valid header name".to_owned()))?;
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
            Self::Command { program, args } => {
                write!(f, "`{}", program.to_string_lossy())?;
                for arg in args {
                    write!(f, " {}", arg.to_string_lossy())?;
                }
                f.write_str("`")
            }
            Self::Http { url, .. } => f.write_str(url),
        }
    }
}

// Header values are secrets (bearer tokens); Debug shows only their names.
impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { program, args } => f
                .debug_struct("Command")
                .field("program", program)
                .field("args", args)
                .finish(),
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
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
    fn urls_must_be_http() {
        assert!(Upstream::http("http://127.0.0.1:1/mcp").is_ok());
        assert!(Upstream::http("ftp://host/x").is_err());
        assert!(Upstream::http("not a url").is_err());
    }
}
