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
//! Sessions are capped ([`SessionCaps`]): in total, and per principal. A
//! request that may open a session (a `POST` without one) at a cap first
//! closes, by sending the face a `DELETE` for it, the caller's own session
//! idle longest (no call in progress; an open `GET` stream is not a call),
//! and sessions of anyone idle past the idle timeout, which the face ends
//! anyway. It never closes another principal's live session: with nothing
//! of its own to close, the newcomer is refused, 429 at its own cap and 503
//! at the total, with a JSON-RPC error. So one tenant's flood of
//! `initialize` calls costs a bounded number of sessions, and only its own.
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
//! use lro_http::sessions::{SessionCaps, SessionsLayer};
//!
//! let app: Router = Router::new()
//!     .route("/mcp", post(|| async { "hi" }))
//!     .layer(SessionsLayer::new(()).caps(SessionCaps::new().total(64).per_principal(8)));
//! ```

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Instant,
};

use axum::body::Body;
use http::{HeaderValue, Method, Request, StatusCode, Uri, header};
use lro_core::principal::Principal;
use tower::ServiceExt as _;

use self::book::{Book, Closing};
pub use self::book::{MAX_BOUND, SessionCaps};
use crate::{
    auth::{Presented, Tokens},
    check::{BoxFuture, Inner, Stage, stage_layer},
    refusal::{Refusal, Respond, Responder},
    slots::hold_until_body_ends,
};

mod book;

/// The session header of the MCP streamable-HTTP transport.
pub const SESSION_HEADER: &str = "mcp-session-id";

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

/// The layer that binds sessions to principals and caps them; see the
/// module docs.
#[derive(Clone)]
pub struct SessionsLayer {
    book: Arc<Mutex<Book>>,
    caps: SessionCaps,
    responder: Responder,
    /// The tokens whose revocations end the sessions they opened.
    tokens: Option<Tokens>,
}

impl std::fmt::Debug for SessionsLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionsLayer")
    }
}

impl SessionsLayer {
    /// Binds sessions, refusing a foreign one with `respond`; no cap below
    /// [`MAX_BOUND`] until [`SessionsLayer::caps`].
    #[must_use]
    pub fn new(respond: impl Respond) -> Self {
        Self::with_responder(Responder::new(respond))
    }

    pub(crate) fn with_responder(responder: Responder) -> Self {
        Self {
            book: Arc::default(),
            caps: SessionCaps::new(),
            responder,
            tokens: None,
        }
    }

    /// Ends the sessions a token opened once `tokens` no longer holds it
    /// (its file was read again without it), on the next request.
    #[must_use]
    pub(crate) fn revoked_by(mut self, tokens: Tokens) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// Sets the caps. Defaults to [`SessionCaps::new`].
    #[must_use]
    pub fn caps(mut self, caps: SessionCaps) -> Self {
        self.caps = caps;
        self
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counts a session's request until its response body ends.
struct InProgress {
    layer: SessionsLayer,
    session: String,
    stream: bool,
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.layer
            .book()
            .end(&self.session, self.stream, Instant::now());
    }
}

/// Counts a session being opened until its answer is back, or the caller
/// went away.
struct Opening {
    layer: SessionsLayer,
    caller: Option<Principal>,
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.layer.book().opened(&self.caller);
    }
}

/// The `DELETE` that closes `session` in the face, as its owner would send
/// it to `uri` on `host` (the face checks that a request names a host).
fn closing_request(
    uri: &Uri,
    host: Option<&HeaderValue>,
    (session, owner): Closing,
) -> Option<Request<Body>> {
    let mut request = Request::builder()
        .method(Method::DELETE)
        .uri(uri.clone())
        .header(SESSION_HEADER, session);
    if let Some(host) = host {
        request = request.header(header::HOST, host);
    }
    let mut request = request.body(Body::empty()).ok()?;
    if let Some(owner) = owner {
        request.extensions_mut().insert(owner);
    }
    Some(request)
}

stage_layer!(SessionsLayer);

