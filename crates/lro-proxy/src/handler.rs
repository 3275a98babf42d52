//! [`Proxy`]: the `ServerHandler` of one client session, forwarding to its
//! own upstream session.

use std::{
    borrow::Cow,
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
    ErrorData as McpError, RoleClient, RoleServer, ServerHandler, ServiceExt as _,
    model::*,
    service::{NotificationContext, Peer, RequestContext, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::task::TaskTracker;

use crate::{
    ProxyError, Upstream,
    child::{self, ChildExit, ChildGuard},
    flag::FlaggingClient,
    relay::{Failure, ProgressMap, Relay, forward, set_meta},
    telemetry,
    upstream::redact_urls,
};

/// How long a failed call waits for a dying child's exit status, so the
/// error can name it.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(1);

/// The variables that send reqwest's requests through an HTTP proxy.
const PROXY_VARIABLES: [&str; 6] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// How long an upstream has to answer `initialize`.
const INIT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long [`ProxyShared::preflight`] waits for an HTTP upstream's port.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings shared by every session of one proxy.
///
/// ```
/// use lro_proxy::{ProxyConfig, Upstream};
///
/// let cfg = ProxyConfig::new(Upstream::command("my-server", ["--stdio"]))
///     .max_sessions(4)
///     .max_message_bytes(64 << 20);
/// assert_eq!(cfg.upstream().to_string(), "`my-server --stdio`");
/// ```
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    upstream: Upstream,
    max_sessions: usize,
    max_message_bytes: usize,
}

impl ProxyConfig {
    /// A configuration for `upstream` with the defaults below.
    pub fn new(upstream: Upstream) -> Self {
        Self {
            upstream,
            max_sessions: 16,
            max_message_bytes: 256 << 20,
        }
    }

    /// Children of a command upstream running at once (one per client
    /// session); past it, `initialize` gets an error. At least 1. Defaults
    /// to 16.
    #[must_use]
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n.max(1);
        self
    }

    /// The largest message accepted from the upstream: one stdio line or one
    /// SSE event. Defaults to 256 MiB (rmcp's own default is 16 MiB).
    #[must_use]
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// The upstream.
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }
}

/// What all sessions of one proxy share: the configuration, the session
/// slots, the tasks that end children, and the news of a lost upstream.
///
/// Make one per proxy, then one [`Proxy`] per client session with
/// [`Proxy::new`].
#[derive(Debug, Clone)]
pub struct ProxyShared(Arc<SharedInner>);

#[derive(Debug)]
struct SharedInner {
    cfg: ProxyConfig,
    slots: Arc<Semaphore>,
    tasks: TaskTracker,
    lost: watch::Sender<Option<String>>,
    /// A session was lost on its own; the next one opened is a restart.
    restart_due: std::sync::atomic::AtomicBool,
}

impl ProxyShared {
    /// Shared state for a proxy with `cfg`.
    pub fn new(cfg: ProxyConfig) -> Self {
        lro_core::metric::register_upstream_zeroed();
        Self(Arc::new(SharedInner {
            slots: Arc::new(Semaphore::new(cfg.max_sessions)),
            cfg,
            tasks: TaskTracker::new(),
            lost: watch::channel(None).0,
            restart_due: false.into(),
        }))
    }

    /// The configuration.
    pub fn config(&self) -> &ProxyConfig {
        &self.0.cfg
    }

    /// Resolves with a sentence when a child exits on its own; `lro proxy`
    /// on stdio exits then. (A lost HTTP upstream is not final: the next
    /// call reconnects.)
    pub async fn lost(&self) -> String {
        let mut rx = self.0.lost.subscribe();
        match rx.wait_for(Option::is_some).await {
            Ok(why) => why.clone().unwrap_or_default(),
            Err(_) => std::future::pending().await,
        }
    }

