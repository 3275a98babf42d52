//! [`Lro<H>`]: an `rmcp::ServerHandler` that offloads large tool results.

use std::{
    borrow::Cow,
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use lro_core::OffloadConfig;
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::*,
    service::{MaybeSendFuture, NotificationContext, RequestContext, SubscriptionContext},
};
use tracing::Instrument;

use lro_core::principal::Principal;
use tokio_util::sync::CancellationToken;

use super::{LroLayer, context, extract, intercept::Call, shared::Shared, trace};
use crate::scope::LroScope;

/// Key of the client capability extension that marks an LRO proxy. A client
/// that declares it with `{"proxy": true}` in `initialize` gets full results
/// inline: it offloads them itself.
pub use lro_core::wire::PROXY_EXTENSION;

/// Completed task results kept after offloading, so that repeated
/// `tasks/get` polls return the same file instead of writing a new one.
const TASK_CACHE: usize = 1024;

/// Wraps a server handler `H` with Large Result Offloading.
///
/// Built by [`LroLayer`] or [`Lro::new`]. It implements
/// [`ServerHandler`], so it serves over stdio and inside
/// `StreamableHttpService` like the handler it wraps.
pub struct Lro<H> {
    inner: H,
    pub(crate) shared: Arc<Shared>,
    tasks: Arc<Mutex<TaskBook>>,
    /// The inner handler lists a tool named `lro_extract` (a proxied
    /// upstream may): that tool wins, and ours is neither listed nor called.
    shadowed: Arc<Shadow>,
    /// The inner handler's tools have been listed to the end once, so
    /// `shadowed` is known.
    listed: Arc<AtomicBool>,
    /// The inner handler lists a tool named like one of the context tools:
    /// it serves them all, and the layer lists none.
    context_shadowed: Arc<Shadow>,
}

/// Whether the inner handler lists a tool of the layer's own name.
///
/// A tool list can change (`tools/list_changed`, a reconnected upstream), so
/// every listing is observed. A page that has the tool shadows at once: the
/// server's own tool must win from the first call. Only the last page of a
/// listing in which no page had the tool lifts the shadow.
#[derive(Debug, Default)]
struct Shadow {
    on: AtomicBool,
    /// An earlier page of the listing being read had the tool.
    pending: AtomicBool,
}

impl Shadow {
    /// Records one page of a listing; true when this page starts a shadow.
    fn observe(&self, first_page: bool, last_page: bool, here: bool) -> bool {
        let seen = here || (!first_page && self.pending.load(Ordering::Relaxed));
        self.pending.store(seen && !last_page, Ordering::Relaxed);
        if seen {
            !self.on.swap(true, Ordering::Relaxed)
        } else {
            if last_page {
                self.on.store(false, Ordering::Relaxed);
            }
            false
        }
    }

    fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }
}

/// What the layer knows about tasks, bounded: every insert goes through
/// [`TaskBook::track`], which evicts the oldest task once `TASK_CACHE` are
/// known, whichever map the task is in.
#[derive(Default)]
struct TaskBook {
    /// Tool that started each task, learned from `tools/call`.
    tool_of: HashMap<String, String>,
    /// Processed completed results by task id.
    done: HashMap<String, JsonObject>,
    /// Every known task id, oldest first, each once.
    order: VecDeque<String>,
}

impl TaskBook {
    fn remember_tool(&mut self, task_id: &str, tool: &str) {
        self.track(task_id);
        self.tool_of.insert(task_id.to_owned(), tool.to_owned());
    }

    fn remember_done(&mut self, task_id: String, result: JsonObject) {
        self.track(&task_id);
        self.done.insert(task_id, result);
    }

    /// Records `task_id` as known and evicts the oldest tasks past the cap.
    fn track(&mut self, task_id: &str) {
        if self.tool_of.contains_key(task_id) || self.done.contains_key(task_id) {
            return;
        }
        self.order.push_back(task_id.to_owned());
        while self.order.len() > TASK_CACHE {
            if let Some(old) = self.order.pop_front() {
                self.tool_of.remove(&old);
                self.done.remove(&old);
            }
        }
    }
}

impl<H: Clone> Clone for Lro<H> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
            tasks: self.tasks.clone(),
            shadowed: self.shadowed.clone(),
            listed: self.listed.clone(),
            context_shadowed: self.context_shadowed.clone(),
        }
    }
}

