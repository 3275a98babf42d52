//! The spec's form of the proxy flag, `clientInfo.proxy: true`, on the wire,
//! and the HTTP client that sends it.
//!
//! rmcp's `Implementation` type has no field for it and drops unknown keys,
//! so the key is added where the proxy owns the bytes: in the transport of a
//! stdio child and in the HTTP client of a streamable-HTTP upstream. Both
//! send the `initialize` request as a custom request of the same method
//! whose params carry the key.

use std::{collections::HashMap, sync::Arc};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::{
    model::{
        ClientJsonRpcMessage, ClientRequest, CustomRequest, GetMeta as _, JsonRpcMessage,
        JsonRpcRequest, RequestId,
    },
    transport::streamable_http_client::{
        StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    },
};
use sse_stream::{Error as SseError, Sse};

use lro_core::proxy_flag::{self, META_CLIENT_INFO};

use crate::post;

/// `message` with the spec's proxy flag, `clientInfo.proxy: true`, added
/// where a request carries the client's identity: the `initialize` params,
/// or (MCP 2026-07-28, the `server/discover` probe included) the `_meta`
/// client info. Any other message unchanged.
pub(crate) fn mark_message(mut message: ClientJsonRpcMessage) -> ClientJsonRpcMessage {
    if let JsonRpcMessage::Request(request) = &mut message
        && request.request.get_meta().contains_key(META_CLIENT_INFO)
    {
        proxy_flag::mark_proxy_meta(request.request.get_meta_mut());
    }
    let JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc,
        id,
        request: ClientRequest::InitializeRequest(init),
    }) = message
    else {
        return message;
    };
    let Ok(mut params) = serde_json::to_value(&init.params) else {
        return JsonRpcMessage::Request(JsonRpcRequest {
            jsonrpc,
            id,
            request: ClientRequest::InitializeRequest(init),
        });
    };
    lro_core::proxy_flag::mark_proxy_client_info(&mut params);
    let mut custom = CustomRequest::new("initialize", Some(params));
    custom.extensions = init.extensions;
    JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc,
        id,
        request: ClientRequest::CustomRequest(custom),
    })
}

/// The id of `message` when it is a request, which its POST's reply answers.
fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(request) => Some(request.id.clone()),
        _ => None,
    }
}

/// `response` with an id-less JSON-RPC error given `id`, the id of the
/// request whose POST it answers. A server that rejects a request before
/// reading it answers so (the TypeScript SDK: HTTP 400 with `"id": null`);
/// rmcp matches such an error to no request, and the call would wait for
/// ever. A reply on a POST can only answer that POST's request.
fn correlate(response: StreamableHttpPostResponse, id: RequestId) -> StreamableHttpPostResponse {
    match response {
        StreamableHttpPostResponse::Json(JsonRpcMessage::Error(mut error), session)
            if error.id.is_none() =>
        {
            error.id = Some(id);
            StreamableHttpPostResponse::Json(JsonRpcMessage::Error(error), session)
        }
        other => other,
    }
}

/// reqwest's streamable-HTTP client, with the flag added to `initialize`,
/// replies read by [`post::post`] and id-less errors correlated (see
/// [`correlate`]).
#[derive(Clone)]
pub(crate) struct FlaggingClient(reqwest::Client);

impl FlaggingClient {
    /// A client that gives up on a connection after [`CONNECT_TIMEOUT`]
    /// (reqwest's default waits as long as the operating system does).
    pub(crate) fn new() -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .unwrap_or_default();
        Self(client)
    }
}

/// How long opening a connection to an HTTP upstream may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl StreamableHttpClient for FlaggingClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    /// The one POST rmcp's worker makes (3.11): with the flag, read by
    /// [`post::post`] (an `application/json` reply may hold several
    /// messages), and with an id-less JSON-RPC error given the id of the
    /// request it answers.
    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let id = request_id(&message);
        let response = post::post(
            &self.0,
            &uri,
            &mark_message(message),
            session_id.as_deref(),
            auth_header,
            custom_headers,
            limits,
        )
        .await?;
        Ok(match id {
            Some(id) => correlate(response, id),
            None => response,
        })
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        ClientCapabilities, Implementation, InitializeRequest, InitializeRequestParams, RequestId,
    };

    use super::*;

    #[test]
    fn the_initialize_message_serializes_with_the_flag() {
        let params = InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("client", "1.0"),
        );
        let message = ClientJsonRpcMessage::request(
            ClientRequest::InitializeRequest(InitializeRequest::new(params)),
            RequestId::Number(7),
        );
        let wire = serde_json::to_value(mark_message(message)).unwrap();
        assert_eq!(wire["method"], "initialize");
        assert_eq!(wire["id"], 7);
        assert_eq!(wire["params"]["clientInfo"]["proxy"], true);
        assert_eq!(wire["params"]["clientInfo"]["name"], "client");
        assert!(wire["params"]["protocolVersion"].is_string());
    }

    #[test]
    fn a_2026_request_carries_the_flag_in_its_meta_client_info() {
        let mut discover = rmcp::model::DiscoverRequest::new(Default::default());
        discover
            .extensions
            .insert(rmcp::model::RequestMetaObject::with_client_context(
                rmcp::model::ProtocolVersion::V_2026_07_28,
                Implementation::new("client", "1.0"),
                ClientCapabilities::default(),
            ));
        let message = ClientJsonRpcMessage::request(
            ClientRequest::DiscoverRequest(discover),
            RequestId::Number(1),
        );
        let wire = serde_json::to_value(mark_message(message)).unwrap();
        assert_eq!(wire["params"]["_meta"][META_CLIENT_INFO]["proxy"], true);
        assert_eq!(wire["params"]["_meta"][META_CLIENT_INFO]["name"], "client");
        // A request without one gets no `_meta`.
        let ping = ClientJsonRpcMessage::request(
            ClientRequest::PingRequest(Default::default()),
            RequestId::Number(2),
        );
        let wire = serde_json::to_value(mark_message(ping)).unwrap();
        assert!(wire.get("params").is_none(), "{wire}");
    }

    fn json(body: serde_json::Value) -> StreamableHttpPostResponse {
        StreamableHttpPostResponse::Json(serde_json::from_value(body).unwrap(), None)
    }

    fn wire(response: StreamableHttpPostResponse) -> serde_json::Value {
        let StreamableHttpPostResponse::Json(message, _) = response else {
            panic!("not JSON: {response:?}")
        };
        serde_json::to_value(message).unwrap()
    }

    #[test]
    fn an_id_less_error_takes_the_id_of_the_request_it_answers() {
        let error = serde_json::json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32000, "message": "Bad Request"}});
        let fixed = wire(correlate(json(error), RequestId::Number(4)));
        assert_eq!(fixed["id"], 4);
        assert_eq!(fixed["error"]["message"], "Bad Request");

        // An error or a result with its own id is left as it came.
        let own = serde_json::json!({"jsonrpc": "2.0", "id": 9,
            "error": {"code": -32601, "message": "no"}});
        assert_eq!(
            wire(correlate(json(own.clone()), RequestId::Number(4))),
            own
        );
        let result = serde_json::json!({"jsonrpc": "2.0", "id": 9, "result": {}});
        assert_eq!(
            wire(correlate(json(result.clone()), RequestId::Number(4))),
            result
        );
    }
}
