//! Session reclaim for the HTTP face: [`Reclaiming`], a `SessionManager`
//! over rmcp's `LocalSessionManager` that ends a session once it has been
//! idle for the idle timeout, where a call in progress is activity.
//!
//! rmcp's own keep-alive ends a session when no message has passed for the
//! timeout, even while a call runs, so a call longer than the timeout was cut
//! off with nothing but the SSE priming event and its child killed. Here the
//! session's transport counts the client's requests that have no answer yet
//! ([`Tracked`]), and the reaper passes over a session while any is pending.
//!
//! When a session ends anyway (a `DELETE`, the proxy shutting down, its
//! handler gone with its child), every call still waiting on it gets a
//! JSON-RPC error on its stream, never silence ([`Answered`]).
//!
//! Each request of a session carries the session's [`SessionSeat`] to its
//! handler (in its `http::request::Parts`), which the session's child slot
//! is held for: the slot accounting ([`crate::slots`]) reads from it
//! whether the session is idle, and closes it to make room for a newcomer
//! of the same principal.

use std::{
    collections::{HashMap, HashSet},
    pin::Pin,
    sync::{Arc, Mutex, Weak},
    task::{Context, Poll},
    time::{Duration, Instant},
};

use futures::{Stream, future::BoxFuture};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        ClientJsonRpcMessage, ClientNotification, GetExtensions as _, JsonRpcMessage, RequestId,
        ServerJsonRpcMessage,
    },
    transport::{
        Transport,
        common::server_side_http::{ServerSseMessage, SessionId},
        streamable_http_server::{
            SessionManager,
            session::{
                RestoreOutcome,
                local::{LocalSessionManager, SessionConfig},
            },
        },
    },
};
use tokio_util::task::{TaskTracker, task_tracker::TaskTrackerToken};

use crate::slots::Seat;

/// How long the reaper sleeps between looks, at most.
const MAX_TICK: Duration = Duration::from_secs(5);

/// What one session did last, and what it still owes.
struct Activity(Mutex<State>);

struct State {
    last: Instant,
    /// The client's requests the session has not answered yet.
    pending: HashSet<RequestId>,
}

