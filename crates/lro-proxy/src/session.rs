//! [`Proxy`]: the `ServerHandler` of one client session, and its own
//! upstream session. The trait's methods are in [`crate::forward`].

use std::sync::{Arc, Mutex, RwLock};

use lro_core::proxy_flag::PROXY_EXTENSION;
use rmcp::{
    ErrorData as McpError, RoleServer,
    model::*,
    service::{ClientLifecycleMode, NotificationContext, Peer, RequestContext},
};

use crate::{
    ProxyError, ProxyShared,
    connection::Connection,
    listen::Listeners,
    reclaim::SessionSeat,
    refusal,
    relay::{ProgressMap, Relay, set_meta},
    slots::{Claim, Pinned, principal},
    wire::Wire,
};

/// The `ServerHandler` of one client session: every request goes to this
/// session's upstream, with its `_meta`, and the answer or JSON-RPC error
/// comes back unchanged. Wrap it in `lro_tower::LroLayer` to offload large
/// results.
///
/// The upstream session opens when the client sends `initialize`, with the
/// client's own capabilities and client info, so the upstream never asks the
/// client for something it cannot do; the client gets the upstream's own
/// `initialize` answer.
pub struct Proxy {
    shared: ProxyShared,
    session: Arc<Session>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("upstream", self.shared.config().upstream())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Session {
    /// The open upstream session; read on every call, so a plain lock.
    conn: RwLock<Option<Arc<Connection>>>,
    /// Held while an upstream session opens, so that one opens at a time.
    opening: tokio::sync::Mutex<()>,
    /// The client's `initialize` and its peer, kept for reconnects.
    client: Mutex<Option<(InitializeRequestParams, Peer<RoleServer>)>>,
    /// The upstream's `initialize` answer.
    info: RwLock<Option<ServerConfig>>,
    /// The level the client set with `logging/setLevel`, for an upstream
    /// that takes it in each request's `_meta` (2026-07-28). Deprecated by
    /// SEP-2577, and still what 2025-11-25 clients send.
    #[allow(deprecated)]
    log_level: Mutex<Option<LoggingLevel>>,
}

impl Proxy {
    /// A handler for one new client session.
    pub fn new(shared: ProxyShared) -> Self {
        Self {
            shared,
            session: Arc::default(),
        }
    }

    /// Answers the client's `initialize`: keeps it for reconnects and opens
    /// the upstream session with it. A second `initialize` on the same
    /// session replaces the upstream.
    pub(crate) async fn initialize_upstream(
        &self,
        request: InitializeRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let downstream = cx.peer.clone();
        downstream.set_peer_info(request.clone());
        *self.session.client.lock().expect("poisoned") =
            Some((request.clone(), downstream.clone()));
        let _opening = self.session.opening.lock().await;
        let old = self.session.conn.write().expect("poisoned").take();
        drop(old);
        let conn = self
            .open(claim(cx), request, downstream)
            .await
            .map_err(|err| refusal::answer(err, cx))?;
        *self.session.conn.write().expect("poisoned") = Some(conn);
        Ok(())
    }

    /// What all sessions of this proxy share.
    pub(crate) fn shared(&self) -> &ProxyShared {
        &self.shared
    }

    /// The upstream's `initialize` answer, once this session has one.
    pub(crate) fn upstream_info(&self) -> Option<ServerConfig> {
        self.session.info.read().expect("poisoned").clone()
    }

    /// What the upstream said of itself: this session's `initialize`
    /// answer, else what the sessionless connections learned.
    pub(crate) fn any_upstream_info(&self) -> Option<ServerConfig> {
        self.upstream_info().or_else(|| self.shared.pool().info())
    }

    /// The token the upstream chose for a request it sent through the
    /// proxy, given the token the client sees; `None` for any other token.
    pub(crate) fn upstream_progress_token(&self, token: &ProgressToken) -> Option<ProgressToken> {
        self.current()?.upstream_progress_token(token)
    }

    /// Opens the upstream session for the client's `initialize`, its child
    /// slot held for `claim`.
    async fn open(
        &self,
        claim: Claim,
        client: InitializeRequestParams,
        downstream: Peer<RoleServer>,
    ) -> Result<Arc<Connection>, ProxyError> {
        let relay = Relay {
            downstream: Some(downstream),
            client: flag_as_proxy(client),
            upstream_tokens: ProgressMap::default(),
            client_tokens: ProgressMap::default(),
            listeners: Listeners::default(),
        };
        let conn = match Connection::open(
            &self.shared,
            claim.clone(),
            relay.clone(),
            ClientLifecycleMode::Initialize,
        )
        .await
        {
            // An upstream that speaks 2026-07-28 only: the session speaks it
            // on its client's behalf, the client's info and capabilities in
            // every request's `_meta`.
            Err(refused) if refused.refused_handshake() => {
                let modern = ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                };
                match Connection::open(&self.shared, claim, relay, modern).await {
                    Ok(conn) => conn,
                    Err(_) => return Err(refused),
                }
            }
            opened => opened?,
        };
        let mut info = conn.info();
        if conn.wire() == Wire::Modern
            && let Some(info) = &mut info
        {
            // The client negotiates a version with `initialize`: the one it
            // asked for (rmcp picks it from `supported_protocol_versions`).
            info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        }
        *self.session.info.write().expect("poisoned") = info;
        Ok(conn)
    }

