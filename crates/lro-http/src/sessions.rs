//! Sessions bound to the principal that opened them.
//!
//! rmcp hands out an `Mcp-Session-Id` and serves whoever presents it. On a
//! face with tokens that would let one tenant who learns another's session
//! id call tools in that session (under `lro proxy`, the other's upstream
//! child). So the id a response hands out is bound to the request's
//! principal, and a request with a session id bound to another principal
//! gets the answer an unknown session gets (404), which says nothing about
//! whose it is. A binding ends with the session's `DELETE`, or when the
//! service answers 404 for it; past [`MAX_BOUND`] bindings the oldest goes
//! and its session is refused from then on, by everyone.
//!
//! MCP 2026-07-28 has no sessions, and its transport says a server SHOULD
//! ignore an `Mcp-Session-Id` on such a request. The service does, and so
//! does this layer, but for one case: an id bound to another principal
//! still gets 404, because the same headers on an `initialize` would reach
//! that session. A 404 to a request whose `MCP-Protocol-Version` names that
//! revision or a later one says nothing about the session it carried, so
//! it ends no binding.
//!
//! ```
//! use axum::{Router, routing::post};
//! use lro_http::sessions::SessionsLayer;
//!
//! let app: Router = Router::new()
//!     .route("/mcp", post(|| async { "hi" }))
//!     .layer(SessionsLayer::new(()));
//! ```

use std::{
    collections::{HashMap, HashSet, VecDeque},
    convert::Infallible,
    sync::{Arc, Mutex, PoisonError},
};

use axum::{body::Body, response::Response};
use http::{Method, Request, StatusCode};
use lro_core::principal::Principal;
use tower::{Layer, Service};

use crate::{
    check::{BoxFuture, Stage, Staged},
    refusal::{Refusal, Respond, Responder},
};

/// The session header of the MCP streamable-HTTP transport.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// Bindings kept at most; far above any face's session cap.
pub const MAX_BOUND: usize = 65_536;

/// The MCP version header, whose value says whether a request has sessions.
const VERSION_HEADER: &str = "mcp-protocol-version";

/// The first MCP revision without sessions. Revisions are dates, so a later
/// one sorts after it.
const FIRST_SESSIONLESS: &str = "2026-07-28";

/// Whether the request names a sessionless MCP revision (see the module docs).
fn sessionless<B>(request: &Request<B>) -> bool {
    request
        .headers()
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|version| version >= FIRST_SESSIONLESS)
}

/// The layer that binds sessions to principals; see the module docs.
#[derive(Clone)]
pub struct SessionsLayer {
    book: Arc<Mutex<Book>>,
    responder: Responder,
}

impl std::fmt::Debug for SessionsLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionsLayer")
    }
}

#[derive(Default)]
struct Book {
    owner: HashMap<String, Option<Principal>>,
    order: VecDeque<String>,
    /// Ids whose binding was dropped for room: refused, never served
    /// unbound. Bounded like the bindings.
    evicted: HashSet<String>,
    evicted_order: VecDeque<String>,
}

impl Book {
    /// Whether `caller` may use `session`.
    fn admits(&self, session: &str, caller: Option<&Principal>) -> bool {
        match self.owner.get(session) {
            Some(owner) => owner.as_ref() == caller,
            None => !self.evicted.contains(session),
        }
    }

    fn bind(&mut self, session: String, owner: Option<Principal>) {
        if self.owner.insert(session.clone(), owner).is_none() {
            self.order.push_back(session);
        }
        while self.order.len() > MAX_BOUND {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if self.owner.remove(&old).is_some() {
                self.evicted.insert(old.clone());
                self.evicted_order.push_back(old);
            }
        }
        while self.evicted_order.len() > MAX_BOUND {
            if let Some(old) = self.evicted_order.pop_front() {
                self.evicted.remove(&old);
            }
        }
    }

    fn unbind(&mut self, session: &str) {
        if self.owner.remove(session).is_some() {
            self.order.retain(|s| s != session);
        }
    }
}

impl SessionsLayer {
    /// Binds sessions, refusing a foreign one with `respond`.
    #[must_use]
    pub fn new(respond: impl Respond) -> Self {
        Self::with_responder(Responder::new(respond))
    }