impl<H> std::fmt::Debug for Lro<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lro")
            .field("threshold_tokens", &self.shared.cfg.threshold_tokens)
            .field("output_dir", &self.shared.offloader.dir())
            .finish_non_exhaustive()
    }
}

impl<H> Lro<H> {
    /// Wraps `inner` with the given configuration and default settings.
    pub fn new(inner: H, cfg: OffloadConfig) -> Self {
        LroLayer::new(cfg).wrap(inner)
    }

    pub(crate) fn from_shared(inner: H, shared: Arc<Shared>) -> Self {
        Self {
            inner,
            shared,
            tasks: Arc::default(),
            shadowed: Arc::default(),
            listed: Arc::default(),
            context_shadowed: Arc::default(),
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
                .map(lro_core::wire::is_proxy_settings)
        })
        .unwrap_or(false)
}

/// An output schema that also admits the offload descriptor, so clients that
/// validate structured content accept an offloaded result.
fn relax_output_schema(schema: &JsonObject) -> JsonObject {
    let relaxed = serde_json::json!({
        "type": "object",
        "anyOf": [
            serde_json::Value::Object(schema.clone()),
            {
                "type": "object",
                "required": ["offloaded", "file_path"],
                "properties": {
                    "offloaded": {"const": true},
                    "file_path": {"type": "string"}
                }
            }
        ]
    });
    match relaxed {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("json! object literal"),
    }
}

impl<H: ServerHandler> Lro<H> {
    async fn intercept_call(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = request.name.to_string();
        let span = trace::make_span(&tool, &cx);
        // Never the session: a client that reconnects is the same caller.
        let principal = self.shared.principal.principal(&cx);
        self.learn_shadow(&cx).await;
        if tool == extract::EXTRACT_TOOL && self.extracts() {
            let result = extract::call(&self.shared, &principal, request.arguments)
                .instrument(span)
                .await;
            return Ok(CallToolResponse::Complete(result));
        }
        if let Some(offloader) = self.context_tool(&tool) {
            // Its answer is the history the caller asked for: never offloaded.
            let result = context::call(offloader, &principal, &tool, request.arguments)
                .instrument(span)
                .await;
            return Ok(CallToolResponse::Complete(result));
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
                    self.tasks
                        .lock()
                        .expect("task book poisoned")
                        .remember_tool(&created.task.task_id, &tool);
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
            trace::on_result(&tracing::Span::current(), &processed);
            self.shared.report(&tool, &processed);
            Ok(CallToolResponse::Complete(processed.result))
        }
        .instrument(span)
        .await
    }

    async fn intercept_task(
        &self,
        request: GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let ct = cx.ct.clone();
        let proxy = is_proxy(&cx);
        let principal = self.shared.principal.principal(&cx);
        let mut got = self.inner.get_task(request, cx).await?;
        if proxy {
            return Ok(got);
        }
        let task_id = got.task.task.task_id.clone();
        let TaskPayload::Completed { result } = &got.task.payload else {
            return Ok(got);
        };
        let (tool, cached) = {
            let book = self.tasks.lock().expect("task book poisoned");
            (
                book.tool_of.get(&task_id).cloned(),
                book.done.get(&task_id).cloned(),
            )
        };
        if let Some(done) = cached {
            got.task.payload = TaskPayload::Completed { result: done };
            return Ok(got);
        }
        let Ok(call_result) =
            serde_json::from_value::<CallToolResult>(serde_json::Value::Object(result.clone()))
        else {
            return Ok(got);
        };
        let tool = tool.unwrap_or_else(|| "task".to_owned());
        if !self.shared.enabled_for(&tool) {
            return Ok(got);
        }
        let processed = self
            .shared
            .process(
                &tool,
                None,
                call_result,
                Default::default(),
                self.call(&principal, &ct),
            )
            .await;
        self.shared.report(&tool, &processed);
        if let Ok(serde_json::Value::Object(obj)) = serde_json::to_value(&processed.result) {
            let mut book = self.tasks.lock().expect("task book poisoned");
            book.remember_done(task_id, obj.clone());
            got.task.payload = TaskPayload::Completed { result: obj };
        }
        Ok(got)
    }

