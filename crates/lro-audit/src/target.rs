//! One MCP client session with the target (an [`Upstream`]).
//!
//! An [`Upstream::Command`] is launched afresh for every configuration the
//! audit needs, with the spec's `ATLATL_PROMPT__OFFLOAD__*` variables set
//! after its own `env` (so it cannot replace them) and this project's
//! cleanup-schedule knob before it (so it can); its stderr is kept, because
//! that is one place the spec's events show. An [`Upstream::Http`] is a
//! running server: the auditor only connects to it. Either is spoken to
//! over the wire the audit asks for (`negotiation.rs`).

use std::{
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use lro_core::proxy_flag::{self, PROXY_EXTENSION};
use lro_upstream::Upstream;
use rmcp::{
    RoleClient,
    model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, ClientJsonRpcMessage,
        ClientRequest, CustomRequest, GetMeta as _, Implementation, JsonRpcMessage,
        ProtocolVersion, Tool,
    },
    service::{ClientServiceExt as _, RunningService, RxJsonRpcMessage},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess, Transport,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::Value;
use tokio::io::AsyncReadExt as _;

use crate::{
    AuditError,
    negotiation::{Wire, WireMode},
    probe::Call,
};

/// The configuration a launched target gets, through the spec's variables.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub(crate) enabled: bool,
    pub(crate) threshold: u64,
    pub(crate) ttl_seconds: u64,
    pub(crate) output_dir: PathBuf,
}

/// This project's cleanup-schedule knob (`cleanup_schedule`), set to every
/// second so expiry is seen quickly; other implementations ignore it.
fn schedule_knob() -> String {
    var("cleanup_schedule")
}
const EVERY_SECOND: &str = "* * * * * *";
/// Most stderr kept per session; later output is read and dropped.
const STDERR_CAP: usize = 8 << 20;

/// What a tool call gave back.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// The `CallToolResult`, as JSON.
    Result(Value),
    /// A JSON-RPC error or a transport failure, as text.
    Error(String),
}

/// How a session is opened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opening {
    /// Send the proxy flag, in both of its forms.
    pub(crate) proxy: bool,
    /// The wire to ask for.
    pub(crate) wire: WireMode,
    /// Bound on the start, the tool listing and each call.
    pub(crate) timeout: Duration,
}

/// One client session with the target.
pub(crate) struct Session {
    client: RunningService<RoleClient, ClientConfig>,
    stderr: Arc<Mutex<String>>,
    tools: Vec<Tool>,
    call_timeout: Duration,
    wire: Wire,
}

impl Session {
    /// Launches (or connects to) the target and starts the session over
    /// the wire `how` asks for.
    pub(crate) async fn open(
        target: &Upstream,
        launch: Option<&Launch>,
        how: Opening,
    ) -> Result<Self, AuditError> {
        let Opening {
            proxy,
            wire,
            timeout,
        } = how;
        let info = client_info(proxy, wire);
        let stderr = Arc::new(Mutex::new(String::new()));
        let unreachable = |reason: String| AuditError::Unreachable {
            target: target.to_string(),
            reason,
        };
        let not_started = |e: rmcp::service::ClientInitializeError| {
            unreachable(format!(
                "{} failed: {}",
                start(wire),
                lro_core::error::chain(&e)
            ))
        };
        let serving = async {
            match target {
                Upstream::Command { program, args, env } => {
                    let mut cmd = tokio::process::Command::new(program);
                    cmd.args(args).env(schedule_knob(), EVERY_SECOND);
                    cmd.envs(env.iter().map(|(k, v)| (k, v)));
                    if let Some(l) = launch {
                        cmd.env(var("enabled"), l.enabled.to_string())
                            .env(var("threshold_tokens"), l.threshold.to_string())
                            .env(var("ttl_seconds"), l.ttl_seconds.to_string())
                            .env(var("output_dir"), &l.output_dir);
                    }
                    let (transport, err) = TokioChildProcess::builder(cmd)
                        .stderr(Stdio::piped())
                        .spawn()
                        .map_err(|e| {
                            unreachable(format!("cannot launch: {}", lro_core::error::chain(&e)))
                        })?;
                    if let Some(err) = err {
                        tokio::spawn(keep_stderr(err, stderr.clone()));
                    }
                    let flagged = Flagged {
                        inner: transport,
                        proxy,
                    };
                    info.clone()
                        .serve_with_lifecycle(flagged, wire.lifecycle())
                        .await
                        .map_err(not_started)
                }
                Upstream::Http { url, headers } => {
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    config.custom_headers = headers.iter().cloned().collect();
                    let transport = StreamableHttpClientTransport::from_config(config);
                    info.clone()
                        .serve_with_lifecycle(transport, wire.lifecycle())
                        .await
                        .map_err(not_started)
                }
            }
        };
        let client = tokio::time::timeout(timeout, serving).await.map_err(|_| {
            unreachable(format!(
                "no {} answer within {}s",
                start(wire),
                timeout.as_secs()
            ))
        })??;
        let version = client
            .peer()
            .peer_info()
            .map_or(ProtocolVersion::LATEST_WITH_INITIALIZE, |i| {
                i.protocol_version.clone()
            });
        let tools = tokio::time::timeout(timeout, client.peer().list_all_tools())
            .await
            .map_err(|_| unreachable("no tools/list answer".to_owned()))?
            .map_err(|e| {
                unreachable(format!("tools/list failed: {}", lro_core::error::chain(&e)))
            })?;
        Ok(Self {
            client,
            stderr,
            tools,
            call_timeout: timeout,
            wire: Wire::new(wire, &version),
        })
    }

