//! Forwarding one request or notification to a peer, in either direction,
//! and the upstream side of a session: [`Relay`], which carries the
//! upstream's requests and notifications back to the client.

use std::{
    borrow::Cow,
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use lro_core::metric::UpstreamErrorCode;
use rmcp::{
    ErrorData as McpError, RoleClient, RoleServer, Service,
    model::{
        CancelledNotification, CancelledNotificationParam, ClientConfig, ClientResult, GetMeta,
        NotificationMetaObject, ProgressToken, ProtocolVersion, RequestMetaObject,
        ServerNotification, ServerRequest,
    },
    service::{
        NotificationContext, Peer, PeerRequestOptions, RequestContext, ServiceError, ServiceRole,
    },
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::{listen::Listeners, telemetry};

/// Progress tokens of forwarded requests: the token rmcp gave the forwarded
/// request, mapped to the token its sender chose and to `R`, where its
/// progress goes. rmcp's `Peer` mints a token of its own for every request
/// it sends, so progress is mapped back. Each direction of each upstream
/// connection has its own map: every `Peer` counts its tokens from 0.
///
/// The client's requests map to the client's peer of each request: one
/// upstream connection serves many sessionless clients.
///
/// rmcp handles each notification in a task of its own, so the last progress
/// of a request can be handled after its answer: a finished request's tokens
/// stay known for the next [`RETIRED`] requests.
pub(crate) struct ProgressMap<R = ()>(Arc<Mutex<Tokens<R>>>);

impl<R> Clone for ProgressMap<R> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<R> Default for ProgressMap<R> {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(Tokens {
            map: HashMap::new(),
            retired: VecDeque::new(),
            passing: HashMap::new(),
            passed: Arc::default(),
        })))
    }
}

/// Finished requests whose tokens are still mapped.
const RETIRED: usize = 256;

/// The longest an answer waits for its request's progress to be sent.
const SETTLE: Duration = Duration::from_secs(1);

struct Tokens<R> {
    map: HashMap<ProgressToken, (ProgressToken, R)>,
    retired: VecDeque<ProgressToken>,
    /// Progress notifications being passed on, by forwarded token.
    passing: HashMap<ProgressToken, usize>,
    passed: Arc<Notify>,
}

/// Marks one progress notification as being passed on; dropping it says it
/// has been sent.
struct Passing<R> {
    map: ProgressMap<R>,
    token: ProgressToken,
}

impl<R> Drop for Passing<R> {
    fn drop(&mut self) {
        let mut tokens = self.map.lock();
        if let Some(n) = tokens.passing.get_mut(&self.token) {
            *n -= 1;
            if *n == 0 {
                tokens.passing.remove(&self.token);
            }
        }
        tokens.passed.notify_waiters();
    }
}

impl<R> ProgressMap<R> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Tokens<R>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<R: Clone> ProgressMap<R> {
    fn insert(&self, forwarded: ProgressToken, original: ProgressToken, route: R) {
        self.lock().map.insert(forwarded, (original, route));
    }

    fn retire(&self, forwarded: ProgressToken) {
        let mut tokens = self.lock();
        if !tokens.map.contains_key(&forwarded) {
            return;
        }
        tokens.retired.push_back(forwarded);
        while tokens.retired.len() > RETIRED {
            if let Some(old) = tokens.retired.pop_front() {
                tokens.map.remove(&old);
            }
        }
    }

    pub(crate) fn original(&self, forwarded: &ProgressToken) -> Option<ProgressToken> {
        self.lock()
            .map
            .get(forwarded)
            .map(|(original, _)| original.clone())
    }

    /// The original token and its route, and a mark that holds the answer
    /// to the request back until this notification has been sent.
    fn begin(&self, forwarded: &ProgressToken) -> Option<(ProgressToken, R, Passing<R>)> {
        let mut tokens = self.lock();
        let (original, route) = tokens.map.get(forwarded).cloned()?;
        *tokens.passing.entry(forwarded.clone()).or_default() += 1;
        let mark = Passing {
            map: self.clone(),
            token: forwarded.clone(),
        };
        Some((original, route, mark))
    }

