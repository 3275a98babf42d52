//! Forwarding one request or notification to a peer, in either direction,
//! and the upstream side of a session: [`Relay`], which carries the
//! upstream's requests and notifications back to the client.

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use lro_core::metric::UpstreamErrorCode;
use rmcp::{
    ErrorData as McpError, RoleClient, RoleServer, Service,
    model::{
        CancelledNotification, CancelledNotificationParam, ClientConfig, ClientResult, GetMeta,
        ProgressToken, ProtocolVersion, RequestMetaObject, ServerNotification, ServerRequest,
    },
    service::{
        NotificationContext, Peer, PeerRequestOptions, RequestContext, ServiceError, ServiceRole,
    },
};
use tokio_util::sync::CancellationToken;

use crate::telemetry;

/// Progress tokens of requests in flight: the token rmcp gave the forwarded
/// request, mapped to the token its sender chose. rmcp's `Peer` mints a token
/// of its own for every request it sends, so progress is mapped back.
#[derive(Clone, Default)]
pub(crate) struct ProgressMap(Arc<Mutex<HashMap<ProgressToken, ProgressToken>>>);

impl ProgressMap {
    fn insert(&self, forwarded: ProgressToken, original: ProgressToken) {
        self.lock().insert(forwarded, original);
    }

    fn remove(&self, forwarded: &ProgressToken) {
        self.lock().remove(forwarded);
    }

    pub(crate) fn original(&self, forwarded: &ProgressToken) -> Option<ProgressToken> {
        self.lock().get(forwarded).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressToken>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// How a forwarded request ended without an answer.
pub(crate) enum Failure {
    /// The peer answered with a JSON-RPC error: passed on unchanged.
    Answered(McpError),
    /// The sender cancelled the request; the peer was told.
    Cancelled,
    /// The peer went away before answering.
    Gone(String),
}

impl Failure {
    pub(crate) fn code(&self) -> UpstreamErrorCode {
        match self {
            Failure::Answered(err) => UpstreamErrorCode::from_code(err.code.0),
            Failure::Cancelled => UpstreamErrorCode::Cancelled,
            Failure::Gone(_) => UpstreamErrorCode::Transport,
        }
    }
}

/// Sends `request` to `peer` with the sender's `_meta`, and waits for the
/// answer or for `ct`. A cancellation is passed on to the peer as
/// `notifications/cancelled` with the forwarded request's id.
pub(crate) async fn forward<R: ServiceRole>(
    peer: &Peer<R>,
    request: R::Req,
    meta: RequestMetaObject,
    ct: &CancellationToken,
    progress: &ProgressMap,
) -> Result<R::PeerResp, Failure> {
    let original = meta.get_progress_token();
    let mut options = PeerRequestOptions::no_options();
    options.meta = Some(meta);
    let handle = peer
        .send_request_with_option(request, options)
        .await
        .map_err(gone)?;
    let id = handle.id.clone();
    let forwarded = handle.progress_token.clone();
    if let Some(original) = original {
        progress.insert(forwarded.clone(), original);
    }
    let outcome = tokio::select! {
        answer = handle.await_response() => answer.map_err(|err| match err {
            ServiceError::McpError(err) => Failure::Answered(err),
            other => gone(other),
        }),
        () = ct.cancelled() => {
            let cancel = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some("cancelled by the client".to_owned()),
            ));
            let _ = peer.send_notification(cancel.into()).await;
            Err(Failure::Cancelled)
        }
    };
    progress.remove(&forwarded);
    outcome
}

fn gone(err: ServiceError) -> Failure {
    Failure::Gone(err.to_string())
}

/// The upstream side of one session: answers the upstream's requests by
/// asking the real client, and passes its notifications on.
#[derive(Clone)]
pub(crate) struct Relay {
    pub(crate) downstream: Peer<RoleServer>,
    /// The client's own `initialize` parameters, plus the proxy flag.
    pub(crate) client: ClientConfig,
    pub(crate) progress: ProgressMap,
}

impl Service<RoleClient> for Relay {
    async fn handle_request(
        &self,
        request: ServerRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
        let method = telemetry::method_label(match &request {
            ServerRequest::PingRequest(_) => "ping",
            ServerRequest::CreateMessageRequest(_) => "sampling/createMessage",
            ServerRequest::ListRootsRequest(_) => "roots/list",
            ServerRequest::ElicitRequest(_) => "elicitation/create",
            ServerRequest::CustomRequest(custom) => custom.method.as_str(),
            _ => "other",
        });
        let started = Instant::now();
        let outcome = forward(
            &self.downstream,
            request,
            context.meta,
            &context.ct,
            &self.progress,
        )
        .await;
        telemetry::request_done(method, started.elapsed());
        outcome.map_err(|failure| {
            telemetry::request_failed(method, failure.code());
            match failure {
                Failure::Answered(err) => err,
                Failure::Cancelled => McpError::internal_error("cancelled", None),
                Failure::Gone(why) => {
                    McpError::internal_error(format!("the client went away: {why}"), None)
                }
            }
        })
    }

    async fn handle_notification(
        &self,
        notification: ServerNotification,
        context: NotificationContext<RoleClient>,
    ) -> Result<(), McpError> {
        let mut notification = match notification {
            // rmcp has already cancelled the forwarded request's token, which
            // tells the client with the client's own request id.
            ServerNotification::CancelledNotification(_) => return Ok(()),
            ServerNotification::ProgressNotification(mut progress) => {
                let Some(original) = self.progress.original(&progress.params.progress_token) else {
                    // Progress for a request the client sent no token with.
                    return Ok(());
                };
                progress.params.progress_token = original;
                ServerNotification::ProgressNotification(progress)
            }
            other => other,
        };
        *notification.get_meta_mut() = context.meta;
        // A client that is gone cannot be told; the session is ending anyway.
        let _ = self.downstream.send_notification(notification).await;
        Ok(())
    }

    fn get_info(&self) -> ClientConfig {
        self.client.clone()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }
}
