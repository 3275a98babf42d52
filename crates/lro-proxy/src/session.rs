//! [`Proxy`]: the `ServerHandler` of one client session, and its own
//! upstream session. The trait's methods are in [`crate::forward`].

use std::{
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use lro_core::{
    metric::{UpstreamErrorCode, UpstreamExit},
    wire::PROXY_EXTENSION,
};
use rmcp::{
    ErrorData as McpError, RoleClient, RoleServer, ServiceExt as _,
    model::*,
    service::{NotificationContext, Peer, RequestContext, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tokio::sync::OwnedSemaphorePermit;

use crate::{
    ProxyError, ProxyShared, Upstream,
    child::{self, ChildGuard},
    error::Redacted,
    exit::ChildExit,
    flag::FlaggingClient,
    relay::{Failure, ProgressMap, Relay, forward, set_meta},
    telemetry,
    upstream::redact_urls,
};

/// How long a failed call waits for a dying child's exit status, so the
/// error can name it.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(1);

/// How long an upstream has to answer `initialize`.
const INIT_TIMEOUT: Duration = Duration::from_secs(60);

/// One open upstream session. Dropping it closes the session (and ends the
/// child of a stdio upstream).
struct Connection {
    service: RunningService<RoleClient, Relay>,
    child: Option<ChildGuard>,
    /// See [`Relay`]: the progress tokens of each direction.
    upstream_tokens: ProgressMap,
    client_tokens: ProgressMap,
    /// The HTTP connection was lost; recorded once.
    lost: AtomicBool,
    _slot: Option<OwnedSemaphorePermit>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        telemetry::session_closed();
    }
}

impl Connection {
    fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Why the upstream is gone: the child's exit when there is a child.
    async fn why_gone(&self, fallback: String) -> String {
        match &self.child {
            Some(child) => match child.exit_within(EXIT_STATUS_WAIT).await {
                Some(
                    exit @ ChildExit {
                        by_proxy: false, ..
                    },
                ) => {
                    format!("the upstream server {exit}")
                }
                _ => fallback,
            },
            None => redact_urls(&fallback),
        }
    }
}

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
        downstream: Peer<RoleServer>,
    ) -> Result<(), ProxyError> {
        downstream.set_peer_info(request.clone());
        *self.session.client.lock().expect("poisoned") =
            Some((request.clone(), downstream.clone()));
        let _opening = self.session.opening.lock().await;
        let old = self.session.conn.write().expect("poisoned").take();
        drop(old);
        let conn = self.open(request, downstream).await?;
        *self.session.conn.write().expect("poisoned") = Some(conn);
        Ok(())
    }

    /// The upstream's `initialize` answer, once it has given one.
    pub(crate) fn upstream_info(&self) -> Option<ServerConfig> {
        self.session.info.read().expect("poisoned").clone()
    }

    /// The token the upstream chose for a request it sent through the
    /// proxy, given the token the client sees; `None` for any other token.
    pub(crate) fn upstream_progress_token(&self, token: &ProgressToken) -> Option<ProgressToken> {
        self.current()?.client_tokens.original(token)
    }

    /// Opens the upstream session for the client's `initialize`.
    async fn open(
        &self,
        client: InitializeRequestParams,
        downstream: Peer<RoleServer>,
    ) -> Result<Arc<Connection>, ProxyError> {
        let cfg = self.shared.config();
        let slot = self.shared.slot()?;
        let relay = Relay {
            downstream,
            client: flag_as_proxy(client),
            upstream_tokens: ProgressMap::default(),
            client_tokens: ProgressMap::default(),
        };
        let (upstream_tokens, client_tokens) =
            (relay.upstream_tokens.clone(), relay.client_tokens.clone());
        let upstream = cfg.upstream();
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| ProxyError::Initialize {
            upstream: upstream.to_string(),
            source,
        };
        let timed_out = || format!("no answer to initialize within {}s", INIT_TIMEOUT.as_secs());
        let (service, child) = match upstream {
            Upstream::Command { program, args } => {
                let (guard, transport) = child::spawn(
                    program,
                    args,
                    cfg.watchdog.as_deref(),
                    cfg.max_message_bytes,
                    self.shared.tasks(),
                )
                .inspect_err(|_| telemetry::connect_failed())?;
                match tokio::time::timeout(INIT_TIMEOUT, relay.serve(transport)).await {
                    Ok(Ok(service)) => (service, Some(guard)),
                    outcome => {
                        let why = match guard.exit_within(EXIT_STATUS_WAIT).await {
                            Some(exit) => format!("it {exit}").into(),
                            None => match outcome {
                                Ok(Err(err)) => err.into(),
                                _ => timed_out().into(),
                            },
                        };
                        telemetry::connect_failed();
                        return Err(failed(why));
                    }
                }
            }
            Upstream::Http { url, headers } => {
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers.iter().cloned().collect())
                    .max_sse_event_size(cfg.max_message_bytes)
                    .max_json_response_size(cfg.max_message_bytes);
                let transport =
                    StreamableHttpClientTransport::with_client(FlaggingClient::new(), config);
                match tokio::time::timeout(INIT_TIMEOUT, relay.serve(transport)).await {
                    Ok(Ok(service)) => (service, None),
                    outcome => {
                        telemetry::connect_failed();
                        return Err(failed(match outcome {
                            Ok(Err(err)) => Box::new(Redacted::new(&err)),
                            _ => timed_out().into(),
                        }));
                    }
                }
            }
        };
        telemetry::session_opened(self.shared.take_restart());
        if let Some(guard) = &child {
            let mut exit = guard.exit();
            let shared = self.shared.clone();
            let shown = upstream.to_string();
            self.shared.tasks().spawn(async move {
                if let Ok(exit) = exit.wait_for(Option::is_some).await
                    && let Some(
                        exit @ ChildExit {
                            by_proxy: false, ..
                        },
                    ) = *exit
                {
                    shared.report_lost(format!("upstream {shown} {exit}"));
                }
            });
        }
        let info = service.peer().peer_info().map(|info| server_config(&info));
        *self.session.info.write().expect("poisoned") = info;
        Ok(Arc::new(Connection {
            service,
            child,
            upstream_tokens,
            client_tokens,
            lost: AtomicBool::new(false),
            _slot: slot,
        }))
    }

    /// The open upstream session, when it is usable: a lost HTTP connection
    /// is not (a stdio child is never respawned in a session: its state is
    /// gone with it, so its calls keep getting the error that says so).
    fn current(&self) -> Option<Arc<Connection>> {
        let conn = self.session.conn.read().expect("poisoned").clone()?;
        (conn.child.is_some() || !conn.peer().is_transport_closed()).then_some(conn)
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
            // A client that skipped `initialize` (stateless HTTP): use what
            // rmcp learned about it.
            None => (
                cx.peer
                    .peer_info()
                    .map(|p| (*p).clone())
                    .unwrap_or_default(),
                cx.peer.clone(),
            ),
        };
        let conn = self
            .open(params, downstream)
            .await
            .map_err(ProxyError::into_mcp)?;
        *self.session.conn.write().expect("poisoned") = Some(conn.clone());
        Ok(conn)
    }

    /// Forwards one request to the upstream and returns its answer.
    pub(crate) async fn call(
        &self,
        request: ClientRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let conn = self.connection(&cx).await?;
        let method = telemetry::method_label(request.method());
        let started = Instant::now();
        let outcome = tokio::select! {
            outcome = forward(
                conn.peer(),
                request,
                cx.meta,
                &cx.ct,
                &conn.upstream_tokens,
                self.shared.config().request_timeout,
            ) => outcome,
            // The session ends with the proxy: the call gets an error, not silence.
            () = self.shared.closing().cancelled() => {
                telemetry::request_failed(method, UpstreamErrorCode::Cancelled);
                return Err(McpError::internal_error(
                    "lro proxy is shutting down; the call did not finish",
                    None,
                ));
            }
        };
        telemetry::request_done(method, started.elapsed());
        match outcome {
            Ok(result) => Ok(result),
            Err(Failure::Gone(why)) => {
                telemetry::request_failed(method, UpstreamErrorCode::Transport);
                let why = conn.why_gone(format!("the upstream is gone: {why}")).await;
                if conn.child.is_none() && !conn.lost.swap(true, Ordering::Relaxed) {
                    // Counted once per connection; the next call reconnects
                    // (see `connection`).
                    telemetry::upstream_exit(UpstreamExit::Disconnected);
                    self.shared.restart_due();
                }
                Err(McpError::internal_error(why, None))
            }
            Err(failure) => {
                telemetry::request_failed(method, failure.code());
                Err(failure.into_mcp())
            }
        }
    }
}

/// The client's `initialize` parameters with the proxy flag in the form an
/// rmcp server can read: the [`PROXY_EXTENSION`] capability extension. (The
/// spec's `clientInfo.proxy` is added on the wire, see [`crate::flag`].)
fn flag_as_proxy(mut client: InitializeRequestParams) -> InitializeRequestParams {
    let extensions = client
        .capabilities
        .extensions
        .get_or_insert_with(Default::default);
    extensions.insert(PROXY_EXTENSION.to_owned(), lro_core::wire::proxy_settings());
    client
}

fn server_config(info: &ServerPeerInfo) -> ServerConfig {
    let mut config = ServerConfig::new(info.capabilities.clone())
        .with_protocol_version(info.protocol_version.clone());
    if let Some(server_info) = &info.server_info {
        config = config.with_server_info(server_info.clone());
    }
    config.instructions = info.instructions.clone();
    config.meta = info.meta.clone();
    config
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
