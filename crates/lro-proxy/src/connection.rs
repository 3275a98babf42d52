//! [`Connection`]: one open upstream connection, a child process over
//! stdio or a streamable-HTTP endpoint, and the forwarding of one request
//! over it. A client session's own connection ([`crate::Proxy`]) and the
//! connections that serve sessionless clients ([`crate::pool`]) are both
//! made here.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use lro_core::{
    error::chain,
    metric::{UpstreamErrorCode, UpstreamExit},
};
use rmcp::{
    ErrorData as McpError, RoleClient, RoleServer,
    model::*,
    service::{
        ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _, Peer, RequestContext,
        RunningService,
    },
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};

use lro_upstream::redact_urls;

use crate::{
    ProxyError, ProxyShared, Upstream,
    child::{self, ChildGuard},
    error::{Redacted, Refused},
    exit::ChildExit,
    flag::FlaggingClient,
    listen::Listeners,
    relay::{Failure, ProgressMap, Relay, forward},
    slots::{Claim, Slot},
    telemetry,
    wire::{self, Wire},
};

/// How long a failed call waits for a dying child's exit status, so the
/// error can name it.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(1);

/// How long an upstream has to answer `initialize` (or `server/discover`).
const INIT_TIMEOUT: Duration = Duration::from_secs(60);

/// One open upstream connection. Dropping it closes the connection (and
/// ends the child of a stdio upstream).
pub(crate) struct Connection {
    service: RunningService<RoleClient, Relay>,
    child: Option<ChildGuard>,
    /// The wire the upstream agreed.
    wire: Wire,
    /// See [`Relay`]: the progress tokens of each direction.
    upstream_tokens: ProgressMap<Peer<RoleServer>>,
    client_tokens: ProgressMap,
    listeners: Listeners,
    /// The HTTP connection was lost; recorded once.
    lost: AtomicBool,
    _slot: Option<Slot>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        telemetry::session_closed();
    }
}

impl Connection {
    /// Opens a connection to the configured upstream: takes a child slot
    /// for `claim`, starts the child or reaches the URL, then runs
    /// `lifecycle` (`initialize`, or the `server/discover` probe) with
    /// `relay`'s client parameters.
    pub(crate) async fn open(
        shared: &ProxyShared,
        claim: Claim,
        relay: Relay,
        lifecycle: ClientLifecycleMode,
    ) -> Result<Arc<Self>, ProxyError> {
        let slot = shared.slot(claim).await?;
        let opened = Self::start(shared, slot, relay, lifecycle).await;
        // What the stdio face's exit status reports, when its client goes.
        shared.record_open(opened.as_ref().err().map(|e| chain(e).to_string()));
        opened
    }

