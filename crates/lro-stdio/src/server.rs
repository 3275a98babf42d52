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
//!
//! Lines are read in a task of its own, ahead of rmcp, so the end of the
//! client's input is seen ([`ServerStdio::input_ended`]) even while rmcp
//! reads nothing: before a lifecycle is chosen, rmcp handles a request
//! (`server/discover`) before it reads the next line, and a server whose
//! handshake waits for something (a proxy's upstream) would never learn that
//! its client is gone.

use std::sync::Arc;

use rmcp::{
    RoleServer,
    model::{
        ClientJsonRpcMessage, ClientRequest, ErrorCode, JsonRpcMessage, ProtocolVersion, RequestId,
        ServerJsonRpcMessage,
    },
    transport::Transport,
};
use serde_json::json;
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader},
    sync::{Mutex, mpsc, watch},
    task::JoinHandle,
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
pub struct ServerStdio<W> {
    /// What the reader read, in order. Unbounded: once a session runs, rmcp
    /// takes every message as it comes (each request becomes a task of its
    /// own), so reading ahead holds no more than rmcp would; and a reader
    /// that waited for room could not see the end of input.
    messages: mpsc::UnboundedReceiver<ClientJsonRpcMessage>,
    write: Arc<Mutex<Option<W>>>,
    ended: watch::Receiver<bool>,
    reader: JoinHandle<()>,
}

impl<W> Drop for ServerStdio<W> {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> ServerStdio<W> {
    /// Reads lines of at most `max_line` bytes from `read`, in a task of its
    /// own, and writes answers to `write`.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn new<R: AsyncRead + Send + Unpin + 'static>(read: R, write: W, max_line: usize) -> Self {
        let write = Arc::new(Mutex::new(Some(write)));
        let (sender, messages) = mpsc::unbounded_channel();
        let (end, ended) = watch::channel(false);
        let lines = Lines::new(BufReader::new(read), max_line);
        let reader = tokio::spawn(read_lines(lines, write.clone(), sender, end));
        Self {
            messages,
            write,
            ended,
            reader,
        }
    }

    /// Resolves once the client's input has ended (end of file, a read
    /// error, or an answer that could not be written), or the transport is
    /// gone, whether or not rmcp is reading. The messages read before it
    /// are still received.
    pub fn input_ended(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut ended = self.ended.clone();
        async move {
            // Err: the reader is gone, so the input is over too.
            let _ = ended.wait_for(|ended| *ended).await;
        }
    }
}

/// The reader's task: each message goes to `messages`, each line that is
/// not one gets its error on `write`; `end` says when there is no more.
async fn read_lines<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    mut lines: Lines<BufReader<R>>,
    write: Arc<Mutex<Option<W>>>,
    messages: mpsc::UnboundedSender<ClientJsonRpcMessage>,
    end: watch::Sender<bool>,
) {
    loop {
        let answer = match lines.next().await {
            Ok(Next::Line) => {
                let line = std::mem::take(&mut lines.line);
                let read = read(&line);
                if line.capacity() <= KEEP_BUFFER_BYTES {
                    lines.line = line;
                    lines.line.clear();
                }
                match read {
                    Ok(message) => {
                        if messages.send(message).is_err() {
                            break;
                        }
                        continue;
                    }
                    Err(answer) => answer,
                }
            }
            Ok(Next::TooLong) => {
                let max = lines.max();
                let head = head_of(trimmed(&lines.head));
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
            Ok(Next::End) => break,
            Err(err) => {
                tracing::warn!(%err, "cannot read from the client");
                break;
            }
        };
        if let Some(line) = answer
            && write_line(&write, line, STDOUT).await.is_err()
        {
            break;
        }
    }
    end.send_replace(true);
}

/// The message of `line`, or the error it gets (`Err(None)`: no answer).
fn read(line: &[u8]) -> Result<ClientJsonRpcMessage, Option<Vec<u8>>> {
    let line = trimmed(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(None);
    }
    match serde_json::from_slice(line) {
        Ok(message) => match removed_ping(&message, line) {
            Some(id) => Err(Some(error_line(
                Some(id),
                ErrorCode::METHOD_NOT_FOUND,
                "method not found: ping was removed in MCP 2026-07-28",
            ))),
            None => Ok(message),
        },
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

/// The id of a `ping` sent with MCP 2026-07-28's request context: that
/// revision removed the method, and the HTTP faces answer it as removed
/// (404, -32601); rmcp would answer it here. Only a ping is parsed twice.
fn removed_ping(message: &ClientJsonRpcMessage, line: &[u8]) -> Option<RequestId> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::PingRequest(_)) {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    let version = &value["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"];
    (version.as_str() == Some(&*ProtocolVersion::V_2026_07_28.to_string()))
        .then(|| request.id.clone())
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
/// Call it within a Tokio runtime: it starts the reader's task.
///
/// When stdin and stdout are pipes (as MCP clients start servers), they are
/// read and written through the reactor: tokio's own `stdin()`/`stdout()` go
/// through a blocking thread for every read and write, which costs each
/// call a thread hand-off.
#[must_use]
pub fn stdio() -> ServerStdio<StdoutWriter> {
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

impl<W> Transport<RoleServer> for ServerStdio<W>
where
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
        self.messages.recv().await
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
        match read(line) {
            Ok(_) => None,
            Err(answer) => answer.map(|line| serde_json::from_slice(&line).unwrap()),
        }
    }

    #[test]
    fn a_ping_of_2026_07_28_is_a_removed_method_and_an_older_one_is_read() {
        let modern = br#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let answer = answer(modern).unwrap();
        assert_eq!(
            (answer["error"]["code"].as_i64(), answer["id"].as_i64()),
            (Some(-32601), Some(4))
        );
        assert!(read(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#).is_ok());
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

    #[tokio::test]
    async fn the_end_of_input_is_seen_while_nothing_receives() {
        let (mut client, read) = tokio::io::duplex(1 << 16);
        let mut transport = ServerStdio::new(read, tokio::io::sink(), 1 << 10);
        let ping = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        tokio::io::AsyncWriteExt::write_all(&mut client, ping)
            .await
            .unwrap();
        assert!(transport.receive().await.is_some(), "the ping");
        assert!(!*transport.ended.borrow(), "the client's end is still open");
        tokio::io::AsyncWriteExt::write_all(&mut client, ping)
            .await
            .unwrap();
        drop(client);
        // Nothing receives the second ping, and the end is seen all the same.
        tokio::time::timeout(std::time::Duration::from_secs(10), transport.input_ended())
            .await
            .expect("the end of input is seen");
        assert!(transport.receive().await.is_some(), "read before the end");
        assert!(transport.receive().await.is_none());
    }
}