    /// The wire the session speaks.
    pub(crate) fn wire(&self) -> &Wire {
        &self.wire
    }

    /// The tools the server lists.
    pub(crate) fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Makes one tool call, bounded in time.
    pub(crate) async fn call(&self, call: &Call) -> Outcome {
        let mut params = CallToolRequestParams::new(call.tool.clone());
        params.arguments = Some(call.args.clone());
        match tokio::time::timeout(self.call_timeout, self.client.peer().call_tool(params)).await {
            Err(_) => Outcome::Error(format!("no answer within {}s", self.call_timeout.as_secs())),
            Ok(Err(e)) => Outcome::Error(lro_core::error::chain(&e).to_string()),
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(v) => Outcome::Result(v),
                Err(e) => Outcome::Error(e.to_string()),
            },
        }
    }

    /// Everything the launched server wrote to stderr so far.
    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Ends the session; a launched server is shut down the way the MCP
    /// spec says (stdin closed, then SIGTERM, then SIGKILL).
    pub(crate) async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

/// `ATLATL_PROMPT__OFFLOAD__{KEY}`.
fn var(key: &str) -> String {
    lro_core::config::env_var_for(&format!("{}.{key}", lro_core::config::SECTION))
}

/// What starts a session in `wire`, for errors.
fn start(wire: WireMode) -> &'static str {
    match wire {
        WireMode::Auto => "server/discover or initialize",
        WireMode::Modern => "server/discover",
        WireMode::Legacy => "initialize",
    }
}

fn client_info(proxy: bool, wire: WireMode) -> ClientConfig {
    let mut caps = ClientCapabilities::default();
    if proxy {
        caps.extensions = Some(
            [(PROXY_EXTENSION.to_owned(), proxy_flag::proxy_settings())]
                .into_iter()
                .collect(),
        );
    }
    let mut info = ClientConfig::default();
    info.capabilities = caps;
    info.client_info = Implementation::new("lro-audit", env!("CARGO_PKG_VERSION"));
    if wire == WireMode::Legacy {
        // rmcp's default is 2026-07-28, which `initialize` does not name.
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    }
    info
}

async fn keep_stderr(mut err: tokio::process::ChildStderr, into: Arc<Mutex<String>>) {
    let mut buf = vec![0u8; 16 << 10];
    while let Ok(n) = err.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if let Ok(mut s) = into.lock()
            && s.len() < STDERR_CAP
        {
            s.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }
}

/// A client transport that adds the spec's `clientInfo.proxy: true` when
/// asked (rmcp's typed model has no field for it): to `initialize`, and to
/// the client info in the `_meta` of every request of 2026-07-28, which has
/// no `initialize`.
struct Flagged<T> {
    inner: T,
    proxy: bool,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Flagged<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let item = if self.proxy {
            flag_initialize(item)
        } else {
            item
        };
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// `initialize` as a custom request of the same method whose params carry
/// `clientInfo.proxy: true`; a request whose `_meta` carries client info,
/// with `proxy: true` added to it; any other message unchanged.
fn flag_initialize(message: ClientJsonRpcMessage) -> ClientJsonRpcMessage {
    let JsonRpcMessage::Request(mut request) = message else {
        return message;
    };
    if let ClientRequest::InitializeRequest(init) = &request.request
        && let Ok(mut params) = serde_json::to_value(&init.params)
    {
        proxy_flag::mark_proxy_client_info(&mut params);
        request.request =
            ClientRequest::CustomRequest(CustomRequest::new("initialize", Some(params)));
    } else {
        proxy_flag::mark_proxy_meta(request.request.get_meta_mut());
    }
    JsonRpcMessage::Request(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specs_variable_names() {
        assert_eq!(
            var("threshold_tokens"),
            "ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS"
        );
        assert_eq!(schedule_knob(), "ATLATL_PROMPT__OFFLOAD__CLEANUP_SCHEDULE");
    }

    #[test]
    fn proxy_flag_in_the_capability() {
        let info = serde_json::to_value(client_info(true, WireMode::Auto)).unwrap();
        assert_eq!(
            info["capabilities"]["extensions"][PROXY_EXTENSION]["proxy"],
            true
        );
        let plain = serde_json::to_value(client_info(false, WireMode::Legacy)).unwrap();
        assert!(plain["capabilities"].get("extensions").is_none());
        assert_eq!(plain["protocolVersion"], "2025-11-25");
    }

    #[test]
    fn proxy_flag_in_the_client_info_of_every_2026_request() {
        use rmcp::model::{ListToolsRequest, RequestMetaObject};

        let mut list = ListToolsRequest::default();
        list.extensions
            .insert(RequestMetaObject::with_client_context(
                ProtocolVersion::V_2026_07_28,
                Implementation::new("lro-audit", "0"),
                ClientCapabilities::default(),
            ));
        let message = ClientJsonRpcMessage::request(
            ClientRequest::ListToolsRequest(list),
            rmcp::model::NumberOrString::Number(1),
        );
        let sent = serde_json::to_value(flag_initialize(message)).unwrap();
        assert_eq!(
            sent["params"]["_meta"][proxy_flag::META_CLIENT_INFO]["proxy"],
            true
        );
        assert_eq!(
            sent["params"]["_meta"][proxy_flag::META_CLIENT_INFO]["name"],
            "lro-audit"
        );
    }
}
