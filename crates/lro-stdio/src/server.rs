//! The server transport of a stdio face: newline-delimited JSON-RPC from
//! the client, read with a cap.
//!
//! It replaces rmcp's `AsyncRwTransport` (behind `rmcp::transport::stdio`),
//! which drops a line that is not JSON or is over its cap without a word, so
//! the client waits for ever. Here such a line gets a JSON-RPC error and the
//! next line is read:
//!
//! - not JSON: -32700 (parse error), `id` null;
//! - JSON but not a JSON-RPC message: -32600 (invalid request), with its
//!   `id` when it has one (a notification gets nothing, as JSON-RPC says);
//! - over the cap: -32600 naming the cap, with the `id` when it can be read
//!   from the line's start ([`head_of`]), else null.
//!
//! It answers before rmcp sees a message, so it holds whichever lifecycle
//! the client speaks: `initialize` first, or requests that carry their own
//! protocol version (`server/discover`).

use std::sync::Arc;

use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, ErrorCode, RequestId, ServerJsonRpcMessage},
    transport::Transport,
};
use serde_json::json;
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader},
    sync::Mutex,
};

use crate::line::{Lines, Next, head_of, trimmed, write_line};

/// The largest message a stdio face accepts from its client by default (a
/// tool call's arguments, a sampling answer): rmcp's own cap, so a client
/// that worked with rmcp's transport works here, and one line never holds
/// more than this much of the server's memory. A longer line gets an error
/// naming it.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// A line buffer grown past this is released after its line.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// MCP over a client's stdin and stdout (or any reader and writer), as a
/// server: serve a handler with it (`handler.serve(transport)`).
pub struct ServerStdio<R, W> {
    lines: Lines<BufReader<R>>,
    write: Arc<Mutex<Option<W>>>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> ServerStdio<R, W> {
    /// Reads lines of at most `max_line` bytes from `read` and writes
    /// answers to `write`.
    pub fn new(read: R, write: W, max_line: usize) -> Self {
        Self {
            lines: Lines::new(BufReader::new(read), max_line),
            write: Arc::new(Mutex::new(Some(write))),
        }
    }

    /// The message of `line`, or the error it gets (`Err(None)`: no answer).
    fn read(line: &[u8]) -> Result<ClientJsonRpcMessage, Option<Vec<u8>>> {
        let line = trimmed(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Err(None);
        }
        match serde_json::from_slice(line) {
            Ok(message) => Ok(message),
            Err(err) if err.is_syntax() || err.is_eof() => Err(Some(error_line(
                None,
                ErrorCode::PARSE_ERROR,
                &format!("parse error: the line is not JSON ({err})"),
            ))),
            Err(err) => {
                let head = head_of(line);
                if head.method && head.id.is_none() {
                    // A notification is never answered, not even with an error.
                    tracing::debug!(%err, "a notification rmcp cannot read was dropped");
                    return Err(None);
                }
                Err(Some(error_line(
                    head.id,
                    ErrorCode::INVALID_REQUEST,
                    &format!("invalid request: not a JSON-RPC message MCP knows ({err})"),
                )))
            }
        }
    }
}

/// One JSON-RPC error response, as a line's bytes. Written by hand because rmcp
/// leaves out an `id` it does not know, where JSON-RPC 2.0 wants `null`.
fn error_line(id: Option<RequestId>, code: ErrorCode, message: &str) -> Vec<u8> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code.0, "message": message},
    });
    serde_json::to_vec(&body).expect("a JSON value serializes")
}

const STDOUT: &str = "stdout";

/// A boxed reader of the process's stdin.
pub type StdinReader = Box<dyn AsyncRead + Send + Unpin>;
/// A boxed writer of the process's stdout.
pub type StdoutWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// MCP over the process's stdin and stdout, with lines of at most
/// [`MAX_LINE_BYTES`]: the drop-in replacement of `rmcp::transport::stdio()`.
///
/// When stdin and stdout are pipes (as MCP clients start servers), they are
/// read and written through the reactor: tokio's own `stdin()`/`stdout()` go
/// through a blocking thread for every read and write, which costs each
/// call a thread hand-off.
#[must_use]
pub fn stdio() -> ServerStdio<StdinReader, StdoutWriter> {
    use std::os::fd::AsFd as _;
    use tokio::net::unix::pipe;
    let read: StdinReader = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let write: StdoutWriter = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    ServerStdio::new(read, write, MAX_LINE_BYTES)
}