    pub(crate) fn with_responder(responder: Responder) -> Self {
        Self {
            book: Arc::default(),
            responder,
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<S> Layer<S> for SessionsLayer {
    type Service = Staged<S, Self>;

    fn layer(&self, inner: S) -> Self::Service {
        Staged::new(inner, self.clone())
    }
}

impl Stage for SessionsLayer {
    fn handle<S>(&self, mut inner: S, request: Request<Body>) -> BoxFuture
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Send + 'static,
        S::Future: Send + 'static,
    {
        let sessionless = sessionless(&request);
        let caller = request.extensions().get::<Principal>().cloned();
        let session = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = &session
            && !self.book().admits(id, caller.as_ref())
        {
            tracing::debug!("refused: a session of another principal");
            return Box::pin(std::future::ready(Ok(self
                .responder
                .refuse(&Refusal::UnknownSession))));
        }
        let deleting = request.method() == Method::DELETE;
        let layer = self.clone();
        Box::pin(async move {
            let response = inner.call(request).await?;
            let status = response.status();
            match session {
                Some(id) if status == StatusCode::NOT_FOUND && !sessionless => {
                    layer.book().unbind(&id);
                }
                Some(id) if deleting && status.is_success() => layer.book().unbind(&id),
                Some(_) => {}
                None => {
                    let issued = response
                        .headers()
                        .get(SESSION_HEADER)
                        .and_then(|v| v.to_str().ok());
                    if let Some(id) = issued {
                        layer.book().bind(id.to_owned(), caller);
                    }
                }
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt as _;

    /// An MCP-like service: a request without a session opens `s-1`.
    fn service()
    -> impl Service<Request<Body>, Response = Response, Error = Infallible, Future = impl Send>
    + Clone
    + Send
    + 'static {
        tower::service_fn(|r: Request<Body>| async move {
            let mut response = Response::new(Body::empty());
            if r.headers().get(SESSION_HEADER).is_none() {
                response
                    .headers_mut()
                    .insert(SESSION_HEADER, "s-1".parse().unwrap());
            }
            Ok::<_, Infallible>(response)
        })
    }

    fn request(who: &str, session: Option<&str>, method: Method) -> Request<Body> {
        let mut r = Request::builder().method(method);
        if let Some(s) = session {
            r = r.header(SESSION_HEADER, s);
        }
        let mut r = r.body(Body::empty()).unwrap();
        r.extensions_mut().insert(Principal::new(who));
        r
    }

    #[tokio::test]
    async fn a_session_serves_only_the_principal_that_opened_it() {
        let layer = SessionsLayer::new(());
        let svc = layer.layer(service());
        let status = |r| {
            let svc = svc.clone();
            async move { svc.oneshot(r).await.unwrap().status() }
        };
        assert_eq!(
            status(request("alice", None, Method::POST)).await,
            StatusCode::OK
        );
        assert_eq!(
            status(request("bob", Some("s-1"), Method::POST)).await,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status(request("alice", Some("s-1"), Method::POST)).await,
            StatusCode::OK
        );
        // Bob's DELETE does not end Alice's binding; hers does.
        assert_eq!(
            status(request("bob", Some("s-1"), Method::DELETE)).await,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status(request("alice", Some("s-1"), Method::DELETE)).await,
            StatusCode::OK
        );
        assert!(layer.book().owner.is_empty());
    }

    #[tokio::test]
    async fn a_sessionless_404_ends_no_binding_and_others_ids_stay_refused() {
        let layer = SessionsLayer::new(());
        let not_found = tower::service_fn(|_: Request<Body>| async {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::NOT_FOUND;
            Ok::<_, Infallible>(response)
        });
        let ok = layer.layer(service());
        ok.clone()
            .oneshot(request("alice", None, Method::POST))
            .await
            .unwrap();
        let sessionless = |who: &str| {
            let mut r = request(who, Some("s-1"), Method::POST);
            r.headers_mut()
                .insert(VERSION_HEADER, FIRST_SESSIONLESS.parse().unwrap());
            r
        };
        // Alice's 2026-07-28 request that gets 404 (a removed method, say).
        let answer = layer
            .layer(not_found)
            .oneshot(sessionless("alice"))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND);
        assert!(!layer.book().owner.is_empty(), "still bound to Alice");
        // Bob presenting it on either revision is refused.
        for bobs in [
            sessionless("bob"),
            request("bob", Some("s-1"), Method::POST),
        ] {
            let status = ok.clone().oneshot(bobs).await.unwrap().status();
            assert_eq!(status, StatusCode::NOT_FOUND);
        }
    }

    #[test]
    fn past_the_cap_the_oldest_session_is_refused_not_unbound() {
        let mut book = Book::default();
        let alice = Some(Principal::new("alice"));
        for i in 0..=MAX_BOUND {
            book.bind(format!("s-{i}"), alice.clone());
        }
        assert_eq!(book.owner.len(), MAX_BOUND);
        assert!(!book.admits("s-0", alice.as_ref()), "evicted: refused");
        assert!(book.admits("s-1", alice.as_ref()));
        assert!(book.admits("never-bound", None), "the service decides");
    }
}
