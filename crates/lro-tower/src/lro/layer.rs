//! [`LroLayer`]: builds [`LroService`] around any `rmcp::ServerHandler`.

use std::sync::Arc;

use lro_core::{EventSink, OffloadConfig, TokenEstimator};
use lro_extract::{ExtractConfig, Isolation};
use tower_layer::Layer;

use super::{CallerTrace, LroService, error::Error, shared::Shared};
use crate::principal::PrincipalSource;

/// A tower layer that wraps a server handler with Large Result Offloading.
///
/// Setters take and return `self`. Clones share one configuration, estimator
/// and event sink.
#[derive(Clone)]
pub struct LroLayer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LroLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LroLayer")
            .field("cfg", &self.shared.cfg)
            .finish_non_exhaustive()
    }
}

impl Default for LroLayer {
    fn default() -> Self {
        Self::new(OffloadConfig::default())
    }
}

impl LroLayer {
    /// A layer for `cfg`, with the estimator its `estimator` and
    /// `exact_band` ask for and no extra event sink.
    pub fn new(cfg: OffloadConfig) -> Self {
        Self {
            shared: Arc::new(Shared::new(cfg)),
        }
    }

    /// Like [`LroLayer::new`], but checks the configuration first, and
    /// refuses an object store that cannot be opened (where `new` logs it
    /// and keeps results in the output directory).
    pub fn try_new(cfg: OffloadConfig) -> Result<Self, Error> {
        cfg.validate()?;
        let store = lro_store::from_config(&cfg).map_err(Box::new)?;
        let layer = Self {
            shared: Arc::new(Shared::local(cfg)),
        };
        Ok(match store {
            Some(store) => layer.store(store),
            None => layer,
        })
    }

    /// Sets the object store results go to, in place of the one the
    /// configuration's `store` names: descriptors then carry a handle
    /// instead of a path, and `lro_extract` reads by handle, on any replica
    /// that shares the store. Defaults to the configuration's `store`, or
    /// the output directory when it names none.
    #[must_use]
    pub fn store(self, store: Arc<dyn lro_store::Store>) -> Self {
        self.map(|s| s.set_store(store))
    }

    fn map(self, f: impl FnOnce(&mut Shared)) -> Self {
        let mut shared = Arc::unwrap_or_clone(self.shared);
        f(&mut shared);
        Self {
            shared: Arc::new(shared),
        }
    }

    /// Sets the token estimator, in place of the configured one. Defaults to
    /// [`OffloadConfig::token_estimator`]: [`ScriptAware`](lro_core::ScriptAware)
    /// (characters / 4 for Latin text, one token per CJK character), banded
    /// with an exact tokenizer when `estimator` names one.
    #[must_use]
    pub fn estimator(self, estimator: impl TokenEstimator) -> Self {
        self.map(|s| s.set_estimator(Arc::new(estimator)))
    }

    /// Adds the context-offload tools (`context_offload`, `context_grep`,
    /// `context_read_file`) next to the server's, served by `offloader`
    /// (whose store roots confine every path). A tool of the same name on
    /// the server wins, unless [`LroLayer::own_tools_win`]. Defaults to
    /// none.
    #[cfg(feature = "context")]
    #[must_use]
    pub fn context_tools(self, offloader: lro_context::ContextOffloader) -> Self {
        self.map(|s| s.context = Some(offloader))
    }

    /// Sets whether the layer's own tools (`lro_extract`, the context
    /// tools) answer even where the server has tools of the same names,
    /// which are then hidden from its listings and never called. Defaults
    /// to false: the server's tool of the same name wins, as a server that
    /// offloads its own results keeps its own extraction.
    ///
    /// `lro proxy` sets it. Behind the proxy flag an upstream offloads
    /// nothing, so its `lro_extract` has none of the caller's results to
    /// read, and it would read, without the caller's principal, from its
    /// own directory (by default the same user's anonymous root).
    #[must_use]
    pub fn own_tools_win(self, win: bool) -> Self {
        self.map(|s| s.own_tools_win = win)
    }

