//! The `ServerHandler` trait of [`Proxy`]: each method forwards its request
//! or notification to the session's upstream.

use std::borrow::Cow;

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::*,
    service::{NotificationContext, RequestContext, SubscriptionContext},
};

use crate::{Proxy, wire::Wire};

/// Takes the expected variant out of an upstream answer. rmcp reads answers
/// as an untagged union, so an answer may land in a look-alike variant; it
/// is then re-read as the expected type.
macro_rules! expect_result {
    ($result:expr, $variant:ident => $ty:ty) => {
        match $result {
            ServerResult::$variant(value) => Ok(value),
            other => reread::<$ty>(other),
        }
    };
}

fn reread<T: serde::de::DeserializeOwned>(result: ServerResult) -> Result<T, McpError> {
    serde_json::to_value(&result)
        .and_then(serde_json::from_value)
        .map_err(|err| {
            McpError::internal_error(
                format!("the upstream's answer has the wrong shape: {err}"),
                None,
            )
        })
}

/// An optional-params request (`*/list`) with the client's params.
fn optional<M: Default, P>(params: Option<P>) -> RequestOptionalParam<M, P> {
    RequestOptionalParam {
        method: M::default(),
        params,
        extensions: Default::default(),
    }
}

// Every method the upstream may serve is forwarded.
// `crates/lro-tidy/tests/forwarding.rs` lists each trait method left out, with the reason.
#[allow(deprecated)]
impl ServerHandler for Proxy {
    // Methods answered with an empty result accept any successful answer:
    // `{"_meta": …}` is valid and lands in another variant of rmcp's union.
    async fn ping(&self, cx: RequestContext<RoleServer>) -> Result<(), McpError> {
        let request = PingRequest::default().into();
        if let Some(answer) = self.answer_for_modern_upstream(&request, &cx) {
            return Ok(answer);
        }
        self.call(request, cx).await.map(drop)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        // 2026-07-28 removed `initialize`: a request that carries that
        // version's context gets the removed method's answer (HTTP 404), and
        // no upstream is opened for it.
        if Wire::of(&cx.meta) == Wire::Modern {
            return Err(McpError::method_not_found::<InitializeResultMethod>());
        }
        self.initialize_upstream(request, &cx).await?;
        Ok(self.get_info())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // Once a legacy session's upstream has agreed a version, the client
        // gets that one (rmcp negotiates again after `initialize` against
        // this list); sessionless requests, on every version without
        // `initialize`, go to the shared connection, whatever it speaks.
        match self.upstream_info() {
            Some(info) => Cow::Owned(
                std::iter::once(info.protocol_version)
                    .chain(
                        ProtocolVersion::KNOWN_VERSIONS
                            .iter()
                            .filter(|v| !v.has_initialize())
                            .cloned(),
                    )
                    .collect(),
            ),
            None => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    // Answered by the proxy, whatever the upstream speaks: a legacy
    // upstream has no `server/discover`, and the proxy translates.
    async fn discover(&self, cx: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        let mut info = self.learn_upstream(&cx).await?;
        // The layer serves `lro_extract` whatever the upstream offers.
        info.capabilities.tools.get_or_insert_with(Default::default);
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            info,
        ))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let result = self.call(CompleteRequest::new(request).into(), cx).await?;
        expect_result!(result, CompleteResult => CompleteResult)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let request = SetLevelRequest::new(request).into();
        if let Some(answer) = self.answer_for_modern_upstream(&request, &cx) {
            return Ok(answer);
        }
        self.call(request, cx).await.map(drop)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        match self.call(GetPromptRequest::new(request).into(), cx).await? {
            ServerResult::InputRequiredResult(input) => Ok(input.into()),
            other => expect_result!(other, GetPromptResult => GetPromptResult).map(Into::into),
        }
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let result = self
            .call(ListPromptsRequest::from(optional(request)).into(), cx)
            .await?;
        expect_result!(result, ListPromptsResult => ListPromptsResult)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let result = self
            .call(ListResourcesRequest::from(optional(request)).into(), cx)
            .await?;
        expect_result!(result, ListResourcesResult => ListResourcesResult)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let request = ListResourceTemplatesRequest::from(optional(request));
        let result = self.call(request.into(), cx).await?;
        expect_result!(result, ListResourceTemplatesResult => ListResourceTemplatesResult)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        match self
            .call(ReadResourceRequest::new(request).into(), cx)
            .await?
        {
            ServerResult::InputRequiredResult(input) => Ok(input.into()),
            other => {
                expect_result!(other, ReadResourceResult => ReadResourceResult).map(Into::into)
            }
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.call(SubscribeRequest::new(request).into(), cx)
            .await
            .map(drop)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.call(UnsubscribeRequest::new(request).into(), cx)
            .await
            .map(drop)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        match self.call(CallToolRequest::new(request).into(), cx).await? {
            ServerResult::CreateTaskResult(task) => Ok(CallToolResponse::Task(task)),
            ServerResult::InputRequiredResult(input) => Ok(input.into()),
            other => expect_result!(other, CallToolResult => CallToolResult).map(Into::into),
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let result = self
            .call(ListToolsRequest::from(optional(request)).into(), cx)
            .await?;
        expect_result!(result, ListToolsResult => ListToolsResult)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // An `initialize` whose params rmcp cannot read comes here; on the
        // 2026-07-28 wire it is a removed method wherever it lands.
        if request.method == "initialize" && Wire::of(&cx.meta) == Wire::Modern {
            return Err(McpError::method_not_found::<InitializeResultMethod>());
        }
        let result = self.call(ClientRequest::CustomRequest(request), cx).await?;
        expect_result!(result, CustomResult => CustomResult)
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        cx: NotificationContext<RoleServer>,
    ) {
        // Progress on a request the upstream sent through the proxy: give it
        // back the token the upstream chose.
        let Some(original) = self.upstream_progress_token(&params.progress_token) else {
            return;
        };
        params.progress_token = original;
        self.notify(ProgressNotification::new(params).into(), cx)
            .await;
    }

    async fn on_roots_list_changed(&self, cx: NotificationContext<RoleServer>) {
        self.notify(RootsListChangedNotification::default().into(), cx)
            .await;
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        cx: NotificationContext<RoleServer>,
    ) {
        self.notify(ClientNotification::CustomNotification(notification), cx)
            .await;
    }

    // What the client asks for; rmcp acknowledges it within what the
    // upstream declares (`get_info`).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, cx: SubscriptionContext) -> Result<(), McpError> {
        self.shared().pool().listen(self.shared(), cx).await
    }

    fn get_info(&self) -> ServerConfig {
        // Before the upstream has been reached, every change notification is
        // declared: a sessionless client's first request may be a listen,
        // which rmcp acknowledges within this, and an upstream that sends
        // fewer kinds only leaves some unheard.
        self.any_upstream_info().unwrap_or_else(|| {
            ServerConfig::new(
                ServerCapabilities::builder()
                    .enable_prompts()
                    .enable_resources()
                    .enable_tools()
                    .enable_prompts_list_changed()
                    .enable_resources_list_changed()
                    .enable_resources_subscribe()
                    .enable_tool_list_changed()
                    .build(),
            )
        })
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let result = self.call(GetTaskRequest::new(request).into(), cx).await?;
        expect_result!(result, GetTaskResult => GetTaskResult)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.call(UpdateTaskRequest::new(request).into(), cx)
            .await
            .map(drop)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.call(CancelTaskRequest::new(request).into(), cx)
            .await
            .map(drop)
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let result = self
            .call(ListSkillsRequest::from(optional(request)).into(), cx)
            .await?;
        expect_result!(result, ListSkillsResult => ListSkillsResult)
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let result = self.call(GetSkillRequest::new(request).into(), cx).await?;
        expect_result!(result, GetSkillResult => GetSkillResult)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        let result = self
            .call(ReadResourceDirectoryRequest::new(request).into(), cx)
            .await?;
        expect_result!(result, ListResourcesResult => ReadResourceDirectoryResult)
    }
}
