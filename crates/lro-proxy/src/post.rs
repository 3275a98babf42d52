//! The POST of an HTTP upstream's client, whose `application/json` reply
//! may hold several messages.
//!
//! rmcp's reqwest client reads an `application/json` reply as exactly one
//! JSON-RPC message, read to its end. Servers in the wild, the MCP
//! conformance suite's own reference server among them, stream several
//! messages under that type, one JSON text after another: a tool's progress
//! before its answer, or a `subscriptions/listen` stream that stays open. A
//! strict read fails the first and waits for ever on the second. [`post`]
//! reads such a body as a stream of JSON texts, each handed to rmcp as an
//! SSE event's data, so one message or many arrive the same way, each as
//! soon as it is complete. Everything else reads as rmcp reads it: SSE,
//! `202 Accepted`, an expired session (404), a challenge (401), a JSON-RPC
//! error in a failed reply, and a refused `server/discover`, which tells
//! the lifecycle that the server is legacy.

use std::{borrow::Cow, collections::HashMap};

use bytes::Bytes;
use futures::{Stream, StreamExt as _, stream::BoxStream};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use rmcp::{
    model::{ClientJsonRpcMessage, ClientRequest, ErrorData, JsonRpcMessage, ServerJsonRpcMessage},
    transport::streamable_http_client::{
        AuthRequiredError, HttpStatusError, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    },
};
use serde_json::{Value, value::RawValue};
use sse_stream::{Error as SseError, Sse, SseStream};

type Error = StreamableHttpError<reqwest::Error>;

const SESSION_ID: &str = "mcp-session-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The head of a failed reply's body kept in its error.
const DIAGNOSTIC_BYTES: usize = 512;

/// POSTs `message` (its session, bearer token and headers) and reads the
/// reply within `limits`.
pub(crate) async fn post(
    client: &reqwest::Client,
    uri: &str,
    message: &ClientJsonRpcMessage,
    session_id: Option<&str>,
    auth: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
    limits: StreamableHttpResponseLimits,
) -> Result<StreamableHttpPostResponse, Error> {
    let mut request = client
        .post(uri)
        .header(header::ACCEPT, format!("{EVENT_STREAM}, {JSON}"));
    if let Some(token) = auth {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if let Some(id) = session_id {
        request = request.header(SESSION_ID, id);
    }
    let response = request
        .json(message)
        .send()
        .await
        .map_err(StreamableHttpError::Client)?;
    let status = response.status();
    if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
        return Ok(StreamableHttpPostResponse::Accepted);
    }
    if status == StatusCode::NOT_FOUND && session_id.is_some() {
        return Err(StreamableHttpError::SessionExpired);
    }
    if !status.is_success() {
        return failed(response, message, session_id.is_some(), limits).await;
    }
    // A notification or an answer awaits nothing: whatever the body says.
    if !matches!(message, JsonRpcMessage::Request(_)) {
        return Ok(StreamableHttpPostResponse::Accepted);
    }
    let session = response
        .headers()
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let events = match media_type(response.headers()).as_deref() {
        Some(EVENT_STREAM) => {
            let body = bounded(response.bytes_stream(), limits.max_sse_event_size);
            SseStream::from_bytes_stream(body).boxed()
        }
        Some(JSON) => json_texts(response.bytes_stream(), limits.max_json_response_size),
        other => {
            return Err(StreamableHttpError::UnexpectedContentType(
                other.map(str::to_owned),
            ));
        }
    };
    let events = match listen_id(message) {
        Some(id) => events
            .map(move |event| event.map(|event| of_listen(event, &id)))
            .boxed(),
        None => events,
    };
    Ok(StreamableHttpPostResponse::Sse(events, session))
}

/// The id of a `subscriptions/listen` request.
fn listen_id(message: &ClientJsonRpcMessage) -> Option<Value> {
    match message {
        JsonRpcMessage::Request(request)
            if matches!(
                request.request,
                ClientRequest::SubscriptionsListenRequest(_)
            ) =>
        {
            Some(request.id.clone().into_json_value())
        }
        _ => None,
    }
}

