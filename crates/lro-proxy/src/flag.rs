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
    model::{ClientJsonRpcMessage, ClientRequest, CustomRequest, JsonRpcMessage, JsonRpcRequest},
    transport::streamable_http_client::{
        StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    },
};
use sse_stream::{Error as SseError, Sse};

/// `message` with the spec's proxy flag, `clientInfo.proxy: true`, added
/// when it is the `initialize` request; any other message unchanged.
pub(crate) fn mark_message(message: ClientJsonRpcMessage) -> ClientJsonRpcMessage {
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
    lro_core::wire::mark_proxy_client_info(&mut params);
    let mut custom = CustomRequest::new("initialize", Some(params));
    custom.extensions = init.extensions;
    JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc,
        id,
        request: ClientRequest::CustomRequest(custom),
    })
}

/// reqwest's streamable-HTTP client, with the flag added to `initialize`.
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
        self.0
            .post_message(
                uri,
                mark_message(message),
                session_id,
                auth_header,
                custom_headers,
            )
            .await
    }

    /// The one POST rmcp's worker makes (3.11), with the flag.
    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.0
            .post_message_with_response_limits(
                uri,
                mark_message(message),
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await
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
}