    /// The open upstream session, when it is usable: a lost HTTP connection
    /// is not (a stdio child is never respawned in a session: its state is
    /// gone with it, so its calls keep getting the error that says so).
    fn current(&self) -> Option<Arc<Connection>> {
        let conn = self.session.conn.read().expect("poisoned").clone()?;
        (conn.has_child() || conn.alive()).then_some(conn)
    }

    /// The open upstream session, reconnecting a lost HTTP upstream.
    async fn connection(
        &self,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Arc<Connection>, McpError> {
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let _opening = self.session.opening.lock().await;
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let client = self.session.client.lock().expect("poisoned").clone();
        let (params, downstream) = match client {
            Some(client) => client,
            // A legacy client that skipped `initialize`: use what rmcp
            // learned about it.
            None => (
                cx.peer
                    .peer_info()
                    .map(|p| (*p).clone())
                    .unwrap_or_default(),
                cx.peer.clone(),
            ),
        };
        let conn = self
            .open(claim(cx), params, downstream)
            .await
            .map_err(|err| refusal::answer(err, cx))?;
        *self.session.conn.write().expect("poisoned") = Some(conn.clone());
        Ok(conn)
    }

    /// Forwards one request to the upstream and returns its answer: a
    /// legacy client's on its session's own connection, a sessionless
    /// client's on its principal's shared one (see [`crate::pool`]).
    pub(crate) async fn call(
        &self,
        request: ClientRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        match Wire::of(&cx.meta) {
            Wire::Legacy => {
                let conn = self.connection(&cx).await?;
                let mut cx = cx;
                if conn.wire() == Wire::Modern
                    && cx.meta.log_level().is_none()
                    && let Some(level) = *self.session.log_level.lock().expect("poisoned")
                {
                    cx.meta.set_log_level(level);
                }
                conn.call(&self.shared, request, cx).await
            }
            Wire::Modern => self.shared.pool().call(&self.shared, request, cx).await,
        }
    }

    /// Answers what a 2026-07-28 upstream has no method for, for the
    /// session of a legacy client in front of one: `ping` (answered here)
    /// and `logging/setLevel` (kept, and sent in each request's `_meta`).
    /// `None` when the request is the upstream's to answer.
    #[allow(deprecated)]
    pub(crate) fn answer_for_modern_upstream(
        &self,
        request: &ClientRequest,
        cx: &RequestContext<RoleServer>,
    ) -> Option<()> {
        if Wire::of(&cx.meta) == Wire::Modern || self.current()?.wire() != Wire::Modern {
            return None;
        }
        match request {
            ClientRequest::PingRequest(_) => Some(()),
            ClientRequest::SetLevelRequest(set) => {
                *self.session.log_level.lock().expect("poisoned") = Some(set.params.level);
                Some(())
            }
            _ => None,
        }
    }

    /// What the upstream said of itself, opening this principal's
    /// sessionless connection if nothing is known yet: `server/discover`
    /// is answered from it.
    pub(crate) async fn learn_upstream(
        &self,
        cx: &RequestContext<RoleServer>,
    ) -> Result<ServerConfig, McpError> {
        if let Some(info) = self.any_upstream_info() {
            return Ok(info);
        }
        let conn = self.shared.pool().connection(&self.shared, cx).await?;
        conn.info()
            .ok_or_else(|| McpError::internal_error("the upstream did not describe itself", None))
    }
}

/// What a session's child slot is held for: the caller's principal, and
/// the session's seat on the HTTP face (a stdio session's is never
/// reclaimed).
fn claim(cx: &RequestContext<RoleServer>) -> Claim {
    let seat = cx
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<SessionSeat>());
    Claim {
        principal: principal(cx),
        seat: match seat {
            Some(seat) => Arc::new(seat.clone()),
            None => Arc::new(Pinned),
        },
    }
}

/// The client's `initialize` parameters with the proxy flag in the form an
/// rmcp server can read: the [`PROXY_EXTENSION`] capability extension. (The
/// spec's `clientInfo.proxy` is added on the wire, see [`crate::flag`].)
pub(crate) fn flag_as_proxy(mut client: InitializeRequestParams) -> InitializeRequestParams {
    let extensions = client
        .capabilities
        .extensions
        .get_or_insert_with(Default::default);
    extensions.insert(
        PROXY_EXTENSION.to_owned(),
        lro_core::proxy_flag::proxy_settings(),
    );
    client
}

impl Proxy {
    /// Passes a client notification on to the upstream, with its `_meta`.
    pub(crate) async fn notify(
        &self,
        mut notification: ClientNotification,
        cx: NotificationContext<RoleServer>,
    ) {
        set_meta(&mut notification, cx.meta);
        if let Some(conn) = self.current() {
            let _ = conn.peer().send_notification(notification).await;
        }
    }
}
