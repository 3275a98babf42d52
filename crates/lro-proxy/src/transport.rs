//! The client transport over a stdio child's pipes.
//!
//! It replaces rmcp's `AsyncRwTransport` for two reasons. It writes the
//! `initialize` request with the spec's `clientInfo.proxy` flag (see
//! [`crate::flag`]). And it reads a tool result without rmcp's buffered,
//! untagged deserialization, which tries one result type after another and
//! copies every string of a message several times (a small result costs
//! about five times a plain parse; a large one, memory several times its
//! size): a line that holds `"content"`, or is over [`DIRECT_PARSE_BYTES`],
//! is parsed once into a JSON value, and a `tools/call` result's text blocks
//! are moved, not copied, into the typed result. Any other such message is
//! converted from that value, not parsed from the line again. Other lines
//! are parsed by rmcp's own types. Both keep rmcp's tolerance of a leading
//! BOM and of a last line without its newline.

use std::sync::Arc;

use lro_core::error::chain;
use lro_stdio::line::{Head, Lines, Next, head_of, trimmed, write_line};
use rmcp::{
    RoleClient,
    model::{
        CallToolResult, ClientJsonRpcMessage, ContentBlock, ErrorData, RequestId,
        ServerJsonRpcMessage, ServerResult,
    },
    transport::Transport,
};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::{
    io::{AsyncWriteExt, BufReader},
    process::{ChildStdin, ChildStdout},
    sync::Mutex,
};
use tokio_util::task::TaskTracker;

use crate::{
    exit::{ChildExit, GRACE},
    flag,
};

/// Lines longer than this take the direct path whatever they hold.
pub(crate) const DIRECT_PARSE_BYTES: usize = 1 << 20;

/// A line buffer grown past this is released after its line, so one huge
/// result does not keep its memory for the rest of the session.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// MCP over a child's stdin and stdout.
pub(crate) struct ChildTransport {
    /// Taken on drop, to drain (see `Drop`).
    read: Option<Lines<BufReader<ChildStdout>>>,
    tasks: TaskTracker,
    /// The child's exit, which bounds the drain.
    exit: watch::Receiver<Option<ChildExit>>,
    write: Arc<Mutex<Option<ChildStdin>>>,
}