/// A notification on a listen's reply, its subscription id written as the
/// listen's id was. rmcp routes a notification to its listen by that id,
/// type included; a server that writes the id `7` as `"7"` (the
/// conformance suite's reference server does) would otherwise lose every
/// notification. A reply on a listen's POST can only be that listen's.
fn of_listen(mut event: Sse, id: &Value) -> Sse {
    let Some(data) = event.data.as_deref() else {
        return event;
    };
    if !data.contains(SUBSCRIPTION_ID) {
        return event;
    }
    let Ok(mut message) = serde_json::from_str::<Value>(data) else {
        return event;
    };
    match message.pointer_mut(&format!(
        "/params/_meta/{}",
        SUBSCRIPTION_ID.replace('/', "~1")
    )) {
        Some(given) if given != id => *given = id.clone(),
        _ => return event,
    }
    event.data = Some(message.to_string());
    event
}

/// The media type of a reply, lower case, without its parameters.
fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let kind = value.split(';').next()?.trim().to_ascii_lowercase();
    Some(kind)
}

/// A reply that is not a success: its JSON-RPC error when it holds one,
/// else an error with its status and the head of its body.
async fn failed(
    response: reqwest::Response,
    message: &ClientJsonRpcMessage,
    session_attached: bool,
    limits: StreamableHttpResponseLimits,
) -> Result<StreamableHttpPostResponse, Error> {
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED
        && let Some(challenge) = response.headers().get(header::WWW_AUTHENTICATE)
    {
        let challenge = String::from_utf8_lossy(challenge.as_bytes()).into_owned();
        return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
            challenge,
        )));
    }
    let retry_after = response
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = read_to_end(response.bytes_stream(), limits.max_json_response_size).await?;
    let error = match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
        Ok(error @ JsonRpcMessage::Error(_)) => Some(error),
        _ => None,
    };
    let head = String::from_utf8_lossy(&body[..body.len().min(DIAGNOSTIC_BYTES)]).into_owned();
    // rmcp's lifecycle reads a refused `server/discover` (4xx, no session)
    // as "this server is legacy" only when it comes back as an error with
    // the probe's id.
    if let JsonRpcMessage::Request(probe) = message
        && matches!(probe.request, ClientRequest::DiscoverRequest(_))
        && !session_attached
        && status.is_client_error()
        && !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        let data = match error {
            Some(JsonRpcMessage::Error(error)) => error.error,
            _ => ErrorData::invalid_request(
                format!("server/discover rejected with HTTP {status}: {head}"),
                None,
            ),
        };
        return Ok(StreamableHttpPostResponse::Json(
            ServerJsonRpcMessage::error(data, Some(probe.id.clone())),
            None,
        ));
    }
    if let Some(error) = error {
        return Ok(StreamableHttpPostResponse::Json(error, None));
    }
    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        return Err(HttpStatusError::new(status.as_u16(), retry_after).into());
    }
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
        format!("HTTP {status}: {head}"),
    )))
}

/// A whole body, at most `max` bytes.
async fn read_to_end(
    mut body: impl Stream<Item = reqwest::Result<Bytes>> + Unpin,
    max: usize,
) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(StreamableHttpError::Client)?;
        if bytes.len() + chunk.len() > max {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// An SSE body that fails once more than `max` bytes pass with no blank
/// line, the end of an event.
fn bounded(
    body: impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
    max: usize,
) -> impl Stream<Item = Result<Bytes, SseError>> + Send + 'static {
    let mut since_event = 0usize;
    let mut last = 0u8;
    body.map(move |chunk| {
        let chunk = chunk.map_err(|err| SseError::Body(Box::new(err)))?;
        for &byte in chunk.iter() {
            match byte {
                b'\r' => continue,
                b'\n' if last == b'\n' => since_event = 0,
                _ => since_event += 1,
            }
            last = byte;
        }
        if since_event > max {
            return Err(SseError::Body(
                format!("an SSE event over {max} bytes").into(),
            ));
        }
        Ok(chunk)
    })
}

