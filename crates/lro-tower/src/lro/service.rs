//! [`LroService<H>`]: an `rmcp::ServerHandler` that offloads large tool results.
//! The interception of `tools/call` and `tasks/get` is here; the forwarding
//! of every other method is `forward.rs`, the listing `tools.rs`, the task
//! book `tasks.rs`.

use std::sync::Arc;

use lro_core::{OffloadConfig, principal::Principal};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, GetTaskParams, GetTaskResult,
        PaginatedRequestParams,
    },
    service::RequestContext,
};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{
    LroLayer, extract, intercept::Call, shared::Shared, tasks::Tasks, tools::Listing, trace,
};
use crate::scope::LroScope;

/// Key of the client capability extension that marks an LRO proxy. A client
/// that declares it with `{"proxy": true}` in `initialize` gets full results
/// inline: it offloads them itself.
pub use lro_core::proxy_flag::PROXY_EXTENSION;

/// Wraps a server handler `H` with Large Result Offloading.
///
/// Built by [`LroLayer`] or [`LroService::new`]. It implements
/// [`ServerHandler`], so it serves over stdio and inside
/// `StreamableHttpService` like the handler it wraps.
pub struct LroService<H> {
    pub(super) inner: H,
    pub(crate) shared: Arc<Shared>,
    /// Shared by clones: a handler cloned for every session keeps one book.
    tasks: Arc<Tasks>,
    pub(super) listing: Arc<Listing>,
}

impl<H: Clone> Clone for LroService<H> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
            tasks: self.tasks.clone(),
            listing: self.listing.clone(),
        }
    }
}

impl<H> std::fmt::Debug for LroService<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LroService")
            .field("threshold_tokens", &self.shared.cfg.threshold_tokens)
            .field("output_dir", &self.shared.output_dir)
            .finish_non_exhaustive()
    }
}

impl<H> LroService<H> {
    /// Wraps `inner` with the given configuration and default settings.
    pub fn new(inner: H, cfg: OffloadConfig) -> Self {
        LroLayer::new(cfg).wrap(inner)
    }

    pub(crate) fn from_shared(inner: H, shared: Arc<Shared>) -> Self {
        Self {
            inner,
            shared,
            tasks: Arc::default(),
            listing: Arc::default(),
        }
    }

    /// A layer with the given configuration.
    pub fn layer(cfg: OffloadConfig) -> LroLayer {
        LroLayer::new(cfg)
    }

    /// The wrapped handler.
    pub fn get_ref(&self) -> &H {
        &self.inner
    }

    /// The wrapped handler, mutably.
    pub fn get_mut(&mut self) -> &mut H {
        &mut self.inner
    }

    /// Unwraps the handler.
    pub fn into_inner(self) -> H {
        self.inner
    }

    /// The configuration in force.
    pub fn config(&self) -> &OffloadConfig {
        &self.shared.cfg
    }
}

/// Whether the client declared itself an LRO proxy.
fn is_proxy(cx: &RequestContext<RoleServer>) -> bool {
    cx.client_capabilities()
        .and_then(|caps| caps.extensions)
        .and_then(|ext| {
            ext.get(PROXY_EXTENSION)
                .map(lro_core::proxy_flag::is_proxy_settings)
        })
        .unwrap_or(false)
}