impl Stage for SessionsLayer {
    fn handle<S: Inner>(&self, mut inner: S, request: Request<Body>) -> BoxFuture {
        let sessionless = sessionless(&request);
        let caller = request.extensions().get::<Principal>().cloned();
        let token = request.extensions().get::<Presented>().map(|p| p.0);
        let revoked = self
            .tokens
            .as_ref()
            .map(Tokens::take_revoked)
            .unwrap_or_default();
        let mut closing = if revoked.is_empty() {
            Vec::new()
        } else {
            self.book().close_revoked(&revoked)
        };
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
        let now = Instant::now();
        // A POST without a session may open one (an `initialize`).
        let mut opening = None;
        if session.is_none() && !sessionless && request.method() == Method::POST {
            match self.book().make_room(&caller, &self.caps, now) {
                Ok(close) => closing.extend(close),
                Err(refusal) => {
                    tracing::debug!(%refusal, "refused: at a session cap");
                    return Box::pin(std::future::ready(Ok(self.responder.refuse(&refusal))));
                }
            }
            opening = Some(Opening {
                layer: self.clone(),
                caller: caller.clone(),
            });
        }
        let in_progress = session.as_ref().filter(|_| !deleting).and_then(|id| {
            let stream = request.method() == Method::GET;
            self.book().begin(id, stream, now).then(|| InProgress {
                layer: self.clone(),
                session: id.clone(),
                stream,
            })
        });
        let uri = request.uri().clone();
        let host = request.headers().get(header::HOST).cloned();
        let layer = self.clone();
        Box::pin(async move {
            // Closed before the new one opens, so its memory is free first.
            for close in closing {
                if let Some(delete) = closing_request(&uri, host.as_ref(), close) {
                    tracing::debug!("closing a session: for room, or its token was revoked");
                    let _ = inner.call(delete).await;
                    let _ = inner.ready().await;
                }
            }
            let response = inner.call(request).await?;
            let status = response.status();
            match session {
                Some(id) if status == StatusCode::NOT_FOUND && !sessionless => {
                    layer.book().unbind(&id);
                }
                Some(id) if deleting && status.is_success() => {
                    layer.book().unbind(&id);
                }
                Some(_) => {}
                None => {
                    let issued = response
                        .headers()
                        .get(SESSION_HEADER)
                        .and_then(|v| v.to_str().ok());
                    if let Some(id) = issued {
                        layer
                            .book()
                            .bind(id.to_owned(), caller, token, Instant::now());
                    }
                }
            }
            drop(opening);
            Ok(match in_progress {
                Some(held) => hold_until_body_ends(response, held),
                None => response,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use axum::response::Response;
    use tower::{Layer as _, Service};

    use super::*;

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
        assert!(layer.book().sessions.is_empty());
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
        assert!(!layer.book().sessions.is_empty(), "still bound to Alice");
        // Bob presenting it on either revision is refused.
        for bobs in [
            sessionless("bob"),
            request("bob", Some("s-1"), Method::POST),
        ] {
            let status = ok.clone().oneshot(bobs).await.unwrap().status();
            assert_eq!(status, StatusCode::NOT_FOUND);
        }
    }

    /// An MCP-like service that opens `s-N` for each POST without a session
    /// and records the sessions DELETE closed.
    fn opening_service(
        closed: Arc<Mutex<Vec<String>>>,
    ) -> impl Service<Request<Body>, Response = Response, Error = Infallible, Future = impl Send>
    + Clone
    + Send
    + 'static {
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        tower::service_fn(move |r: Request<Body>| {
            let (closed, next) = (closed.clone(), next.clone());
            async move {
                let mut response = Response::new(Body::empty());
                match r.headers().get(SESSION_HEADER) {
                    Some(id) if r.method() == Method::DELETE => {
                        closed.lock().unwrap().push(id.to_str().unwrap().into());
                        *response.status_mut() = StatusCode::ACCEPTED;
                    }
                    Some(_) => {}
                    None => {
                        let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        response
                            .headers_mut()
                            .insert(SESSION_HEADER, format!("s-{n}").parse().unwrap());
                    }
                }
                Ok::<_, Infallible>(response)
            }
        })
    }

    #[tokio::test]
    async fn at_the_caps_a_principal_closes_its_own_idle_session_never_anothers() {
        let closed = Arc::default();
        let layer = SessionsLayer::new(()).caps(SessionCaps::new().total(4).per_principal(2));
        let svc = layer.layer(opening_service(Arc::clone(&closed)));
        let open = |who: &'static str| {
            let svc = svc.clone();
            async move { svc.oneshot(request(who, None, Method::POST)).await.unwrap() }
        };
        for _ in 0..2 {
            open("bob").await;
        }
        // Alice's third closes her first, s-2; Bob's stay.
        for _ in 0..3 {
            assert_eq!(open("alice").await.status(), StatusCode::OK);
        }
        assert_eq!(*closed.lock().unwrap(), ["s-2"]);
        assert!(!layer.book().sessions.contains_key("s-2"));
        assert!(
            !layer.book().admits("s-2", Some(&Principal::new("bob"))),
            "refused, closed or not"
        );
        // At the total, Carol has nothing of her own to close.
        let refused = open("carol").await;
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        // A call in progress in each of Alice's: none of hers is idle.
        let busy = ["s-3", "s-4"].map(|id| {
            svc.clone()
                .oneshot(request("alice", Some(id), Method::POST))
        });
        let mut held = Vec::new();
        for call in busy {
            held.push(call.await.unwrap());
        }
        assert_eq!(open("alice").await.status(), StatusCode::TOO_MANY_REQUESTS);
        drop(held);
        assert_eq!(open("alice").await.status(), StatusCode::OK);
        let closed = closed.lock().unwrap().clone();
        assert!(
            closed.len() == 2 && ["s-3", "s-4"].contains(&closed[1].as_str()),
            "{closed:?}"
        );
        assert_eq!(layer.book().count(&Some(Principal::new("bob"))), 2);
    }
}