/// A body of JSON texts, one after another with any whitespace between,
/// as SSE events, each as soon as it is complete.
fn json_texts(
    body: impl Stream<Item = reqwest::Result<Bytes>> + Send + Unpin + 'static,
    max: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    futures::stream::unfold(
        (body, Splitter::default(), false),
        move |(mut body, mut split, mut ended)| async move {
            loop {
                match split.next_text(ended) {
                    Ok(Some(text)) => {
                        let event = Sse::default().data(text);
                        return Some((Ok(event), (body, split, ended)));
                    }
                    Ok(None) if ended => return None,
                    Ok(None) => {}
                    Err(err) => {
                        // Nothing after a broken text can be read.
                        split = Splitter::default();
                        return Some((Err(err), (body, split, true)));
                    }
                }
                if split.pending() > max {
                    let err = SseError::Body(format!("a JSON reply over {max} bytes").into());
                    return Some((Err(err), (body, Splitter::default(), true)));
                }
                match body.next().await {
                    Some(Ok(chunk)) => split.push(&chunk),
                    Some(Err(err)) => {
                        return Some((
                            Err(SseError::Body(Box::new(err))),
                            (body, Splitter::default(), true),
                        ));
                    }
                    None => ended = true,
                }
            }
        },
    )
    .boxed()
}

/// Splits a byte stream into its top-level JSON texts, each as soon as its
/// last byte arrives. One pass over the bytes, kept across chunks, finds
/// where a text may end (nesting depth, and whether inside a string);
/// serde_json then reads that text whole and gives the verdict. serde_json
/// alone cannot resume a text cut between chunks: reading it again from its
/// start on every chunk costs time quadratic in its size.
#[derive(Default)]
struct Splitter {
    buf: Vec<u8>,
    /// Bytes of `buf` scanned so far.
    scanned: usize,
    /// Where the text being scanned starts, once its first byte is seen.
    start: Option<usize>,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Splitter {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held for a text not complete yet.
    fn pending(&self) -> usize {
        self.buf.len() - self.start.unwrap_or(self.buf.len())
    }

    /// The next complete text; `None` until one is. At the body's end
    /// (`ended`) an unfinished text is an error.
    fn next_text(&mut self, ended: bool) -> Result<Option<String>, SseError> {
        while self.scanned < self.buf.len() {
            let at = self.scanned;
            let byte = self.buf[at];
            self.scanned += 1;
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b' ' | b'\t' | b'\r' | b'\n' => continue,
                b'{' | b'[' => {
                    self.start.get_or_insert(at);
                    self.depth += 1;
                }
                b'}' | b']' if self.depth > 0 => self.depth -= 1,
                b'"' if self.depth > 0 => self.in_string = true,
                _ if self.depth > 0 => {}
                _ => return Err(SseError::Body("a reply that is not JSON-RPC".into())),
            }
            if self.depth == 0 {
                let start = self.start.take().expect("a text was started");
                let text = serde_json::from_slice::<&RawValue>(&self.buf[start..self.scanned])
                    .map(|raw| raw.get().to_owned())
                    .map_err(|err| {
                        SseError::Body(format!("a reply that is not JSON: {err}").into())
                    })?;
                self.buf.drain(..self.scanned);
                self.scanned = 0;
                return Ok(Some(text));
            }
        }
        if ended && self.start.is_some() {
            return Err(SseError::Body(
                "a reply that ends inside a JSON text".into(),
            ));
        }
        if self.start.is_none() {
            // Only whitespace so far: nothing to keep.
            self.buf.clear();
            self.scanned = 0;
        }
        Ok(None)
    }
}

