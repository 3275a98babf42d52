//! Who is calling: the extension point that gives the layer the caller's
//! [`Principal`] on every request.
//!
//! The layer never authenticates anyone. The transport does (a bearer
//! token, OAuth claims, mTLS), and a [`PrincipalSource`] reads what it
//! found from the MCP request context. Every offload is written into the
//! principal's own folder, and `lro_extract` reads only from it. A session
//! is never a principal: a client that reconnects is the same principal,
//! and still reads its results.
//!
//! Three sources come with the crate:
//!
//! - [`FromHttpRequest`] (the default): the [`Principal`] an HTTP
//!   middleware put into the request's extensions. rmcp's streamable-HTTP
//!   server hands every request's [`http::request::Parts`] to the handler,
//!   in stateful and stateless mode alike; no `Parts` (stdio) or no
//!   `Principal` in them (HTTP without authentication) means anonymous.
//! - `()`: always [`Principal::anonymous`].
//! - any closure `Fn(&RequestContext<RoleServer>) -> Principal`.
//!
//! ```
//! use lro_core::{OffloadConfig, principal::Principal};
//! use lro_tower::{LroLayer, principal::FromHttpRequest};
//! use rmcp::{RoleServer, model::Extensions, service::RequestContext};
//!
//! // The default: what the HTTP face inserted after checking a token.
//! let layer = LroLayer::new(OffloadConfig::default()).principal(FromHttpRequest);
//! // A single-user server: everyone is anonymous.
//! let layer = layer.principal(());
//! // Anything else the request carries, e.g. a header set by a trusted proxy.
//! let layer = layer.principal(|cx: &RequestContext<RoleServer>| {
//!     cx.extensions
//!         .get::<http::request::Parts>()
//!         .and_then(|p| p.headers.get("x-user"))
//!         .and_then(|v| v.to_str().ok())
//!         .map_or_else(Principal::anonymous, Principal::new)
//! });
//! # let _ = layer;
//! ```

use lro_core::principal::Principal;
use rmcp::{RoleServer, model::Extensions, service::RequestContext};

/// Yields the caller's [`Principal`] from one MCP request.
///
/// Called once per `tools/call` (and per completed `tasks/get`), so keep it
/// cheap: read what the transport already decided, do not authenticate
/// here. Implemented for `()`, for closures and for [`FromHttpRequest`].
pub trait PrincipalSource: Send + Sync + 'static {
    /// The principal of the request `cx`; [`Principal::anonymous`] when
    /// nobody was authenticated.
    fn principal(&self, cx: &RequestContext<RoleServer>) -> Principal;
}

/// Every caller is anonymous: the result's name is the capability.
impl PrincipalSource for () {
    fn principal(&self, _cx: &RequestContext<RoleServer>) -> Principal {
        Principal::anonymous()
    }
}

impl<F> PrincipalSource for F
where
    F: Fn(&RequestContext<RoleServer>) -> Principal + Send + Sync + 'static,
{
    fn principal(&self, cx: &RequestContext<RoleServer>) -> Principal {
        self(cx)
    }
}

/// The [`Principal`] in the HTTP request's extensions, put there by the
/// face's authentication middleware; anonymous when there is none (stdio,
/// or HTTP without authentication). The layer's default source.
#[derive(Debug, Clone, Copy, Default)]
pub struct FromHttpRequest;

impl PrincipalSource for FromHttpRequest {
    fn principal(&self, cx: &RequestContext<RoleServer>) -> Principal {
        from_extensions(&cx.extensions)
    }
}

/// What [`FromHttpRequest`] reads, from a request's MCP extensions.
fn from_extensions(extensions: &Extensions) -> Principal {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .cloned()
        .unwrap_or_else(Principal::anonymous)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_parts(principal: Option<Principal>) -> Extensions {
        let mut request = http::Request::new(());
        if let Some(p) = principal {
            request.extensions_mut().insert(p);
        }
        let (parts, ()) = request.into_parts();
        let mut ext = Extensions::new();
        ext.insert(parts);
        ext
    }

    #[test]
    fn the_http_source_reads_the_request_parts() {
        let alice = Principal::new("alice");
        assert_eq!(from_extensions(&with_parts(Some(alice.clone()))), alice);
        assert!(from_extensions(&with_parts(None)).is_anonymous());
        // stdio: no request parts at all.
        assert!(from_extensions(&Extensions::new()).is_anonymous());
    }

    #[test]
    fn closures_are_sources() {
        fn source(s: impl PrincipalSource) -> impl PrincipalSource {
            s
        }
        let _ = source(());
        let _ = source(FromHttpRequest);
        let _ = source(|_: &RequestContext<RoleServer>| Principal::new("bob"));
    }
}
