//! The principal a bearer token names reaches the handler: `serve::http`
//! behind lro-http's guard, a real rmcp client over streamable HTTP on
//! 127.0.0.1, and a handler that reads `http::request::Parts` from the
//! request context, as the layer does.

use std::net::SocketAddr;

use lro_core::principal::Principal;
use lro_http::{Guard, auth::Tokens};
use lro_proxy::serve::{self, HttpOptions};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt as _,
    model::*,
    service::RequestContext,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tokio::sync::oneshot;

/// One tool, `whoami`: the caller's principal digest, or `none`.
#[derive(Clone)]
struct WhoAmI;

impl ServerHandler for WhoAmI {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let who = cx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .map_or_else(|| "none".to_owned(), Principal::digest);
        Ok(CallToolResult::success(vec![ContentBlock::text(who)]).into())
    }
}

async fn whoami(url: &str, token: &str) -> String {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new("whoami"))
        .await
        .unwrap();
    client.cancel().await.unwrap();
    result.content[0].as_text().unwrap().text.clone()
}

#[tokio::test]
async fn each_token_reaches_the_handler_as_its_principal() {
    let mut tokens = Tokens::new();
    tokens.add_list("tok-a=alice,tok-b=bob", "test").unwrap();
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let (ready_tx, ready_rx) = oneshot::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let server = tokio::spawn(serve::http(
        addr,
        HttpOptions::new(),
        Guard::new(addr, tokens),
        || WhoAmI,
        async move {
            let _ = stop_rx.await;
        },
        move |bound| {
            let _ = ready_tx.send(bound);
        },
    ));
    let url = format!("http://{}{}", ready_rx.await.unwrap(), serve::MCP_PATH);
    assert_eq!(
        whoami(&url, "tok-a").await,
        Principal::new("alice").digest()
    );
    assert_eq!(whoami(&url, "tok-b").await, Principal::new("bob").digest());
    // A wrong token never reaches the handler.
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header("tok-c");
    assert!(
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .is_err()
    );
    stop_tx.send(()).unwrap();
    server.await.unwrap().unwrap();
}