#[cfg(test)]
#[path = "../../lro-core/tests/support/json.rs"]
mod json;

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{json::Json, *};

    fn texts(chunks: &[&str]) -> Result<Vec<String>, String> {
        let mut split = Splitter::default();
        let mut out = Vec::new();
        for chunk in chunks {
            split.push(chunk.as_bytes());
            while let Some(text) = split.next_text(false).map_err(|e| e.to_string())? {
                out.push(text);
            }
        }
        while let Some(text) = split.next_text(true).map_err(|e| e.to_string())? {
            out.push(text);
        }
        Ok(out)
    }

    #[test]
    fn one_text_or_several_in_any_chunks() {
        let one = r#"{"jsonrpc":"2.0","id":1,"result":{"a":"}{\"]"}}"#;
        assert_eq!(texts(&[one]).unwrap(), [one]);
        // Split at every byte: the same text.
        let bytes: Vec<String> = one.chars().map(String::from).collect();
        let chunks: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(texts(&chunks).unwrap(), [one]);

        let progress =
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#;
        let lines = format!("{progress}\n{one}\n");
        assert_eq!(texts(&[&lines]).unwrap(), [progress, one]);
        // Pretty-printed, and back to back with no newline.
        let pretty = "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 2,\n  \"result\": {}\n}";
        assert_eq!(
            texts(&[pretty, one, "\n\n"]).unwrap(),
            [pretty.to_owned(), one.to_owned()]
        );
    }

    #[test]
    fn a_text_is_released_before_the_next_arrives() {
        let mut split = Splitter::default();
        split.push(b"{\"a\":1}\n{\"b\":");
        assert_eq!(
            split.next_text(false).unwrap().as_deref(),
            Some("{\"a\":1}")
        );
        assert_eq!(split.next_text(false).unwrap(), None);
        assert_eq!(split.pending(), 5);
        split.push(b"2}");
        assert_eq!(
            split.next_text(false).unwrap().as_deref(),
            Some("{\"b\":2}")
        );
        assert_eq!(split.pending(), 0);
    }

    #[test]
    fn a_listens_notifications_carry_its_id_as_it_was_written() {
        let note = |id: &str| {
            Sse::default().data(format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{{"_meta":{{"{SUBSCRIPTION_ID}":{id}}}}}}}"#
            ))
        };
        let id = serde_json::json!(77);
        let fixed = of_listen(note("\"77\""), &id);
        let value: Value = serde_json::from_str(fixed.data.as_deref().unwrap()).unwrap();
        assert_eq!(value["params"]["_meta"][SUBSCRIPTION_ID], id);
        // Already right, or no id at all: the event as it came.
        assert_eq!(of_listen(note("77"), &id), note("77"));
        let plain = Sse::default().data(r#"{"jsonrpc":"2.0","method":"x"}"#);
        assert_eq!(of_listen(plain.clone(), &id), plain);
    }

    #[test]
    fn what_is_not_json_rpc_fails() {
        assert!(texts(&["hello"]).is_err());
        assert!(texts(&["{\"a\":1"]).is_err(), "cut inside a text");
        let mut split = Splitter::default();
        split.push(b"{\"a\":\"\xff\"}");
        assert!(split.next_text(false).is_err(), "not UTF-8");
        assert_eq!(texts(&["  \n"]).unwrap(), Vec::<String>::new());
    }

    /// The texts split from `body` cut into chunks at `cuts`, and whether
    /// the split failed after them.
    fn split(body: &[u8], cuts: &[prop::sample::Index]) -> (Vec<String>, bool) {
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
        at.push(body.len());
        at.sort_unstable();
        let mut split = Splitter::default();
        let mut out = Vec::new();
        let mut from = 0;
        for to in at {
            split.push(&body[from..to]);
            from = to;
            loop {
                match split.next_text(false) {
                    Ok(Some(text)) => out.push(text),
                    Ok(None) => break,
                    Err(_) => return (out, true),
                }
            }
        }
        loop {
            match split.next_text(true) {
                Ok(Some(text)) => out.push(text),
                Ok(None) => return (out, false),
                Err(_) => return (out, true),
            }
        }
    }

    /// The texts serde_json's stream reader reads from `body`, up to the
    /// first it fails on or that is no object or array.
    fn serde_texts(body: &[u8]) -> (Vec<String>, bool) {
        let mut out = Vec::new();
        for value in serde_json::Deserializer::from_slice(body).into_iter::<&RawValue>() {
            match value {
                Ok(raw) if raw.get().starts_with(['{', '[']) => out.push(raw.get().to_owned()),
                _ => return (out, true),
            }
        }
        (out, false)
    }

    /// Replies of several messages (objects, batches) with any whitespace
    /// between, now and then broken.
    fn body() -> impl Strategy<Value = Vec<u8>> {
        let text = prop_oneof![4 => json::object(), 1 => json::array()];
        let sep = prop::sample::select(vec!["", "\n", "\r\n", " \t"]);
        (
            prop::collection::vec((text, any::<u64>(), sep), 0..4),
            prop::option::weighted(0.3, json::breaks()),
        )
            .prop_map(|(texts, breaks)| {
                let body: String = texts
                    .iter()
                    .map(|(t, ws, sep): &(Json, u64, &str)| format!("{}{sep}", t.render(*ws)))
                    .collect();
                match breaks {
                    Some(b) => json::broken(body.as_bytes(), &b),
                    None => body.into_bytes(),
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 48,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn a_body_in_any_chunks_splits_as_serde_json_reads_it(
            body in body(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            prop_assert_eq!(split(&body, &cuts), serde_texts(&body));
        }
    }
}
