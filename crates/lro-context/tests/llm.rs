//! The LLM summariser against a local OpenAI-compatible server started by
//! the test: a good reply is used; an error status, a timeout, a reply that
//! is not JSON or has no summary each fall back to the extractive summary,
//! and the answer says which ran. The call never fails because of the LLM.

mod support;

use std::{
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::TcpListener,
    sync::mpsc,
    thread,
    time::Duration,
};

use lro_context::{ContextOffloader, Mode, OpenAiSummariser, Params};

/// How the fake endpoint answers.
#[derive(Clone, Copy)]
enum Reply {
    Summary,
    Status500,
    NotJson,
    NoChoices,
    Never,
}

/// Serves one request as `reply` says; sends the request (head and body)
/// back through the channel. Returns the base URL.
fn endpoint(reply: Reply) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length: ")
                    .map(|v| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        tx.send(format!("{head}{}", String::from_utf8_lossy(&body)))
            .unwrap();
        let (status, text) = match reply {
            Reply::Summary => (
                "200 OK",
                r#"{"choices":[{"message":{"role":"assistant","content":"<overall_goal>from the llm</overall_goal>"}}]}"#,
            ),
            Reply::Status500 => ("500 Internal Server Error", r#"{"error":"overloaded"}"#),
            Reply::NotJson => ("200 OK", "<html>proxy page</html>"),
            Reply::NoChoices => ("200 OK", r#"{"choices":[]}"#),
            // Holds the connection open past the client's timeout.
            Reply::Never => {
                let _ = tx.send(String::new());
                let mut sink = [0u8; 1];
                let _ = reader.read(&mut sink);
                return;
            }
        };
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        );
    });
    (base, rx)
}

fn compress_with(reply: Reply) -> (lro_context::Offloaded, String) {
    let dir = tempfile::tempdir().unwrap();
    let (base, requests) = endpoint(reply);
    let llm = OpenAiSummariser::new(base, "test-model", Duration::from_millis(500)).api_key("k3y");
    let params = Params::new(dir.path())
        .mode(Mode::Compress)
        .max_total_tokens(100);
    let out = ContextOffloader::new()
        .summariser(llm)
        .offload(
            &lro_core::principal::Principal::anonymous(),
            support::research_session(),
            &params,
        )
        .unwrap();
    let request = requests.recv_timeout(Duration::from_secs(10)).unwrap();
    (out, request)
}

#[test]
fn a_good_reply_is_the_snapshot() {
    let (out, request) = compress_with(Reply::Summary);
    assert!(
        request.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{request:.200}"
    );
    assert!(
        request
            .to_ascii_lowercase()
            .contains("authorization: bearer k3y")
    );
    assert!(
        request.contains("\"model\":\"test-model\"") && request.contains("<open_items>"),
        "{request:.600}"
    );
    assert_eq!(out.stats.summariser, Some("llm"));
    assert!(
        out.messages[0]
            .text()
            .contains("<overall_goal>from the llm</overall_goal>")
    );
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert!(out.answer().contains("(llm summary)"), "{}", out.answer());
}

#[test]
fn every_failure_falls_back_to_the_extractive_summary() {
    for (reply, why) in [
        (Reply::Status500, "answered 500"),
        (Reply::NotJson, "not JSON"),
        (Reply::NoChoices, "no choices[0].message.content"),
        (Reply::Never, "timed out"),
    ] {
        let (out, _) = compress_with(reply);
        assert_eq!(out.stats.summariser, Some("extractive"), "{why}");
        assert!(
            out.messages[0]
                .text()
                .contains("<overall_goal>Survey how agents manage"),
            "{why}"
        );
        assert!(
            out.warnings.iter().any(|w| w.contains(why)),
            "{why}: {:?}",
            out.warnings
        );
        assert!(
            out.answer().contains("(extractive summary)"),
            "{why}: {}",
            out.answer()
        );
    }
}