    /// Checks that the upstream can be started or reached, so that a typo
    /// fails at start with a clear message rather than at the client's first
    /// `initialize`: the command must be an executable file (found on `PATH`
    /// when it has no `/`), the URL's host must accept a TCP connection.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Spawn`] naming the command, or
    /// [`ProxyError::Unreachable`] naming the URL.
    pub async fn preflight(&self) -> Result<(), ProxyError> {
        match &self.0.cfg.upstream {
            Upstream::Command { program, .. } => {
                child::check_program(program).map_err(|source| ProxyError::Spawn {
                    command: program.to_string_lossy().into_owned(),
                    source,
                })
            }
            // Through an HTTP proxy (reqwest honours these variables), the
            // upstream's own port says nothing; the first `initialize` tells.
            Upstream::Http { .. }
                if PROXY_VARIABLES
                    .iter()
                    .any(|v| std::env::var_os(v).is_some()) =>
            {
                Ok(())
            }
            Upstream::Http { url, .. } => {
                let unreachable = |reason: String| ProxyError::Unreachable {
                    url: redact_urls(url),
                    reason,
                };
                let uri: http::Uri = url
                    .parse()
                    .map_err(|err: http::uri::InvalidUri| unreachable(err.to_string()))?;
                let host = uri
                    .host()
                    .unwrap_or_default()
                    .trim_matches(['[', ']'])
                    .to_owned();
                let port = uri
                    .port_u16()
                    .unwrap_or(if uri.scheme_str() == Some("https") {
                        443
                    } else {
                        80
                    });
                match tokio::time::timeout(
                    PREFLIGHT_TIMEOUT,
                    tokio::net::TcpStream::connect((host.as_str(), port)),
                )
                .await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(err)) => Err(unreachable(err.to_string())),
                    Err(_) => Err(unreachable(format!(
                        "no TCP connection within {}s",
                        PREFLIGHT_TIMEOUT.as_secs()
                    ))),
                }
            }
        }
    }

    /// Waits until every child has been ended and reaped. Call it after the
    /// sessions are gone, before the process exits, so that no child is
    /// orphaned.
    pub async fn shutdown(&self) {
        self.0.tasks.close();
        self.0.tasks.wait().await;
    }

    fn report_lost(&self, why: String) {
        self.restart_due();
        self.0.lost.send_replace(Some(why));
    }

    fn restart_due(&self) {
        self.0
            .restart_due
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

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
            .field("upstream", &self.shared.0.cfg.upstream)
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

    /// Opens the upstream session for the client's `initialize`.
    async fn open(
        &self,
        client: InitializeRequestParams,
        downstream: Peer<RoleServer>,
    ) -> Result<Arc<Connection>, ProxyError> {
        let inner = &self.shared.0;
        // Children are the scarce resource; an HTTP upstream session is not.
        let slot = match inner.cfg.upstream {
            Upstream::Command { .. } => {
                Some(inner.slots.clone().try_acquire_owned().map_err(|_| {
                    ProxyError::TooManySessions {
                        max: inner.cfg.max_sessions,
                    }
                })?)
            }
            Upstream::Http { .. } => None,
        };
        let relay = Relay {
            downstream,
            client: flag_as_proxy(client),
            upstream_tokens: ProgressMap::default(),
            client_tokens: ProgressMap::default(),
        };
        let (upstream_tokens, client_tokens) =
            (relay.upstream_tokens.clone(), relay.client_tokens.clone());
        let upstream = &inner.cfg.upstream;
        let failed = |reason: String| ProxyError::Initialize {
            upstream: upstream.to_string(),
            reason,
        };
        let timed_out = || format!("no answer to initialize within {}s", INIT_TIMEOUT.as_secs());
        let (service, child) = match upstream {
            Upstream::Command { program, args } => {
                let (guard, transport) =
                    child::spawn(program, args, inner.cfg.max_message_bytes, &inner.tasks)
                        .inspect_err(|_| telemetry::connect_failed())?;
                match tokio::time::timeout(INIT_TIMEOUT, relay.serve(transport)).await {
                    Ok(Ok(service)) => (service, Some(guard)),
                    outcome => {
                        let why = match guard.exit_within(EXIT_STATUS_WAIT).await {
                            Some(exit) => format!("it {exit}"),
                            None => match outcome {
                                Ok(Err(err)) => err.to_string(),
                                _ => timed_out(),
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
                    .max_sse_event_size(inner.cfg.max_message_bytes);
                let transport =
                    StreamableHttpClientTransport::with_client(FlaggingClient::new(), config);
                match tokio::time::timeout(INIT_TIMEOUT, relay.serve(transport)).await {
                    Ok(Ok(service)) => (service, None),
                    outcome => {
                        telemetry::connect_failed();
                        return Err(failed(match outcome {
                            Ok(Err(err)) => redact_urls(&err.to_string()),
                            _ => timed_out(),
                        }));
                    }
                }
            }
        };
        telemetry::session_opened(
            inner
                .restart_due
                .swap(false, std::sync::atomic::Ordering::Relaxed),
        );
        if let Some(guard) = &child {
            let mut exit = guard.exit();
            let shared = self.shared.clone();
            let shown = upstream.to_string();
            inner.tasks.spawn(async move {
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
    async fn call(
        &self,
        request: ClientRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let conn = self.connection(&cx).await?;
        let method = telemetry::method_label(request.method());
        let started = Instant::now();
        let outcome = forward(conn.peer(), request, cx.meta, &cx.ct, &conn.upstream_tokens).await;
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

/// Takes the expected variant out of an upstream answer. rmcp reads answers
/// as an untagged union, so an answer may land in a look-alike variant; it
/// is then re-read as the expected type.
macro_rules! expect_result {
    ($result:expr, $variant:ident => $ty:ty) => {
        match $result {
            ServerResult::$variant(value) => Ok(value),
            other => reread::<$ty>(other),
        }
    };
}

fn reread<T: serde::de::DeserializeOwned>(result: ServerResult) -> Result<T, McpError> {
    serde_json::to_value(&result)
        .and_then(serde_json::from_value)
        .map_err(|err| {
            McpError::internal_error(
                format!("the upstream's answer has the wrong shape: {err}"),
                None,
            )
        })
}

/// An optional-params request (`*/list`) with the client's params.
fn optional<M: Default, P>(params: Option<P>) -> RequestOptionalParam<M, P> {
    RequestOptionalParam {
        method: M::default(),
        params,
        extensions: Default::default(),
    }
}

// Every method the upstream may serve is forwarded. `subscriptions/listen`
// (the 2026-07-28 subscription stream) is not: rmcp's client has no way to
// relay its acknowledgement, so the method stays unimplemented (-32601).
#[allow(deprecated)]
impl ServerHandler for Proxy {
    // Methods answered with an empty result accept any successful answer:
    // `{"_meta": …}` is valid and lands in another variant of rmcp's union.
    async fn ping(&self, cx: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.call(PingRequest::default().into(), cx).await.map(drop)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        cx.peer.set_peer_info(request.clone());
        *self.session.client.lock().expect("poisoned") = Some((request.clone(), cx.peer.clone()));
        let _opening = self.session.opening.lock().await;
        // A second `initialize` on the same session replaces the upstream.
        let old = self.session.conn.write().expect("poisoned").take();
        drop(old);
        let conn = self
            .open(request, cx.peer.clone())
            .await
            .map_err(ProxyError::into_mcp)?;
        *self.session.conn.write().expect("poisoned") = Some(conn);
        Ok(self.get_info())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // Once the upstream has agreed a version, the client gets that one:
        // rmcp negotiates again after `initialize` against this list.
        match self.session.info.read().expect("poisoned").as_ref() {
            Some(info) => Cow::Owned(vec![info.protocol_version.clone()]),
            None => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    async fn discover(&self, cx: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        let request = DiscoverRequest::new(DiscoverRequestParams {});
        let result = self.call(request.into(), cx).await?;
        expect_result!(result, DiscoverResult => DiscoverResult)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let result = self.call(CompleteRequest::new(request).into(), cx).await?;
        expect_result!(result, CompleteResult => CompleteResult)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.call(SetLevelRequest::new(request).into(), cx)
            .await
            .map(drop)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        match self.call(GetPromptRequest::new(request).into(), cx).await? {
            ServerResult::InputRequiredResult(input) => Ok(input.into()),
            other => expect_result!(other, GetPromptResult => GetPromptResult).map(Into::into),
        }
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let result = self
            .call(ListPromptsRequest::from(optional(request)).into(), cx)
            .await?;
        expect_result!(result, ListPromptsResult => ListPromptsResult)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let result = self
            .call(ListResourcesRequest::from(optional(request)).into(), cx)
            .await?;
        expect_result!(result, ListResourcesResult => ListResourcesResult)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let request = ListResourceTemplatesRequest::from(optional(request));
        let result = self.call(request.into(), cx).await?;
        expect_result!(result, ListResourceTemplatesResult => ListResourceTemplatesResult)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        match self
            .call(ReadResourceRequest::new(request).into(), cx)
            .await?
        {
            ServerResult::InputRequiredResult(input) => Ok(input.into()),
            other => {
                expect_result!(other, ReadResourceResult => ReadResourceResult).map(Into::into)
            }
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.call(SubscribeRequest::new(request).into(), cx)
            .await
            .map(drop)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.call(UnsubscribeRequest::new(request).into(), cx)
            .await
            .map(drop)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        match self.call(CallToolRequest::new(request).into(), cx).await? {
            ServerResult::CreateTaskResult(task) => Ok(CallToolResponse::Task(task)),
            ServerResult::InputRequiredResult(input) => Ok(input.into()),
            other => expect_result!(other, CallToolResult => CallToolResult).map(Into::into),
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let result = self
            .call(ListToolsRequest::from(optional(request)).into(), cx)
            .await?;
        expect_result!(result, ListToolsResult => ListToolsResult)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let result = self.call(ClientRequest::CustomRequest(request), cx).await?;
        expect_result!(result, CustomResult => CustomResult)
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        cx: NotificationContext<RoleServer>,
    ) {
        // Progress on a request the upstream sent through the proxy: give it
        // back the token the upstream chose.
        let Some(original) = self
            .current()
            .and_then(|conn| conn.client_tokens.original(&params.progress_token))
        else {
            return;
        };
        params.progress_token = original;
        self.notify(ProgressNotification::new(params).into(), cx)
            .await;
    }

    async fn on_roots_list_changed(&self, cx: NotificationContext<RoleServer>) {
        self.notify(RootsListChangedNotification::default().into(), cx)
            .await;
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        cx: NotificationContext<RoleServer>,
    ) {
        self.notify(ClientNotification::CustomNotification(notification), cx)
            .await;
    }

    fn get_info(&self) -> ServerConfig {
        self.session
            .info
            .read()
            .expect("poisoned")
            .clone()
            .unwrap_or_else(|| {
                ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            })
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let result = self.call(GetTaskRequest::new(request).into(), cx).await?;
        expect_result!(result, GetTaskResult => GetTaskResult)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.call(UpdateTaskRequest::new(request).into(), cx)
            .await
            .map(drop)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.call(CancelTaskRequest::new(request).into(), cx)
            .await
            .map(drop)
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let result = self
            .call(ListSkillsRequest::from(optional(request)).into(), cx)
            .await?;
        expect_result!(result, ListSkillsResult => ListSkillsResult)
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let result = self.call(GetSkillRequest::new(request).into(), cx).await?;
        expect_result!(result, GetSkillResult => GetSkillResult)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        let result = self
            .call(ReadResourceDirectoryRequest::new(request).into(), cx)
            .await?;
        expect_result!(result, ListResourcesResult => ReadResourceDirectoryResult)
    }
}

impl Proxy {
    /// Passes a client notification on to the upstream, with its `_meta`.
    async fn notify(
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