impl Activity {
    fn new() -> Arc<Self> {
        Arc::new(Self(Mutex::new(State {
            last: Instant::now(),
            pending: HashSet::new(),
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn touch(&self) {
        self.state().last = Instant::now();
    }

    /// Idle for at least `timeout`, with no call in progress.
    fn idle(&self, timeout: Duration) -> bool {
        let state = self.state();
        state.pending.is_empty() && state.last.elapsed() >= timeout
    }
}

/// The sessions of one HTTP face, reclaimed after `timeout` idle.
pub(crate) struct Reclaiming {
    inner: LocalSessionManager,
    /// Itself, for the seats it hands out.
    me: Weak<Reclaiming>,
    sessions: Mutex<HashMap<SessionId, Arc<Activity>>>,
    /// Every request's stream, so that a shutdown can wait for the errors
    /// of the calls it ends to be sent.
    streams: TaskTracker,
}

impl Reclaiming {
    /// Sessions that end after `timeout` without a message and without a
    /// call in progress (`None`: never). Starts the reaper, which stops when
    /// the manager is dropped.
    pub(crate) fn new(timeout: Option<Duration>) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        // Reclaim is ours: rmcp's keep-alive does not see calls in progress.
        inner.session_config = SessionConfig::default();
        inner.session_config.keep_alive = None;
        let this = Arc::new_cyclic(|me| Self {
            inner,
            me: me.clone(),
            sessions: Mutex::default(),
            streams: TaskTracker::new(),
        });
        if let Some(timeout) = timeout {
            tokio::spawn(reap(Arc::downgrade(&this), timeout));
        }
        this
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<Activity>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(activity) = self.sessions().get(id) {
            activity.touch();
        }
    }

    fn track<T>(&self, id: SessionId, transport: T) -> Tracked<T> {
        let activity = Activity::new();
        self.sessions().insert(id, activity.clone());
        Tracked {
            inner: transport,
            activity,
        }
    }

    /// Hands `message`'s handler the session's seat (see the module docs).
    fn seat(&self, id: &SessionId, message: &mut ClientJsonRpcMessage) {
        let JsonRpcMessage::Request(request) = message else {
            return;
        };
        let Some(activity) = self.sessions().get(id).cloned() else {
            return;
        };
        if let Some(parts) = request
            .request
            .extensions_mut()
            .get_mut::<http::request::Parts>()
        {
            parts.extensions.insert(SessionSeat {
                id: id.clone(),
                activity,
                sessions: self.me.clone(),
            });
        }
    }

    /// Closes the session `id` names, if it is open.
    pub(crate) async fn close_session_now(&self, id: &str) {
        let id: SessionId = id.to_owned().into();
        // An unknown or already closed session is no failure here.
        let _ = self.close_session(&id).await;
    }

    /// Ends every session, and waits (at most `wait`) until each call they
    /// left pending has been sent its error.
    pub(crate) async fn close_all(&self, wait: Duration) {
        self.streams.close();
        let ids: Vec<SessionId> = self.sessions().keys().cloned().collect();
        for id in ids {
            let _ = self.close_session(&id).await;
        }
        let _ = tokio::time::timeout(wait, self.streams.wait()).await;
    }
}

/// Closes the sessions that have been idle for `timeout`, until the manager
/// is gone.
async fn reap(sessions: Weak<Reclaiming>, timeout: Duration) {
    let tick = (timeout / 4).clamp(Duration::from_millis(50), MAX_TICK);
    loop {
        tokio::time::sleep(tick).await;
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        let idle: Vec<SessionId> = sessions
            .sessions()
            .iter()
            .filter(|(_, activity)| activity.idle(timeout))
            .map(|(id, _)| id.clone())
            .collect();
        for id in idle {
            tracing::info!(
                idle_s = timeout.as_secs_f64(),
                "an idle session was closed with its upstream"
            );
            let _ = sessions.close_session(&id).await;
        }
    }
}

impl SessionManager for Reclaiming {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = Tracked<<LocalSessionManager as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        let transport = self.track(id.clone(), transport);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.seat(id, &mut message);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.sessions().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.seat(id, &mut message);
        let request = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let stream = self.inner.create_stream(id, message).await?;
        Ok(Answered {
            inner: Box::pin(stream),
            request,
            _open: self.streams.token(),
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(match self.inner.restore_session(id.clone()).await? {
            RestoreOutcome::Restored(transport) => {
                RestoreOutcome::Restored(self.track(id, transport))
            }
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            _ => RestoreOutcome::NotSupported,
        })
    }
}

/// A 2025-11-25 session, as the slot accounting sees it: its principal may
/// close it while it is idle, to make room for a new one.
#[derive(Clone)]
pub(crate) struct SessionSeat {
    id: SessionId,
    activity: Arc<Activity>,
    sessions: Weak<Reclaiming>,
}

impl Seat for SessionSeat {
    fn idle_since(&self) -> Option<Instant> {
        let state = self.activity.state();
        state.pending.is_empty().then_some(state.last)
    }

    fn sessionless(&self) -> bool {
        false
    }

    fn reclaim(&self) -> BoxFuture<'static, bool> {
        let (id, activity, sessions) = (
            self.id.clone(),
            self.activity.clone(),
            self.sessions.clone(),
        );
        Box::pin(async move {
            let Some(sessions) = sessions.upgrade() else {
                return false;
            };
            if !activity.idle(Duration::ZERO) {
                return false;
            }
            tracing::info!(
                "at the session limit, a principal's idle session was closed for its new one"
            );
            let _ = sessions.close_session(&id).await;
            true
        })
    }
}

/// A session's transport that records its activity: every message in either
/// direction, and the client's requests still waiting for their answer.
pub(crate) struct Tracked<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Tracked<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let mut state = self.activity.state();
        if let Some(id) = answered {
            state.pending.remove(id);
        }
        state.last = Instant::now();
        drop(state);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let message = self.inner.receive().await?;
        let mut state = self.activity.state();
        match &message {
            JsonRpcMessage::Request(request) => {
                state.pending.insert(request.id.clone());
            }
            // A cancelled request may never be answered.
            JsonRpcMessage::Notification(note) => {
                if let ClientNotification::CancelledNotification(cancelled) = &note.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    state.pending.remove(id);
                }
            }
            _ => {}
        }
        state.last = Instant::now();
        drop(state);
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// A request's SSE stream that ends with a JSON-RPC error when the session
/// ended before it carried the request's answer.
struct Answered {
    inner: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
    /// The request still owed its answer; `None` once answered (or for a
    /// stream that owes none).
    request: Option<RequestId>,
    _open: TaskTrackerToken,
}

impl Stream for Answered {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(message)) => {
                let answers = match message.message.as_deref() {
                    Some(JsonRpcMessage::Response(response)) => Some(&response.id),
                    Some(JsonRpcMessage::Error(error)) => error.id.as_ref(),
                    _ => None,
                };
                if answers.is_some() && answers == self.request.as_ref() {
                    self.request = None;
                }
                Poll::Ready(Some(message))
            }
            Poll::Ready(None) => Poll::Ready(self.request.take().map(|id| {
                ServerSseMessage::from_message(ServerJsonRpcMessage::error(
                    ErrorData::internal_error(
                        "the session ended before the call finished (closed, or the proxy is shutting down)",
                        None,
                    ),
                    Some(id),
                ))
            })),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;
    use rmcp::model::{NumberOrString, ServerResult};

    use super::*;

    fn answered(messages: Vec<ServerSseMessage>, request: Option<RequestId>) -> Answered {
        Answered {
            inner: Box::pin(futures::stream::iter(messages)),
            request,
            _open: TaskTracker::new().token(),
        }
    }

    #[tokio::test]
    async fn a_stream_that_ends_unanswered_ends_with_an_error_for_its_request() {
        let id = NumberOrString::Number(7);
        let cut: Vec<_> = answered(vec![ServerSseMessage::default()], Some(id.clone()))
            .collect()
            .await;
        assert_eq!(cut.len(), 2, "the priming event, then the error");
        let last = cut[1].message.as_deref().unwrap();
        assert!(matches!(last, JsonRpcMessage::Error(e) if e.id == Some(id.clone())));

        let answer = ServerJsonRpcMessage::response(ServerResult::empty(()), id.clone());
        let done: Vec<_> = answered(vec![ServerSseMessage::from_message(answer)], Some(id))
            .collect()
            .await;
        assert_eq!(done.len(), 1, "an answered request gets nothing more");
        let none: Vec<_> = answered(vec![], None).collect().await;
        assert!(none.is_empty());
    }

    #[test]
    fn a_session_with_a_call_in_progress_is_never_idle() {
        let activity = Activity::new();
        assert!(activity.idle(Duration::ZERO));
        activity.state().pending.insert(NumberOrString::Number(1));
        assert!(
            !activity.idle(Duration::ZERO),
            "a call in progress is activity"
        );
        activity.state().pending.clear();
        assert!(!activity.idle(Duration::from_secs(3600)));
    }
}
