//! The `Host` and `Origin` check every face runs (against DNS rebinding and
//! cross-site requests from a browser).
//!
//! - `Origin`, when a request carries one (browsers do), must be a loopback
//!   page (`http(s)://localhost`, `127.0.0.1` or `[::1]`, any port) or one
//!   of the origins the operator allowed (`--allow-origin`); else 403.
//!   Requests without `Origin` (MCP clients, curl) pass this part.
//! - `Host` must be a loopback name on a loopback address: a page on a
//!   rebound DNS name reaches a loopback server with its own name as
//!   `Host`. Beyond loopback with tokens, any `Host` passes: the page
//!   cannot send a token it does not know, and remote clients name the
//!   server as they reach it. Beyond loopback without tokens
//!   (`--allow-unauthenticated`), the address listened on is a valid
//!   `Host` too, when it is one address (not `0.0.0.0` or `::`).
//!
//! ```
//! use lro_http::origin::OriginPolicy;
//!
//! let policy = OriginPolicy::new("127.0.0.1:8080".parse()?, false)
//!     .allow_origins(["https://app.example.test"])?;
//! assert!(policy.allows_origin("http://localhost:3000"));
//! assert!(policy.allows_origin("https://app.example.test:443"));
//! assert!(!policy.allows_origin("https://evil.example.test"));
//! assert!(policy.allows_host("127.0.0.1:8080"));
//! assert!(!policy.allows_host("rebound.evil.test:8080"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::net::{IpAddr, SocketAddr};

use axum::body::Body;
use http::{Request, Uri, header, uri::Authority};

use crate::{check::Check, refusal::Refusal};

/// An origin the operator gave that is not `scheme://host[:port]`.
#[derive(Debug, thiserror::Error)]
#[error("--allow-origin {0}: expected scheme://host[:port], such as https://app.example.com")]
pub struct BadOrigin(pub String);

/// Which `Host` and `Origin` values a face accepts; see the module docs.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    any_host: bool,
    bind_host: Option<String>,
    origins: Vec<(String, String, u16)>,
}

impl OriginPolicy {
    /// The policy of a face bound to `bind`, with (`authenticated`) or
    /// without tokens. Defaults to loopback origins only.
    #[must_use]
    pub fn new(bind: SocketAddr, authenticated: bool) -> Self {
        let ip = bind.ip();
        let any_host = authenticated && !ip.is_loopback();
        let bind_host = (!ip.is_loopback() && !ip.is_unspecified()).then(|| match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        });
        Self {
            any_host,
            bind_host,
            origins: Vec::new(),
        }
    }

    /// Also accepts these browser origins (`scheme://host[:port]`; the
    /// scheme's port when none is given; `null` for `Origin: null`).
    ///
    /// # Errors
    ///
    /// [`BadOrigin`] for a value that is not an origin.
    pub fn allow_origins(
        mut self,
        origins: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<Self, BadOrigin> {
        for origin in origins {
            let origin = origin.as_ref();
            let parsed = if origin == "null" {
                Some(("null".to_owned(), String::new(), 0))
            } else {
                parse_origin(origin)
            };
            self.origins
                .push(parsed.ok_or_else(|| BadOrigin(origin.to_owned()))?);
        }
        Ok(self)
    }

    /// Whether a request with this `Origin` value passes.
    #[must_use]
    pub fn allows_origin(&self, origin: &str) -> bool {
        if origin == "null" {
            return self.origins.iter().any(|(s, _, _)| s == "null");
        }
        let Some(parsed) = parse_origin(origin) else {
            return false;
        };
        let (scheme, host, _) = &parsed;
        (matches!(scheme.as_str(), "http" | "https") && is_loopback_name(host))
            || self.origins.contains(&parsed)
    }

    /// Whether a request with this `Host` value (an authority) passes.
    #[must_use]
    pub fn allows_host(&self, host: &str) -> bool {
        if self.any_host {
            return true;
        }
        let Ok(authority) = host.parse::<Authority>() else {
            return false;
        };
        let name = authority.host().to_ascii_lowercase();
        is_loopback_name(&name) || self.bind_host.as_deref() == Some(name.as_str())
    }
}

/// `localhost`, `127.0.0.1` or `[::1]`.
fn is_loopback_name(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

/// `scheme://host[:port]` as (scheme, host, port), lower-cased, with the
/// scheme's default port; `None` when there is a path or no host.
fn parse_origin(text: &str) -> Option<(String, String, u16)> {
    let uri: Uri = text.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    if authority.as_str().contains('@') || !matches!(uri.path(), "" | "/") || uri.query().is_some()
    {
        return None;
    }
    let port = authority.port_u16().or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    })?;
    Some((scheme, authority.host().to_ascii_lowercase(), port))
}

impl Check for OriginPolicy {
    fn check(&self, request: &mut Request<Body>) -> Result<(), Refusal> {
        let headers = request.headers();
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| request.uri().authority().map(Authority::as_str));
        if !host.is_some_and(|h| self.allows_host(h)) {
            tracing::debug!("refused: Host is not a loopback name");
            return Err(Refusal::Forbidden(
                "Host must be a loopback name (localhost, 127.0.0.1 or [::1])".to_owned(),
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.allows_origin(origin) {
                tracing::debug!(origin, "refused: Origin not allowed");
                return Err(Refusal::Forbidden(format!(
                    "requests from origin {origin:?} are refused"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_pages_and_configured_origins_only() {
        let p = OriginPolicy::new(addr("127.0.0.1:1"), false);
        for ok in [
            "http://localhost",
            "https://127.0.0.1:9",
            "http://[::1]:80",
            "HTTP://LOCALHOST:1",
        ] {
            assert!(p.allows_origin(ok), "{ok}");
        }
        for bad in [
            "http://evil.test",
            "http://localhost.evil.test",
            "http://127.0.0.1.evil.test:80",
            "null",
            "",
            "file://localhost",
            "http://localhost/x",
        ] {
            assert!(!p.allows_origin(bad), "{bad}");
        }
        let p = p
            .allow_origins(["https://App.Example.test", "null"])
            .unwrap();
        assert!(p.allows_origin("https://app.example.test:443") && p.allows_origin("null"));
        assert!(
            !p.allows_origin("http://app.example.test"),
            "scheme and port count"
        );
        assert!(
            OriginPolicy::new(addr("127.0.0.1:1"), false)
                .allow_origins(["app.example"])
                .is_err()
        );
    }

    #[test]
    fn host_is_loopback_unless_authenticated() {
        let p = OriginPolicy::new(addr("127.0.0.1:1"), false);
        assert!(
            p.allows_host("localhost:1") && p.allows_host("[::1]:8") && p.allows_host("127.0.0.1")
        );
        assert!(
            !p.allows_host("evil.test:1") && !p.allows_host("127.0.0.2:1") && !p.allows_host("")
        );
        let open = OriginPolicy::new(addr("192.0.2.7:80"), false);
        assert!(open.allows_host("192.0.2.7:80") && !open.allows_host("evil.test"));
        assert!(!OriginPolicy::new(addr("0.0.0.0:80"), false).allows_host("192.0.2.7"));
        assert!(OriginPolicy::new(addr("0.0.0.0:80"), true).allows_host("mcp.example.test"));
        assert!(!OriginPolicy::new(addr("127.0.0.1:80"), true).allows_host("evil.test"));
    }
}