    /// [`Connection::open`] once it has its slot.
    async fn start(
        shared: &ProxyShared,
        slot: Option<Slot>,
        relay: Relay,
        lifecycle: ClientLifecycleMode,
    ) -> Result<Arc<Self>, ProxyError> {
        let cfg = shared.config();
        let (upstream_tokens, client_tokens, listeners) = (
            relay.upstream_tokens.clone(),
            relay.client_tokens.clone(),
            relay.listeners.clone(),
        );
        let upstream = cfg.upstream();
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| ProxyError::Initialize {
            upstream: upstream.to_string(),
            source,
        };
        let timed_out = || format!("no answer to initialize within {}s", INIT_TIMEOUT.as_secs());
        let (service, child) = match upstream {
            Upstream::Command { program, args, env } => {
                let (guard, transport) = child::spawn(
                    program,
                    args,
                    env,
                    cfg.watchdog.as_deref(),
                    cfg.max_message_bytes,
                    shared.tasks(),
                )
                .inspect_err(|_| telemetry::connect_failed())?;
                let started = relay.serve_with_lifecycle(transport, lifecycle);
                match tokio::time::timeout(INIT_TIMEOUT, started).await {
                    Ok(Ok(service)) => (service, Some(guard)),
                    // Answered: the child is up, and no exit status to wait for.
                    Ok(Err(err @ ClientInitializeError::JsonRpcError(_))) => {
                        telemetry::connect_failed();
                        return Err(failed(Box::new(Refused(err.into()))));
                    }
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
                let started = relay.serve_with_lifecycle(transport, lifecycle);
                match tokio::time::timeout(INIT_TIMEOUT, started).await {
                    Ok(Ok(service)) => (service, None),
                    outcome => {
                        telemetry::connect_failed();
                        return Err(failed(match outcome {
                            Ok(Err(err @ ClientInitializeError::JsonRpcError(_))) => {
                                Box::new(Refused(Box::new(Redacted::new(&err))))
                            }
                            Ok(Err(err)) => Box::new(Redacted::new(&err)),
                            _ => timed_out().into(),
                        }));
                    }
                }
            }
        };
        telemetry::session_opened(shared.take_restart());
        if let Some(guard) = &child {
            let mut exit = guard.exit();
            let shared = shared.clone();
            let shown = upstream.to_string();
            shared.tasks().clone().spawn(async move {
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
        let wire = match service.peer().peer_info() {
            Some(info) if !info.protocol_version.has_initialize() => Wire::Modern,
            _ => Wire::Legacy,
        };
        Ok(Arc::new(Self {
            service,
            child,
            wire,
            upstream_tokens,
            client_tokens,
            listeners,
            lost: AtomicBool::new(false),
            _slot: slot,
        }))
    }

    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// The wire the upstream agreed.
    pub(crate) fn wire(&self) -> Wire {
        self.wire
    }

    /// The open listens of sessionless clients (see [`crate::listen`]).
    pub(crate) fn listeners(&self) -> &Listeners {
        &self.listeners
    }

    /// What the upstream said of itself, as a server's configuration.
    pub(crate) fn info(&self) -> Option<ServerConfig> {
        self.peer().peer_info().map(|info| server_config(&info))
    }

    /// Whether calls can still go through: a stdio child has not exited, an
    /// HTTP connection is not closed.
    pub(crate) fn alive(&self) -> bool {
        match &self.child {
            Some(child) => child.exit().borrow().is_none(),
            None => !self.peer().is_transport_closed(),
        }
    }

    /// Whether it runs a child (which is never replaced within a session:
    /// its state would be gone with it).
    pub(crate) fn has_child(&self) -> bool {
        self.child.is_some()
    }

    /// The token the upstream chose for a request it sent through the
    /// proxy, given the token the client sees.
    pub(crate) fn upstream_progress_token(&self, token: &ProgressToken) -> Option<ProgressToken> {
        self.client_tokens.original(token)
    }

    /// Forwards one client request and returns the upstream's answer, with
    /// `resultType` where the upstream left it out.
    pub(crate) async fn call(
        &self,
        shared: &ProxyShared,
        request: ClientRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let method = telemetry::method_label(request.method());
        let started = Instant::now();
        let meta = wire::meta_for(cx.meta, self.wire);
        let outcome = tokio::select! {
            outcome = forward(
                self.peer(),
                request,
                meta,
                &cx.ct,
                (&self.upstream_tokens, cx.peer),
                shared.config().request_timeout,
            ) => outcome,
            // The connection ends with the proxy: the call gets an error, not silence.
            () = shared.closing().cancelled() => {
                telemetry::request_failed(method, UpstreamErrorCode::Cancelled);
                return Err(shutting_down());
            }
        };
        telemetry::request_done(method, started.elapsed());
        match outcome {
            Ok(mut result) => {
                wire::stamp_result_type(&mut result);
                Ok(result)
            }
            Err(Failure::Gone(why)) => {
                telemetry::request_failed(method, UpstreamErrorCode::Transport);
                // A reply that cannot be read fails here too: say what failed,
                // not that the upstream went away.
                let why = self
                    .why_gone(format!("the connection to the upstream failed: {why}"))
                    .await;
                if self.child.is_none() && !self.lost.swap(true, Ordering::Relaxed) {
                    // Counted once per connection; the next call reconnects.
                    telemetry::upstream_exit(UpstreamExit::Disconnected);
                    shared.restart_due();
                }
                Err(McpError::internal_error(why, None))
            }
            Err(failure) => {
                telemetry::request_failed(method, failure.code());
                Err(failure.into_mcp())
            }
        }
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

/// The error of a call the proxy's shutdown ended.
pub(crate) fn shutting_down() -> McpError {
    McpError::internal_error("lro proxy is shutting down; the call did not finish", None)
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