    /// Lists the inner handler's tools once, when a call comes before any
    /// `tools/list`, so that an inner `lro_extract` wins from the first call
    /// and descriptors point at the right tool.
    async fn learn_shadow(&self, cx: &RequestContext<RoleServer>) {
        let adds_tools = self.shared.extractor.is_some() || self.shared.context.is_some();
        if !adds_tools || self.listed.load(Ordering::Relaxed) {
            return;
        }
        let mut cx = cx.clone();
        cx.meta = Default::default();
        let mut cursor: Option<String> = None;
        loop {
            let first_page = cursor.is_none();
            let page = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let Ok(list) = self.inner.list_tools(page, cx.clone()).await else {
                // Tried once: a server that cannot list is not asked again
                // on every call.
                self.listed.store(true, Ordering::Relaxed);
                return;
            };
            cursor = list.next_cursor.clone();
            self.patch_tools(list, first_page);
            if cursor.is_none() {
                return;
            }
        }
    }

    /// The context engine, when `tool` is one of its tools and the server has
    /// none of that name.
    fn context_tool(&self, tool: &str) -> Option<&lro_context::ContextOffloader> {
        let ours = context::CONTEXT_TOOLS.contains(&tool) && !self.context_shadowed.is_on();
        self.shared.context.as_ref().filter(|_| ours)
    }

    /// Whether `lro_extract` is ours to serve.
    fn extracts(&self) -> bool {
        self.shared.extractor.is_some() && !self.is_shadowed()
    }

    fn is_shadowed(&self) -> bool {
        self.shadowed.is_on()
    }

    /// What [`Shared::process`] needs to know of a call by `principal`.
    fn call<'a>(&self, principal: &'a Principal, ct: &'a CancellationToken) -> Call<'a> {
        Call {
            principal,
            ct,
            shadowed: self.is_shadowed(),
        }
    }

    /// Adds the layer's tools to the inner handler's listing, unless it has
    /// its own of the same names. `first_page` says the request had no cursor.
    fn patch_tools(&self, mut list: ListToolsResult, first_page: bool) -> ListToolsResult {
        let last_page = list.next_cursor.is_none();
        let has = |names: &[&str]| list.tools.iter().any(|t| names.contains(&t.name.as_ref()));
        if self.shared.extractor.is_some()
            && self
                .shadowed
                .observe(first_page, last_page, has(&[extract::EXTRACT_TOOL]))
        {
            // Never a silent shadow: say so when one starts, on the log (stderr
            // in `lro proxy`).
            tracing::warn!(
                "the server has its own `{}` tool: it is listed and called instead of the LRO \
                 extraction tool, and descriptors point at the jq recipes",
                extract::EXTRACT_TOOL
            );
        }
        if self.shared.context.is_some()
            && self
                .context_shadowed
                .observe(first_page, last_page, has(&context::CONTEXT_TOOLS))
        {
            tracing::warn!(
                "the server has its own context tools: they are listed and called instead of LRO's"
            );
        }
        // The extraction and context tools are added once, on the last page.
        if last_page {
            self.listed.store(true, Ordering::Relaxed);
            if self.extracts() {
                list.tools.push(extract::tool(&self.shared));
            }
            if self.shared.context.is_some() && !self.context_shadowed.is_on() {
                list.tools.extend(context::tools());
                lro_core::metric::register_context_zeroed();
            }
        }
        for tool in &mut list.tools {
            lro_core::metric::register_tool(&tool.name);
            if let Some(schema) = &tool.output_schema
                && self.shared.enabled_for(&tool.name)
            {
                tool.output_schema = Some(Arc::new(relax_output_schema(schema)));
            }
        }
        list
    }
}

// Every `ServerHandler` method is forwarded explicitly: a method left out
// would silently fall back to the trait default and hide the inner handler's
// behaviour. `crates/lro-tidy/tests/forwarding.rs` compares this list with
// rmcp's trait.
#[allow(deprecated)]
impl<H: ServerHandler> ServerHandler for Lro<H> {
    fn ping(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.ping(context)
    }

    fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<InitializeResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.initialize(request, context)
    }

    fn negotiate_initialize(
        &self,
        request: &InitializeRequestParams,
    ) -> Result<InitializeResult, McpError> {
        self.inner.negotiate_initialize(request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<DiscoverResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.discover(context)
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.complete(request, context)
    }

    fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.set_level(request, context)
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, McpError>> + MaybeSendFuture + '_ {
        self.inner.get_prompt(request, context)
    }

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.list_prompts(request, context)
    }

    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourcesResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.list_resources(request, context)
    }

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, McpError>> + MaybeSendFuture + '_
    {
        self.inner.list_resource_templates(request, context)
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, McpError>> + MaybeSendFuture + '_ {
        self.inner.read_resource(request, context)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    fn listen(
        &self,
        context: SubscriptionContext,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.listen(context)
    }

    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.subscribe(request, context)
    }

    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.unsubscribe(request, context)
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + MaybeSendFuture + '_ {
        self.intercept_call(request, context)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let first_page = request.as_ref().is_none_or(|r| r.cursor.is_none());
        let list = self.inner.list_tools(request, context).await?;
        Ok(self.patch_tools(list, first_page))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if name == extract::EXTRACT_TOOL && self.extracts() {
            return Some(extract::tool(&self.shared));
        }
        if self.context_tool(name).is_some()
            && let Some(tool) = context::tools().into_iter().find(|t| t.name == name)
        {
            return Some(tool);
        }
        let mut tool = self.inner.get_tool(name)?;
        if let Some(schema) = &tool.output_schema
            && self.shared.enabled_for(name)
        {
            tool.output_schema = Some(Arc::new(relax_output_schema(schema)));
        }
        Some(tool)
    }

    fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CustomResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.on_custom_request(request, context)
    }

    fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_cancelled(notification, context)
    }

    fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_progress(notification, context)
    }

    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_initialized(context)
    }

    fn on_roots_list_changed(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_roots_list_changed(context)
    }

    fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_custom_notification(notification, context)
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetTaskResult, McpError>> + MaybeSendFuture + '_ {
        self.intercept_task(request, context)
    }

    fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.update_task(request, context)
    }

    fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.cancel_task(request, context)
    }

    fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListSkillsResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.list_skills(request, context)
    }

    fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetSkillResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.get_skill(request, context)
    }

    fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceDirectoryResult, McpError>> + MaybeSendFuture + '_
    {
        self.inner.read_resource_directory(request, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shadow_starts_on_any_page_and_ends_on_the_last_page_of_a_listing_without_the_tool() {
        let shadow = Shadow::default();
        // Pages: (first, last, has the tool).
        assert!(!shadow.observe(true, false, false) && !shadow.is_on());
        assert!(shadow.observe(false, true, true), "a later page shadows");
        assert!(
            !shadow.observe(true, true, true),
            "already on: no new start"
        );
        // A two-page listing without the tool lifts it on its last page only.
        assert!(!shadow.observe(true, false, false));
        assert!(shadow.is_on());
        assert!(!shadow.observe(false, true, false));
        assert!(!shadow.is_on());
        // The tool on page one of three keeps the shadow through the last page.
        assert!(shadow.observe(true, false, true));
        shadow.observe(false, false, false);
        shadow.observe(false, true, false);
        assert!(shadow.is_on());
        // A single-page listing without the tool lifts it.
        shadow.observe(true, true, false);
        assert!(!shadow.is_on());
    }

    #[test]
    fn the_task_book_stays_bounded_whichever_map_grows() {
        let mut book = TaskBook::default();
        // Completed ids polled from another session were never started here.
        for i in 0..3 * TASK_CACHE {
            book.remember_done(format!("done-{i}"), JsonObject::new());
        }
        assert_eq!(book.done.len(), TASK_CACHE);
        assert_eq!(book.order.len(), TASK_CACHE);
        assert!(
            book.done
                .contains_key(&format!("done-{}", 3 * TASK_CACHE - 1))
        );
        for i in 0..2 * TASK_CACHE {
            book.remember_tool(&format!("t-{i}"), "tool");
            book.remember_done(format!("t-{i}"), JsonObject::new());
        }
        assert_eq!(book.order.len(), TASK_CACHE);
        assert!(book.tool_of.len() <= TASK_CACHE && book.done.len() <= TASK_CACHE);
        // A task seen twice is tracked once, and keeps its tool.
        assert_eq!(
            book.tool_of
                .get(&format!("t-{}", 2 * TASK_CACHE - 1))
                .map(String::as_str),
            Some("tool")
        );
    }
}