impl ChildTransport {
    pub(crate) fn new(
        stdout: ChildStdout,
        stdin: ChildStdin,
        max_line: usize,
        tasks: TaskTracker,
        exit: watch::Receiver<Option<ChildExit>>,
    ) -> Self {
        Self {
            read: Some(Lines::new(BufReader::new(stdout), max_line)),
            tasks,
            exit,
            write: Arc::new(Mutex::new(Some(stdin))),
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let bytes = serde_json::to_vec(&flag::mark_message(item))?;
            write_line(&write, bytes, "upstream stdin").await
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let lines = self.read.as_mut()?;
            match lines.next().await {
                Ok(Next::Line) => {}
                Ok(Next::TooLong) => {
                    let max = lines.max();
                    tracing::warn!(max, "upstream message over the size limit dropped");
                    let why = format!(
                        "the upstream's answer is over the proxy's message cap of {max} bytes ({} MiB) and was dropped",
                        max >> 20
                    );
                    match fail_pending(head_of(trimmed(&lines.head)), why) {
                        Some(error) => return Some(error),
                        None => continue,
                    }
                }
                Ok(Next::End) => return None,
                Err(err) => {
                    tracing::warn!(err = %chain(&err), "cannot read from the upstream");
                    return None;
                }
            }
            let line = std::mem::take(&mut lines.line);
            let parsed = parse(&line);
            if line.capacity() <= KEEP_BUFFER_BYTES {
                lines.line = line;
                lines.line.clear();
            }
            if let Some(message) = parsed {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing stdin is how MCP tells a stdio server to exit.
        if let Some(mut stdin) = self.write.lock().await.take() {
            stdin.shutdown().await?;
        }
        Ok(())
    }
}

/// When the session ends, the child's stdin closes and it is given time to
/// exit; meanwhile whatever it still writes is read and dropped, so that a
/// child finishing a message does not die of a broken pipe.
impl Drop for ChildTransport {
    fn drop(&mut self) {
        if let Some(lines) = self.read.take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            let mut read = lines.into_inner();
            let mut exit = self.exit.clone();
            self.tasks.spawn(async move {
                // A process that left the child's group may hold the pipe
                // open: stop a grace period after the child itself is gone.
                let gone = async {
                    let _ = exit.wait_for(Option::is_some).await;
                    tokio::time::sleep(GRACE).await;
                };
                let mut sink = tokio::io::sink();
                tokio::select! {
                    _ = tokio::io::copy(&mut read, &mut sink) => {}
                    () = gone => {}
                }
            });
        }
    }
}

/// The message of one line; for a line that is not an MCP message, the
/// error that fails the pending call it answers. `None` for a blank line, and
/// for a line that is not JSON-RPC and names no call (a server's stray log
/// line): both are skipped.
fn parse(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let line = trimmed(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let parsed = if line.len() > DIRECT_PARSE_BYTES
        || memchr::memmem::find(line, br#""content""#).is_some()
    {
        parse_direct(line)
    } else {
        serde_json::from_slice(line)
    };
    match parsed {
        Ok(message) => Some(message),
        Err(err) => {
            tracing::warn!(err = %chain(&err), bytes = line.len(), "the upstream sent a line that is not an MCP message");
            fail_pending(
                head_of(line),
                format!("the upstream's answer is not an MCP message: {err}"),
            )
        }
    }
}

/// The error that fails the call a bad line answers, when the line's start
/// names one: an `id` and no `method` (a request of the upstream's own has
/// an id of the upstream's numbering, which names no call of ours).
fn fail_pending(head: Head, why: String) -> Option<ServerJsonRpcMessage> {
    match head {
        Head {
            id: Some(id),
            method: false,
        } => Some(ServerJsonRpcMessage::error(
            ErrorData::internal_error(why, None),
            Some(id),
        )),
        _ => None,
    }
}

/// A message parsed once into a JSON value: a `tools/call` result is moved
/// into its typed form (see [`tool_result`]), any other message is
/// converted by rmcp's types from the value. A tool result with a content
/// block that rmcp's `ContentBlock` does not read takes rmcp's path from the
/// line.
fn parse_direct(line: &[u8]) -> serde_json::Result<ServerJsonRpcMessage> {
    let value: Value = serde_json::from_slice(line)?;
    if !is_tool_result(&value) {
        return serde_json::from_value(value);
    }
    match tool_result(value) {
        Some(message) => Ok(message),
        None => serde_json::from_slice(line),
    }
}

/// The keys a `tools/call` result may have.
const RESULT_KEYS: [&str; 5] = [
    "content",
    "structuredContent",
    "isError",
    "_meta",
    "resultType",
];

/// Whether `value` has the shape of a `tools/call` result:
/// `{"jsonrpc":"2.0","id":…,"result":{"content":[…],"structuredContent":…,
/// "isError":…,"_meta":…}}`.
fn is_tool_result(value: &Value) -> bool {
    let Some(top) = value.as_object() else {
        return false;
    };
    let result = top.get("result").and_then(Value::as_object);
    top.len() == 3
        && top.get("jsonrpc").is_some_and(|v| v == "2.0")
        && top.contains_key("id")
        && result.is_some_and(|r| {
            r.get("content").is_some_and(Value::is_array)
                && r.keys().all(|k| RESULT_KEYS.contains(&k.as_str()))
        })
}

/// A value that [`is_tool_result`], moved into rmcp's typed result; its text
/// blocks' strings are moved, not copied. `None` when a part is not what
/// rmcp reads.
fn tool_result(value: Value) -> Option<ServerJsonRpcMessage> {
    let Value::Object(mut top) = value else {
        return None;
    };
    let Value::Object(mut result) = top.remove("result")? else {
        return None;
    };
    let id: RequestId = serde_json::from_value(top.remove("id")?).ok()?;
    let Value::Array(blocks) = result.remove("content")? else {
        return None;
    };
    let content = blocks
        .into_iter()
        .map(content_block)
        .collect::<Option<Vec<_>>>()?;
    let mut call = CallToolResult::success(content);
    call.result_type = match result.remove("resultType") {
        None => None,
        Some(kind) => Some(serde_json::from_value(kind).ok()?),
    };
    call.structured_content = result.remove("structuredContent");
    call.is_error = match result.remove("isError") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(b),
        Some(_) => return None,
    };
    if let Some(meta) = result.remove("_meta") {
        call.meta = Some(serde_json::from_value(meta).ok()?);
    }
    Some(ServerJsonRpcMessage::response(
        ServerResult::CallToolResult(call),
        id,
    ))
}

/// One content block; a plain text block's string is moved, not copied.
fn content_block(block: Value) -> Option<ContentBlock> {
    let Value::Object(mut map) = block else {
        return None;
    };
    if is_plain_text(&map) {
        let Some(Value::String(text)) = map.remove("text") else {
            return None;
        };
        return Some(ContentBlock::text(text));
    }
    serde_json::from_value(Value::Object(map)).ok()
}

fn is_plain_text(map: &Map<String, Value>) -> bool {
    map.len() == 2
        && map.get("type").and_then(Value::as_str) == Some("text")
        && map.get("text").is_some_and(Value::is_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_line(text: &str, extra: &str) -> Vec<u8> {
        let text = serde_json::to_string(text).unwrap();
        format!(
            r#"{{"jsonrpc":"2.0","id":4,"result":{{"content":[{{"type":"text","text":{text}}}]{extra}}}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn the_direct_path_reads_what_rmcp_reads() {
        let text = "[{\"id\":1}]".repeat(10);
        for extra in [
            "",
            r#","isError":false"#,
            r#","structuredContent":{"a":[1]},"_meta":{"k":"v"}"#,
        ] {
            let line = tool_line(&text, extra);
            let value: Value = serde_json::from_slice(&line).unwrap();
            assert!(is_tool_result(&value), "{extra}");
            let direct = tool_result(value).expect("a tool result");
            let rmcp: ServerJsonRpcMessage = serde_json::from_slice(&line).unwrap();
            assert_eq!(
                serde_json::to_value(&direct).unwrap(),
                serde_json::to_value(&rmcp).unwrap(),
                "{extra}"
            );
        }
    }

    #[test]
    fn other_shapes_take_rmcps_path() {
        let shape = |line: &[u8]| is_tool_result(&serde_json::from_slice(line).unwrap());
        assert!(!shape(&tool_line("x", r#","nextCursor":"c""#)));
        let read = br#"{"jsonrpc":"2.0","id":1,"result":{"contents":[]}}"#;
        assert!(!shape(read));
        let note = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;
        assert!(!shape(note));
        assert!(parse(note).is_some(), "rmcp reads it");
        assert!(parse(b"   ").is_none());
        let bom = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
        assert!(parse(bom).is_some(), "a leading BOM is skipped");
        assert!(parse(b"not json").is_none());
    }

    #[test]
    fn a_small_message_with_content_reads_as_rmcp_reads_it() {
        let lines: [&[u8]; 5] = [
            br#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}"#,
            br#"{"id":"x","result":{"content":[],"structuredContent":[1,2]},"jsonrpc":"2.0"}"#,
            br#"{"jsonrpc":"2.0","id":2,"result":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}}"#,
            br#"{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}"#,
            br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"hologram","text":"x"}]}}"#,
        ];
        for line in lines {
            let rmcp = serde_json::from_slice::<ServerJsonRpcMessage>(line)
                .map(|m| serde_json::to_value(m).unwrap());
            let ours = parse(line).map(|m| serde_json::to_value(m).unwrap());
            match (rmcp, ours) {
                (Ok(rmcp), Some(ours)) => assert_eq!(ours, rmcp),
                (rmcp, ours) => panic!(
                    "{}: rmcp {rmcp:?}, ours {ours:?}",
                    String::from_utf8_lossy(line)
                ),
            }
        }
    }

    #[test]
    fn a_large_message_reads_as_rmcp_reads_it() {
        let big = "x\"é\\n".repeat(DIRECT_PARSE_BYTES / 4);
        let text = serde_json::to_string(&big).unwrap();
        let lines = [
            // resources/read, text and blob
            format!(
                r#"{{"jsonrpc":"2.0","id":"r1","result":{{"contents":[{{"uri":"file:///a","mimeType":"text/plain","text":{text}}},{{"uri":"file:///b","blob":"{}"}}]}}}}"#,
                "QUJD".repeat(1000)
            ),
            // prompts/get
            format!(
                r#"{{"jsonrpc":"2.0","id":2,"result":{{"messages":[{{"role":"user","content":{{"type":"text","text":{text}}}}}]}}}}"#
            ),
            // a notification
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":{text}}}}}"#
            ),
            // an error
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"error":{{"code":-32603,"message":"boom","data":{text}}}}}"#
            ),
            // a tool result with a block rmcp does not know
            format!(
                r#"{{"jsonrpc":"2.0","id":4,"result":{{"content":[{{"type":"hologram","text":{text}}}]}}}}"#
            ),
            // a tool result
            String::from_utf8(tool_line(&big, r#","isError":false"#)).unwrap(),
        ];
        for line in lines {
            assert!(line.len() > DIRECT_PARSE_BYTES);
            let rmcp = serde_json::from_slice::<ServerJsonRpcMessage>(line.as_bytes())
                .map(|m| serde_json::to_value(m).unwrap());
            let ours = parse_direct(line.as_bytes()).map(|m| serde_json::to_value(m).unwrap());
            match (rmcp, ours) {
                (Ok(rmcp), Ok(ours)) => assert_eq!(ours, rmcp, "{}", &line[..80]),
                (Err(_), Err(_)) => {}
                (rmcp, ours) => panic!("{}: rmcp {rmcp:?}, ours {ours:?}", &line[..80]),
            }
        }
    }

    #[test]
    fn a_bad_answer_fails_its_call_when_its_id_can_be_read() {
        let failed = |line: &[u8]| match parse(line) {
            Some(ServerJsonRpcMessage::Error(e)) => e.id,
            _ => None,
        };
        assert_eq!(
            failed(br#"{"jsonrpc":"2.0","id":5,"result":"#),
            Some(RequestId::Number(5))
        );
        assert_eq!(
            failed(br#"{"jsonrpc":"2.0","id":6,"result":{"content":7}}"#),
            None,
            "rmcp reads any result"
        );
        assert!(parse(b"a log line").is_none(), "no call to fail");
        assert!(
            parse(br#"{"jsonrpc":"2.0","id":5,"method":"#).is_none(),
            "the upstream's own request numbers no call of ours"
        );
    }
}