impl<R, W> Transport<RoleServer> for ServerStdio<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move { write_line(&write, serde_json::to_vec(&item)?, STDOUT).await }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let answer = match self.lines.next().await {
                Ok(Next::Line) => {
                    let line = std::mem::take(&mut self.lines.line);
                    let read = Self::read(&line);
                    if line.capacity() <= KEEP_BUFFER_BYTES {
                        self.lines.line = line;
                        self.lines.line.clear();
                    }
                    match read {
                        Ok(message) => return Some(message),
                        Err(answer) => answer,
                    }
                }
                Ok(Next::TooLong) => {
                    let max = self.lines.max();
                    let head = head_of(trimmed(&self.lines.head));
                    tracing::warn!(max, "a client message over the line cap was dropped");
                    Some(error_line(
                        head.id,
                        ErrorCode::INVALID_REQUEST,
                        &format!(
                            "the message is over the stdio line cap of {max} bytes ({} MiB) and was dropped",
                            max >> 20
                        ),
                    ))
                }
                Ok(Next::End) => return None,
                Err(err) => {
                    tracing::warn!(%err, "cannot read from the client");
                    return None;
                }
            };
            if let Some(line) = answer
                && write_line(&self.write, line, STDOUT).await.is_err()
            {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut write) = self.write.lock().await.take() {
            write.shutdown().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn answer(line: &[u8]) -> Option<Value> {
        match ServerStdio::<&[u8], Vec<u8>>::read(line) {
            Ok(_) => None,
            Err(answer) => answer.map(|line| serde_json::from_slice(&line).unwrap()),
        }
    }

    #[test]
    fn bad_lines_get_the_error_json_rpc_names() {
        let garbage = answer(b"this is not json").unwrap();
        assert_eq!(garbage["error"]["code"], -32700);
        assert_eq!(garbage["id"], Value::Null);
        assert!(
            garbage.as_object().unwrap().contains_key("id"),
            "id is null, not absent"
        );
        let shape = answer(br#"{"jsonrpc":"2.0","id":7,"method":42}"#).unwrap();
        assert_eq!(
            (shape["error"]["code"].as_i64(), shape["id"].as_i64()),
            (Some(-32600), Some(7))
        );
        assert!(
            answer(br#"{"jsonrpc":"2.0","method":42}"#).is_none(),
            "a notification is never answered"
        );
        assert!(answer(b"  \r").is_none());
        assert!(
            answer(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_none(),
            "read as a message"
        );
    }

    #[tokio::test]
    async fn a_line_over_the_cap_gets_an_error_with_its_id_and_reading_goes_on() {
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"tools/call\",\"params\":{{\"x\":\"{}\"}}}}\n",
            "y".repeat(300)
        );
        let input =
            format!("{long}not json\n{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}}\n");
        let (client, mut server) = tokio::io::duplex(1 << 16);
        let mut transport = ServerStdio::new(std::io::Cursor::new(input.into_bytes()), client, 200);
        let next = transport.receive().await.expect("the ping");
        assert!(matches!(next, ClientJsonRpcMessage::Request(r) if r.id == RequestId::Number(3)));
        drop(transport);
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut server, &mut out)
            .await
            .unwrap();
        let answers: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers.len(), 2, "{out}");
        assert_eq!(answers[0]["id"], "big");
        assert_eq!(answers[0]["error"]["code"], -32600);
        let message = answers[0]["error"]["message"].as_str().unwrap();
        assert!(message.contains("200 bytes"), "names the cap: {message}");
        assert_eq!(answers[1]["error"]["code"], -32700);
    }
}
