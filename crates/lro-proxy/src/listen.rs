//! `subscriptions/listen` (MCP 2026-07-28) through the proxy: the stream on
//! which a sessionless client hears of list changes and resource updates.
//!
//! rmcp acknowledges the client's listen with the filter the proxy accepts
//! (what it asked for, within what the upstream declares), then the listen
//! runs until the client cancels it:
//!
//! - A 2026-07-28 upstream gets a listen of its own for that filter, and what
//!   it sends on it is passed on ([`relay`]). (It may acknowledge less than the proxy
//!   did; those categories then never fire.)
//! - A legacy upstream has no listen: it sends its `list_changed` and
//!   `resources/updated` notifications on the connection. The connection's
//!   [`Listeners`] pass each to every open listen (each sink drops what its
//!   filter did not accept), and the resources a listen names are
//!   subscribed upstream with `resources/subscribe`, counted, so that the
//!   last listen to drop a resource unsubscribes it ([`fan_out`]).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use lro_core::error::chain;
use rmcp::{
    ErrorData as McpError, RoleClient,
    model::{ServerNotification, SubscribeRequestParams, UnsubscribeRequestParams},
    service::{Peer, SubscriptionContext, SubscriptionSink},
};

/// The open listens of one upstream connection, for an upstream that has
/// no listen of its own.
#[derive(Clone, Default)]
pub(crate) struct Listeners(Arc<Mutex<Registry>>);

#[derive(Default)]
struct Registry {
    next: u64,
    sinks: HashMap<u64, SubscriptionSink>,
    /// How many open listens name each resource.
    resources: HashMap<String, usize>,
}

impl Listeners {
    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds a listen; the resources no other listen named yet, to subscribe.
    fn add(&self, sink: SubscriptionSink) -> (u64, Vec<String>) {
        let mut registry = self.lock();
        let id = registry.next;
        registry.next += 1;
        let uris = sink
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let first = uris
            .into_iter()
            .filter(|uri| {
                let count = registry.resources.entry(uri.clone()).or_default();
                *count += 1;
                *count == 1
            })
            .collect();
        registry.sinks.insert(id, sink);
        (id, first)
    }

    /// Removes a listen; the resources no listen names any more.
    fn remove(&self, id: u64) -> Vec<String> {
        let mut registry = self.lock();
        let Some(sink) = registry.sinks.remove(&id) else {
            return Vec::new();
        };
        let uris = sink
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        uris.into_iter()
            .filter(|uri| match registry.resources.get_mut(uri) {
                Some(count) if *count > 1 => {
                    *count -= 1;
                    false
                }
                _ => {
                    registry.resources.remove(uri);
                    true
                }
            })
            .collect()
    }

    /// Passes an upstream notification to every open listen that accepted
    /// its kind.
    pub(crate) async fn deliver(&self, notification: ServerNotification) {
        let sinks: Vec<SubscriptionSink> = self.lock().sinks.values().cloned().collect();
        for sink in sinks {
            // Not accepted by this listen, or the listen just ended.
            let _ = sink.send(notification.clone()).await;
        }
    }
}

/// Runs one client listen on a 2026-07-28 `upstream`'s own listen, until
/// the client cancels it or the upstream ends it.
pub(crate) async fn relay(
    upstream: &Peer<RoleClient>,
    cx: SubscriptionContext,
) -> Result<(), McpError> {
    let mut upstream = upstream
        .listen(cx.accepted().clone())
        .await
        .map_err(|err| {
            McpError::internal_error(
                format!("the upstream refused the listen: {}", chain(&err)),
                None,
            )
        })?;
    loop {
        tokio::select! {
            next = upstream.next() => match next {
                Ok(Some(notification)) => {
                    let _ = cx.sink().send(notification).await;
                }
                // The upstream ended its stream: so does the client's.
                Ok(None) => return Ok(()),
                Err(err) => {
                    return Err(McpError::internal_error(
                        format!("the upstream's listen failed: {}", chain(&err)),
                        None,
                    ));
                }
            },
            () = cx.cancelled() => {
                let _ = upstream.cancel().await;
                return Ok(());
            }
        }
    }
}

/// Runs one client listen among a legacy `upstream`'s `listeners`, until
/// the client cancels it.
pub(crate) async fn fan_out(
    listeners: &Listeners,
    upstream: &Peer<RoleClient>,
    cx: SubscriptionContext,
) -> Result<(), McpError> {
    let (id, subscribe) = listeners.add(cx.sink().clone());
    let _registered = Registered {
        listeners: listeners.clone(),
        id,
        upstream: upstream.clone(),
    };
    for uri in subscribe {
        // An upstream that refuses one resource still serves the rest.
        #[allow(deprecated)]
        let _ = upstream.subscribe(SubscribeRequestParams::new(uri)).await;
    }
    cx.cancelled().await;
    Ok(())
}

/// One listen in a connection's [`Listeners`]; dropping it, however the
/// listen ends, takes it out and unsubscribes the resources no other
/// listen names.
struct Registered {
    listeners: Listeners,
    id: u64,
    upstream: Peer<RoleClient>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let unsubscribe = self.listeners.remove(self.id);
        if unsubscribe.is_empty() {
            return;
        }
        let upstream = self.upstream.clone();
        tokio::spawn(async move {
            for uri in unsubscribe {
                #[allow(deprecated)]
                let _ = upstream
                    .unsubscribe(UnsubscribeRequestParams::new(uri))
                    .await;
            }
        });
    }
}