    /// Waits until no progress of `forwarded` is being passed on, at most
    /// [`SETTLE`]. rmcp hands each notification to a task of its own while
    /// the answer goes straight to the request, so without this the last
    /// progress could reach the client after the answer it precedes.
    async fn settle(&self, forwarded: &ProgressToken) {
        // The notification's task was spawned before the answer came; give
        // it its turn to start.
        tokio::task::yield_now().await;
        let wait = async {
            loop {
                let passed = self.lock().passed.clone();
                let notified = passed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if !self.lock().passing.contains_key(forwarded) {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(SETTLE, wait).await;
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
    /// No answer within the timeout; rmcp told the peer the request is
    /// cancelled.
    TimedOut(Duration),
}

impl Failure {
    /// The JSON-RPC error the sender gets: the peer's own, unchanged, or
    /// one that says what happened.
    pub(crate) fn into_mcp(self) -> McpError {
        match self {
            Failure::Answered(err) => err,
            Failure::Cancelled => McpError::internal_error("cancelled by the sender", None),
            Failure::Gone(why) => {
                McpError::internal_error(format!("the peer went away: {why}"), None)
            }
            Failure::TimedOut(timeout) => McpError::internal_error(
                format!(
                    "no answer from the upstream within the request timeout of {}s \
                     (lro proxy --request-timeout); the request was cancelled upstream",
                    timeout.as_secs_f64()
                ),
                Some(serde_json::json!({"timeoutSeconds": timeout.as_secs_f64()})),
            ),
        }
    }

    pub(crate) fn code(&self) -> UpstreamErrorCode {
        match self {
            Failure::Answered(err) => UpstreamErrorCode::from_code(err.code.0),
            Failure::Cancelled => UpstreamErrorCode::Cancelled,
            Failure::Gone(_) => UpstreamErrorCode::Transport,
            Failure::TimedOut(_) => UpstreamErrorCode::Timeout,
        }
    }
}

/// Sends `request` to `peer` with the sender's `_meta`, and waits for the
/// answer, for `ct`, or for `timeout` without an answer or progress. Its
/// progress goes to `route`. A cancellation is passed on to the peer as
/// `notifications/cancelled` with the forwarded request's id (rmcp sends it
/// itself on a timeout).
pub(crate) async fn forward<R: ServiceRole, T: Clone>(
    peer: &Peer<R>,
    request: R::Req,
    meta: RequestMetaObject,
    ct: &CancellationToken,
    (progress, route): (&ProgressMap<T>, T),
    timeout: Option<Duration>,
) -> Result<R::PeerResp, Failure> {
    let original = meta.get_progress_token();
    let options = match timeout {
        // A call that reports progress is working, however long it takes.
        Some(timeout) => PeerRequestOptions::with_timeout(timeout).reset_timeout_on_progress(),
        None => PeerRequestOptions::no_options(),
    };
    let options = options.with_meta(meta);
    let handle = peer
        .send_request_with_option(request, options)
        .await
        .map_err(gone)?;
    let id = handle.id.clone();
    let forwarded = handle.progress_token.clone();
    let tracked = original.is_some();
    if let Some(original) = original {
        progress.insert(forwarded.clone(), original, route);
    }
    let outcome = tokio::select! {
        answer = handle.await_response() => {
            // Only a request the sender gave a token can have progress to wait for.
            if tracked {
                progress.settle(&forwarded).await;
            }
            answer.map_err(|err| match err {
                ServiceError::McpError(err) => Failure::Answered(err),
                ServiceError::Timeout { timeout } => Failure::TimedOut(timeout),
                other => gone(other),
            })
        }
        () = ct.cancelled() => {
            let cancel = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some("cancelled by the client".to_owned()),
            ));
            let _ = peer.send_notification(cancel.into()).await;
            Err(Failure::Cancelled)
        }
    };
    progress.retire(forwarded);
    outcome
}

/// Puts a notification's `_meta` back, when it had one: an empty map would
/// add `"params": {"_meta": {}}` to a notification that had no params.
pub(crate) fn set_meta<N: GetMeta<Metadata = NotificationMetaObject>>(
    notification: &mut N,
    meta: NotificationMetaObject,
) {
    if !meta.is_empty() {
        *notification.get_meta_mut() = meta;
    }
}

fn gone(err: ServiceError) -> Failure {
    Failure::Gone(lro_core::error::chain(&err).to_string())
}

/// The upstream side of one connection: answers the upstream's requests by
/// asking the real client, and passes its notifications on.
///
/// A connection that serves sessionless clients has no one client to ask
/// or to tell (`downstream` is `None`): the upstream's requests get an
/// error, and only progress, which names its request, reaches a client.
#[derive(Clone)]
pub(crate) struct Relay {
    pub(crate) downstream: Option<Peer<RoleServer>>,
    /// The client's own `initialize` parameters, plus the proxy flag.
    pub(crate) client: ClientConfig,
    /// Tokens of the client's requests, as forwarded to the upstream, and
    /// the client peer each came from.
    pub(crate) upstream_tokens: ProgressMap<Peer<RoleServer>>,
    /// Tokens of the upstream's requests, as relayed to the client.
    pub(crate) client_tokens: ProgressMap,
    /// The sessionless clients' open listens, for a legacy upstream's
    /// change notifications.
    pub(crate) listeners: Listeners,
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
        let Some(downstream) = &self.downstream else {
            return match request {
                ServerRequest::PingRequest(_) => Ok(ClientResult::empty(())),
                _ => Err(McpError::invalid_request(
                    "lro proxy serves sessionless (MCP 2026-07-28) clients on this \
                     connection; it cannot pass a server request on to them",
                    None,
                )),
            };
        };
        let started = Instant::now();
        // No timeout of the proxy's own: the upstream keeps the one it set
        // for its request, and an elicitation waits for a person.
        let outcome = forward(
            downstream,
            request,
            context.meta,
            &context.ct,
            (&self.client_tokens, ()),
            None,
        )
        .await;
        telemetry::request_done(method, started.elapsed());
        outcome.map_err(|failure| {
            telemetry::request_failed(method, failure.code());
            failure.into_mcp()
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
                let Some((original, client, passing)) =
                    self.upstream_tokens.begin(&progress.params.progress_token)
                else {
                    // Progress for a request the client sent no token with.
                    return Ok(());
                };
                progress.params.progress_token = original;
                let mut notification = ServerNotification::ProgressNotification(progress);
                set_meta(&mut notification, context.meta);
                let _ = client.send_notification(notification).await;
                drop(passing);
                return Ok(());
            }
            other => other,
        };
        // Sessionless clients hear of changes on their listens only; no
        // request stream of theirs is about a log line of the upstream's.
        let Some(downstream) = &self.downstream else {
            if matches!(
                notification,
                ServerNotification::ToolListChangedNotification(_)
                    | ServerNotification::PromptListChangedNotification(_)
                    | ServerNotification::ResourceListChangedNotification(_)
                    | ServerNotification::ResourceUpdatedNotification(_)
            ) {
                self.listeners.deliver(notification).await;
            }
            return Ok(());
        };
        set_meta(&mut notification, context.meta);
        // A client that is gone cannot be told; the session is ending anyway.
        let _ = downstream.send_notification(notification).await;
        Ok(())
    }

    fn get_info(&self) -> ClientConfig {
        self.client.clone()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    #[test]
    fn a_finished_requests_token_stays_mapped_for_late_progress() {
        let map = ProgressMap::<()>::default();
        map.insert(token(0), token(100), ());
        map.retire(token(0));
        assert_eq!(map.original(&token(0)), Some(token(100)));
        for n in 1..=RETIRED as i64 {
            map.insert(token(n), token(100 + n), ());
            map.retire(token(n));
        }
        assert_eq!(map.original(&token(0)), None, "the oldest is forgotten");
        assert_eq!(
            map.original(&token(RETIRED as i64)),
            Some(token(100 + RETIRED as i64))
        );
        map.retire(token(9999));
        assert_eq!(
            map.lock().retired.len(),
            RETIRED,
            "unknown tokens are not queued"
        );
    }
}