    /// Sets where the caller's [`Principal`](lro_core::principal::Principal)
    /// comes from: each offload goes to that principal's own folder, and
    /// `lro_extract` reads only from it. Defaults to
    /// [`FromHttpRequest`](crate::principal::FromHttpRequest) (the principal
    /// the HTTP face's authentication put into the request, anonymous when
    /// none); `()` makes every caller anonymous. See
    /// [`principal`](crate::principal).
    #[must_use]
    pub fn principal(self, source: impl PrincipalSource) -> Self {
        self.map(|s| s.principal = Arc::new(source))
    }

    /// Sets the key principal folders are named with: each caller's
    /// principal is [keyed](lro_core::principal::Principal::keyed) with it
    /// before any offload or read, so folders, store keys and download URLs
    /// do not tell whose they are. Defaults to none (the unkeyed digest);
    /// the hosts (lro-host, `lro`) always set one, from
    /// `principal_key_file` or kept where results are.
    #[must_use]
    pub fn principal_key(self, key: lro_core::principal::FolderKey) -> Self {
        self.map(|s| s.folder_key = Some(key))
    }

    /// Sets what a W3C `traceparent` in a request's `_meta` (MCP
    /// 2026-07-28) makes of the layer's `tools/call` span: the caller's
    /// span as its parent, or as a link. Defaults to the configuration's
    /// `caller_trace`, by default [`CallerTrace::ParentIfAuthenticated`]:
    /// the parent when the caller's principal (see
    /// [`LroLayer::principal`]) is not anonymous, a link otherwise.
    #[must_use]
    pub fn caller_trace(self, caller: CallerTrace) -> Self {
        self.map(|s| s.caller_trace = caller)
    }

    /// Sets the sink that receives every event after tracing and metrics.
    /// Defaults to `()` (none).
    #[must_use]
    pub fn event_sink(self, sink: impl EventSink) -> Self {
        self.map(|s| s.sink = Arc::new(sink))
    }

    /// Sets the limits of `lro_extract` (time, output size), in place of
    /// the configured ones. Its root directory is always the output
    /// directory, and its output is always kept within the threshold (of
    /// the `lro_extract` tool, when it has its own). Defaults to the
    /// configuration's `[prompt.offload.extraction]` table (by default
    /// 5 s, a 512 MiB memory budget (see [`LroLayer::extract_isolation`]),
    /// 4 extractions at once, 2 per principal, and a 30 s wait for a slot)
    /// and 256 KiB of output.
    /// Has no effect when `extract` is off in the configuration.
    #[must_use]
    pub fn extract_config(self, cfg: ExtractConfig) -> Self {
        self.map(|s| s.set_extract_config(cfg))
    }

    /// Sets where `lro_extract` queries run. Defaults to a
    /// [`WorkerPool`](lro_extract::WorkerPool) of the current executable,
    /// which must then call `lro_extract::worker::run_if_worker()` first
    /// thing in `main`: each query runs in a worker process bounded by the
    /// memory budget (`memory_budget_mib`, or [`LroLayer::extract_config`]),
    /// so no filter can take the server down. `()` runs queries in this process (no memory bound:
    /// for trusted, single-user embedders); a closure can send them
    /// elsewhere.
    #[must_use]
    pub fn extract_isolation(self, isolation: impl Isolation) -> Self {
        self.map(|s| s.set_isolation(Arc::new(isolation)))
    }

    /// The configuration in force.
    pub fn config(&self) -> &OffloadConfig {
        &self.shared.cfg
    }

    /// Wraps `inner`; the same as [`Layer::layer`].
    pub fn wrap<H>(&self, inner: H) -> LroService<H> {
        LroService::from_shared(inner, self.shared.clone())
    }
}

impl<H> Layer<H> for LroLayer {
    type Service = LroService<H>;

    fn layer(&self, inner: H) -> Self::Service {
        self.wrap(inner)
    }
}
