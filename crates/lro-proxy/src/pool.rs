//! [`Pool`]: the upstream connections that serve sessionless (MCP
//! 2026-07-28) requests, one per principal.
//!
//! A sessionless client has no session to hang an upstream on, and the HTTP
//! face builds a new handler for each of its requests: an upstream per
//! request would cost a child start and an `initialize` per call (0.35 s
//! and more) and lose the upstream's state between calls. Instead each
//! principal gets one long-lived connection, opened on its first request
//! with the `server/discover` probe (falling back to `initialize` for a
//! legacy upstream), and kept until it has been idle for the configured
//! time. Principals never share one: a child's state (server-memory's
//! graph, a shell's working directory) is one tenant's. Without
//! authentication every caller is the one anonymous principal, so all
//! unauthenticated sessionless clients share one.
//!
//! The connection speaks for the proxy, not for one client: its client info
//! is `lro proxy`, and it declares no sampling, elicitation or roots, so a
//! legacy upstream never asks a client that cannot be reached. A modern
//! upstream still sees each request's own client context in `_meta` (see
//! [`crate::wire::meta_for`]).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, RwLock, Weak},
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use lro_core::principal::Principal;
use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        ClientCapabilities, ClientConfig, ClientRequest, Implementation, InitializeRequestParams,
        ProtocolVersion, ServerConfig, ServerResult,
    },
    service::{ClientLifecycleMode, RequestContext, SubscriptionContext},
};
use tokio_util::sync::CancellationToken;

use crate::{
    ProxyShared,
    connection::{Connection, shutting_down},
    listen::{self, Listeners},
    refusal,
    relay::ProgressMap,
    relay::Relay,
    session::flag_as_proxy,
    slots::{Claim, Seat, principal},
    wire::Wire,
};

/// How long the reaper sleeps between looks, at most.
const MAX_TICK: Duration = Duration::from_secs(5);

/// The sessionless connections of one proxy, by principal.
#[derive(Default)]
pub(crate) struct Pool {
    entries: Mutex<HashMap<Principal, Arc<Entry>>>,
    /// What the upstream said of itself last: the capabilities a
    /// sessionless handler declares (`get_info` cannot wait for a
    /// connection).
    info: RwLock<Option<ServerConfig>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let principals = self.entries.lock().map_or(0, |entries| entries.len());
        f.debug_struct("Pool")
            .field("principals", &principals)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Entry {
    conn: RwLock<Option<Arc<Connection>>>,
    /// Held while the connection opens, so that one opens at a time.
    opening: tokio::sync::Mutex<()>,
    activity: Mutex<Activity>,
}

struct Activity {
    last: Instant,
    /// Calls in progress: a call longer than the idle time is not idleness.
    calls: usize,
}

impl Default for Activity {
    fn default() -> Self {
        Self {
            last: Instant::now(),
            calls: 0,
        }
    }
}

/// One call in progress on an entry; dropping it marks the entry used now.
struct InFlight(Arc<Entry>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut activity = self.0.activity();
        activity.calls -= 1;
        activity.last = Instant::now();
    }
}

impl Entry {
    fn activity(&self) -> std::sync::MutexGuard<'_, Activity> {
        self.activity
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn idle(&self, timeout: Duration) -> bool {
        let activity = self.activity();
        activity.calls == 0 && activity.last.elapsed() >= timeout
    }

    fn current(&self) -> Option<Arc<Connection>> {
        let conn = self.conn.read().expect("poisoned").clone()?;
        conn.alive().then_some(conn)
    }
}

impl Pool {
    /// The upstream's self-description from the last connection opened.
    pub(crate) fn info(&self) -> Option<ServerConfig> {
        self.info.read().expect("poisoned").clone()
    }

    /// Forwards a sessionless request on its principal's connection,
    /// opening the connection first if there is none (or its child is gone).
    pub(crate) async fn call(
        &self,
        shared: &ProxyShared,
        request: ClientRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let who = principal(&cx);
        let entry = self.enter(shared, who.clone());
        let conn = self.connect(shared, &cx, who, &entry.0).await?;
        conn.call(shared, request, cx).await
    }

    /// Runs a client's `subscriptions/listen` on its principal's
    /// connection; an open listen keeps the connection from idling out.
    pub(crate) async fn listen(
        &self,
        shared: &ProxyShared,
        cx: SubscriptionContext,
    ) -> Result<(), McpError> {
        let who = principal(cx.request_context());
        let entry = self.enter(shared, who.clone());
        let conn = self
            .connect(shared, cx.request_context(), who, &entry.0)
            .await?;
        match conn.wire() {
            Wire::Modern => listen::relay(conn.peer(), cx).await,
            Wire::Legacy => listen::fan_out(conn.listeners(), conn.peer(), cx).await,
        }
    }

