//! The stdio face a host serves: [`lro_stdio`]'s transport, so a line that
//! is not JSON, or is over the cap, gets a JSON-RPC error instead of
//! silence (rmcp's own `stdio()` drops it, and the client waits for ever).

use rmcp::{ServerHandler, ServiceExt as _};

use crate::{HostError, Shutdown};

/// Serves `handler` over the process's stdin and stdout, with lines of at
/// most [`lro_stdio::MAX_LINE_BYTES`], until the client closes stdin or
/// `shutdown` resolves. Both MCP lifecycles are served: `initialize` first,
/// or requests that carry their own protocol version (`server/discover`).
///
/// # Errors
///
/// [`HostError::Stdio`] when the session never started (stdin closed
/// before the first request) or its task failed.
pub async fn serve_stdio<H: ServerHandler>(
    handler: H,
    mut shutdown: Shutdown,
) -> Result<(), HostError> {
    // Polled from the start, so a signal during the handshake stops it too.
    let running = tokio::select! {
        running = handler.serve(lro_stdio::stdio()) => {
            running.map_err(|err| HostError::Stdio(err.into()))?
        }
        () = &mut shutdown => return Ok(()),
    };
    let token = running.cancellation_token();
    let mut session = std::pin::pin!(running.waiting());
    let quit = tokio::select! {
        quit = &mut session => quit,
        () = &mut shutdown => {
            // Cancelling lets rmcp send the answers still in flight.
            token.cancel();
            session.await
        }
    };
    quit.map(drop).map_err(|err| HostError::Stdio(err.into()))
}