impl<H: ServerHandler> LroService<H> {
    /// `tools/call`: the layer's own tools, or the inner tool's result
    /// offloaded when it is over the threshold.
    pub(super) async fn intercept_call(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = request.name.to_string();
        // Never the session: a client that reconnects is the same caller.
        let principal = self.shared.caller(&cx);
        let span = trace::make_span(&tool, &cx, &principal, self.shared.caller_trace);
        self.learn_listing(&tool, &cx).await;
        if tool == extract::EXTRACT_TOOL && self.listing.extracts(&self.shared) {
            let result = extract::call(&self.shared, &principal, request.arguments)
                .instrument(span)
                .await;
            return Ok(CallToolResponse::Complete(result));
        }
        #[cfg(feature = "context")]
        if let Some(offloader) = self.listing.context_tool(&self.shared, &tool) {
            // Its answer is the history the caller asked for: never offloaded.
            // With a shared store, entries are copied through it.
            let mirror = self.shared.remote.as_ref().map(|remote| {
                lro_store::mirror::Mirror::new(
                    remote.store.clone(),
                    offloader.store_roots().clone(),
                )
            });
            let result = super::context::call(
                offloader,
                mirror.as_ref(),
                &principal,
                &tool,
                request.arguments,
            )
            .instrument(span)
            .await;
            return Ok(CallToolResponse::Complete(result));
        }
        if Listing::hides(&self.shared, &tool) {
            // The layer serves no tool of this name, and the server's is
            // hidden: as rmcp answers a tool it does not have.
            trace::on_failure(&span, "tool_not_found");
            return Err(McpError::invalid_params(
                format!("no tool named {tool:?}"),
                None,
            ));
        }
        async move {
            let bypass = is_proxy(&cx) || !self.shared.enabled_for(&tool);
            let scope = LroScope::new();
            let mut cx = cx;
            if !bypass {
                cx.extensions.insert(scope.clone());
            }
            let ct = cx.ct.clone();
            let arguments = request.arguments.clone();
            let response = match self.inner.call_tool(request, cx).await {
                Ok(r) => r,
                Err(err) => {
                    trace::on_failure(&tracing::Span::current(), &format!("{:?}", err.code));
                    return Err(err);
                }
            };
            let result = match response {
                CallToolResponse::Complete(result) => result,
                CallToolResponse::Task(created) => {
                    self.tasks.started(&principal, &created.task.task_id, &tool);
                    return Ok(CallToolResponse::Task(created));
                }
                other => return Ok(other),
            };
            if result.is_error == Some(true) {
                trace::on_failure(&tracing::Span::current(), trace::TOOL_ERROR);
            }
            let processed = if bypass {
                self.shared.bypass(&tool, result)
            } else {
                self.shared
                    .process(
                        &tool,
                        arguments.as_ref(),
                        result,
                        scope.take(),
                        self.call(&principal, &ct),
                    )
                    .await
            };
            trace::on_result(
                &tracing::Span::current(),
                processed.decision,
                processed.estimated_tokens,
                processed.records,
            );
            self.shared.report(&tool, &processed);
            Ok(CallToolResponse::Complete(processed.result))
        }
        .instrument(span)
        .await
    }

    /// `tasks/get`: the inner server's answer, its completed result
    /// offloaded as a tool result would be.
    pub(super) async fn intercept_task(
        &self,
        request: GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let ct = cx.ct.clone();
        let proxy = is_proxy(&cx);
        // The same principal as the call that started the task would get.
        let principal = self.shared.caller(&cx);
        let got = self.inner.get_task(request, cx).await?;
        if proxy {
            return Ok(got);
        }
        Ok(self
            .tasks
            .completed(&self.shared, got, self.call(&principal, &ct))
            .await)
    }

    /// Learns what the layer needs of the inner handler's tools before a
    /// call to `tool`: its `get_tool` when it has one (an rmcp tool router),
    /// else, when a call comes before any `tools/list`, one listing of its
    /// tools, so that an inner `lro_extract` wins from the first call,
    /// descriptors point at the right tool, and a descriptor goes out as
    /// `structuredContent` only for a tool that declared an `outputSchema`.
    async fn learn_listing(&self, tool: &str, cx: &RequestContext<RoleServer>) {
        if let Some(t) = self.inner.get_tool(tool) {
            self.listing.note(&t);
        }
        let adds_tools = self.shared.extractor.is_some() || self.shared.has_context();
        if self.listing.listed() || (!adds_tools && self.listing.knows(tool)) {
            return;
        }
        let mut cx = cx.clone();
        // The call's progress token and the rest of its `_meta` are not
        // this listing's; its wire context is (MCP 2026-07-28 carries the
        // protocol version and client in every request's `_meta`).
        cx.meta
            .retain(|key, _| key.starts_with("io.modelcontextprotocol/"));
        let mut cursor: Option<String> = None;
        loop {
            let first_page = cursor.is_none();
            let page = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let Ok(list) = self.inner.list_tools(page, cx.clone()).await else {
                // Tried once: a server that cannot list is not asked again
                // on every call.
                self.listing.give_up();
                return;
            };
            cursor = list.next_cursor.clone();
            self.listing.patch(&self.shared, list, first_page);
            if cursor.is_none() {
                return;
            }
        }
    }

    /// What [`Shared::process`] needs to know of a call by `principal`.
    fn call<'a>(&'a self, principal: &'a Principal, ct: &'a CancellationToken) -> Call<'a> {
        Call {
            principal,
            ct,
            shadowed: self.listing.is_shadowed(),
            listing: &self.listing,
        }
    }
}