    /// The principal's connection, opened if needed; for `server/discover`,
    /// which needs the upstream's capabilities.
    pub(crate) async fn connection(
        &self,
        shared: &ProxyShared,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Arc<Connection>, McpError> {
        let who = principal(cx);
        let entry = self.enter(shared, who.clone());
        self.connect(shared, cx, who, &entry.0).await
    }

    /// The principal's entry, marked in use (under the map's lock, so the
    /// reaper cannot take it in between).
    fn enter(&self, shared: &ProxyShared, principal: Principal) -> InFlight {
        let mut entries = self.entries.lock().expect("poisoned");
        if entries.is_empty()
            && let Some(timeout) = shared.config().sessionless_idle_timeout
        {
            // The reaper stops when the pool is empty; the next entry
            // starts it again.
            tokio::spawn(reap(shared.pool_weak(), timeout, shared.closing().clone()));
        }
        let entry = entries.entry(principal).or_default().clone();
        entry.activity().calls += 1;
        InFlight(entry)
    }

    /// The entry's connection, opened for `principal` if there is none;
    /// a refusal at a slot cap is marked on `cx`'s request (see
    /// [`refusal::answer`]).
    async fn connect(
        &self,
        shared: &ProxyShared,
        cx: &RequestContext<RoleServer>,
        principal: Principal,
        entry: &Arc<Entry>,
    ) -> Result<Arc<Connection>, McpError> {
        if let Some(conn) = entry.current() {
            return Ok(conn);
        }
        let _opening = entry.opening.lock().await;
        if let Some(conn) = entry.current() {
            return Ok(conn);
        }
        let relay = Relay {
            downstream: None,
            client: proxy_client(),
            upstream_tokens: ProgressMap::default(),
            client_tokens: ProgressMap::default(),
            listeners: Listeners::default(),
        };
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        // The old connection (a dead child) goes before a new one takes a slot.
        entry.conn.write().expect("poisoned").take();
        let claim = Claim {
            principal: principal.clone(),
            seat: Arc::new(PoolSeat {
                pool: shared.pool_weak(),
                principal,
                entry: Arc::downgrade(entry),
            }),
        };
        let conn = tokio::select! {
            opened = Connection::open(shared, claim, relay, lifecycle) => {
                opened.map_err(|err| refusal::answer(err, cx))?
            }
            // A request waiting for the connection ends with the proxy too.
            () = shared.closing().cancelled() => return Err(shutting_down()),
        };
        *self.info.write().expect("poisoned") = conn.info();
        *entry.conn.write().expect("poisoned") = Some(conn.clone());
        Ok(conn)
    }

    /// Ends `principal`'s connection, when `entry` is still its entry and
    /// no call is in progress on it; whether it ended.
    fn evict(&self, principal: &Principal, entry: &Arc<Entry>) -> bool {
        let mut entries = self.entries.lock().expect("poisoned");
        let ours = entries
            .get(principal)
            .is_some_and(|held| Arc::ptr_eq(held, entry));
        if !ours || entry.activity().calls > 0 {
            return false;
        }
        entries.remove(principal);
        drop(entries);
        // Its slot comes back with the connection, even while the entry
        // itself is still referenced.
        let conn = entry.conn.write().expect("poisoned").take();
        drop(conn);
        true
    }

    /// Ends every connection (their children exit).
    pub(crate) fn close(&self) {
        self.entries.lock().expect("poisoned").clear();
    }

    /// Ends the connections idle for `timeout`, and lets go of dead ones
    /// (a child that exited keeps its slot until then); whether any entry
    /// is left.
    fn reap_idle(&self, timeout: Duration) -> bool {
        let mut entries = self.entries.lock().expect("poisoned");
        entries.retain(|_, entry| !entry.idle(timeout));
        for entry in entries.values() {
            let mut conn = entry.conn.write().expect("poisoned");
            if conn.as_ref().is_some_and(|conn| !conn.alive()) {
                conn.take();
            }
        }
        !entries.is_empty()
    }
}

/// Ends connections once idle for `timeout`, until the pool is empty, gone,
/// or the proxy stops.
async fn reap(pool: Weak<Pool>, timeout: Duration, closing: CancellationToken) {
    let tick = (timeout / 4).clamp(Duration::from_millis(50), MAX_TICK);
    loop {
        tokio::select! {
            () = tokio::time::sleep(tick) => {}
            () = closing.cancelled() => return,
        }
        let Some(pool) = pool.upgrade() else { return };
        if !pool.reap_idle(timeout) {
            return;
        }
    }
}

/// A principal's sessionless child, as the slot accounting sees it: another
/// principal may take its slot while it is idle (its next call opens a new
/// one).
struct PoolSeat {
    pool: Weak<Pool>,
    principal: Principal,
    entry: Weak<Entry>,
}

impl Seat for PoolSeat {
    fn idle_since(&self) -> Option<Instant> {
        let entry = self.entry.upgrade()?;
        let activity = entry.activity();
        (activity.calls == 0).then_some(activity.last)
    }

    fn sessionless(&self) -> bool {
        true
    }

    fn reclaim(&self) -> BoxFuture<'static, bool> {
        let ended = match (self.pool.upgrade(), self.entry.upgrade()) {
            (Some(pool), Some(entry)) => pool.evict(&self.principal, &entry),
            _ => false,
        };
        if ended {
            tracing::info!(
                "at the session limit, an idle sessionless upstream was ended for a new one"
            );
        }
        Box::pin(std::future::ready(ended))
    }
}

/// The client the proxy is to an upstream it shares among sessionless
/// clients: itself, flagged as a proxy, able to answer nothing.
fn proxy_client() -> ClientConfig {
    flag_as_proxy(InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("lro proxy", env!("CARGO_PKG_VERSION")),
    ))
}
