//! The exact tokenizer near the threshold, end to end through a real rmcp
//! client: Chinese, Japanese, mixed-script and code-heavy results whose
//! inline-or-offload decision the character estimate gets wrong.
#![cfg(feature = "bpe")]

mod support;

use std::sync::{Arc, Mutex};

use lro_core::{
    Banded, Estimator, ScriptAware, TokenEstimator,
    event::{LroEvent, MemorySink, ToolOutcome},
    tokens::Bpe,
};
use lro_tower::LroLayer;
use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
};
use serde::Deserialize;
use serde_json::json;
use support::{Client, call, check_file, config, connect, first_json};

const CHINESE: &str = "数据库连接超时错误，请检查网络配置。";
const JAPANESE: &str = "東京の天気は晴れです。明日は雨が降るでしょう。";
const MIXED: &str = "错误 E1042: 无法连接到 redis://10.0.3.7:6379，重试 3 次后放弃。";
const CODE: &str = "if (x[i] != y[j]) { z += (a[i] - b[j]) * 0.5; } // ok";

/// Every test uses this threshold; the band is the default ±50% (200..=600).
const THRESHOLD: usize = 400;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct LinesArgs {
    /// The line.
    line: String,
    /// How many times.
    n: usize,
}

/// One tool: `n` copies of a line, one per line.
#[derive(Debug, Clone)]
struct TextServer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl TextServer {
    #[tool(description = "Return n copies of a line")]
    fn lines(&self, Parameters(LinesArgs { line, n }): Parameters<LinesArgs>) -> String {
        lines(&line, n)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TextServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn lines(line: &str, n: usize) -> String {
    vec![line; n].join("\n")
}

async fn serve(layer: LroLayer) -> Client {
    connect(layer.wrap(TextServer {
        tool_router: TextServer::tool_router(),
    }))
    .await
}

/// What a layer with `estimator` did with `n` lines: the decision and the
/// reported count.
async fn decide(estimator: Estimator, line: &str, n: usize) -> (ToolOutcome, usize) {
    decide_in_band(estimator, 0.5, line, n).await
}

async fn decide_in_band(
    estimator: Estimator,
    band: f64,
    line: &str,
    n: usize,
) -> (ToolOutcome, usize) {
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::new();
    let cfg = config(dir.path(), THRESHOLD as u32)
        .estimator(estimator)
        .exact_band(band);
    let client = serve(LroLayer::new(cfg).event_sink(sink.clone())).await;
    let result = call(&client, "lines", json!({"line": line, "n": n})).await;
    let Some(LroEvent::ToolResult(e)) = sink.events().pop() else {
        panic!("no ToolResult event");
    };
    if e.outcome == ToolOutcome::Offloaded {
        // The descriptor and the file header report the same count.
        let d = first_json(&result);
        assert_eq!(d["summary"]["estimated_tokens"], e.estimated_tokens);
        let path = std::path::PathBuf::from(d["file_path"].as_str().unwrap());
        assert_eq!(check_file(&path).len(), n);
        let header: serde_json::Value = serde_json::from_str(
            std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["estimated_tokens"], e.estimated_tokens);
    } else {
        assert_eq!(result.content[0].as_text().unwrap().text, lines(line, n));
    }
    (e.outcome, e.estimated_tokens)
}

/// The character estimate and the exact count of `n` lines, both inside the band.
fn counts(exact: Bpe, line: &str, n: usize) -> (usize, usize) {
    let text = lines(line, n);
    let (chars, exact) = (ScriptAware.estimate(&text), exact.estimate(&text));
    assert!(
        chars.abs_diff(THRESHOLD) <= THRESHOLD / 2,
        "{chars} outside the band"
    );
    (chars, exact)
}

#[tokio::test]
async fn code_under_by_characters_is_offloaded_by_o200k() {
    // Brackets, operators and digits: o200k counts twice what chars / 4 does.
    assert_eq!(counts(Bpe::O200k, CODE, 25), (338, 749));
    assert_eq!(
        decide(Estimator::Chars, CODE, 25).await,
        (ToolOutcome::Inline, 338)
    );
    assert_eq!(
        decide(Estimator::O200k, CODE, 25).await,
        (ToolOutcome::Offloaded, 749)
    );
    // 338 is 15% under the threshold: outside a ±10% band the estimate decides.
    assert_eq!(
        decide_in_band(Estimator::O200k, 0.1, CODE, 25).await,
        (ToolOutcome::Inline, 338)
    );
}

#[tokio::test]
async fn mixed_script_under_by_characters_is_offloaded_by_o200k() {
    // The Latin part (error code, address, port, digits) costs far more
    // than chars / 4 says; o200k's CJK merges do not make up for it.
    assert_eq!(counts(Bpe::O200k, MIXED, 15), (353, 465));
    assert_eq!(
        decide(Estimator::Chars, MIXED, 15).await,
        (ToolOutcome::Inline, 353)
    );
    assert_eq!(
        decide(Estimator::O200k, MIXED, 15).await,
        (ToolOutcome::Offloaded, 465)
    );
}

#[tokio::test]
async fn chinese_over_by_characters_is_inline_by_o200k() {
    // o200k has one token for most common two-character words.
    assert_eq!(counts(Bpe::O200k, CHINESE, 25), (456, 250));
    assert_eq!(
        decide(Estimator::Chars, CHINESE, 25).await,
        (ToolOutcome::Offloaded, 456)
    );
    assert_eq!(
        decide(Estimator::O200k, CHINESE, 25).await,
        (ToolOutcome::Inline, 250)
    );
}

#[tokio::test]
async fn japanese_goes_either_way_with_the_tokenizer() {
    // cl100k splits kanji and kana into bytes more often than one per character.
    assert_eq!(counts(Bpe::Cl100k, JAPANESE, 16), (372, 432));
    assert_eq!(
        decide(Estimator::Chars, JAPANESE, 16).await,
        (ToolOutcome::Inline, 372)
    );
    assert_eq!(
        decide(Estimator::Cl100k, JAPANESE, 16).await,
        (ToolOutcome::Offloaded, 432)
    );
    // o200k merges them: over by characters, under by o200k.
    assert_eq!(counts(Bpe::O200k, JAPANESE, 20), (465, 340));
    assert_eq!(
        decide(Estimator::Chars, JAPANESE, 20).await,
        (ToolOutcome::Offloaded, 465)
    );
    assert_eq!(
        decide(Estimator::O200k, JAPANESE, 20).await,
        (ToolOutcome::Inline, 340)
    );
}

#[tokio::test]
async fn outside_the_band_the_exact_tokenizer_never_sees_the_result() {
    // Lengths of the texts the exact tokenizer was asked to count.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let exact = move |t: &str| {
        log.lock().unwrap().push(t.len());
        Bpe::O200k.estimate(t)
    };
    let dir = tempfile::tempdir().unwrap();
    let layer = LroLayer::new(config(dir.path(), THRESHOLD as u32))
        .estimator(Banded::new(ScriptAware, exact));
    let client = serve(layer).await;
    let take = || std::mem::take(&mut *seen.lock().unwrap());

    // Far under (14 by characters): inline, never counted exactly.
    let small = call(&client, "lines", json!({"line": CODE, "n": 1})).await;
    assert_eq!(small.content[0].as_text().unwrap().text, CODE);
    assert_eq!(take(), Vec::<usize>::new());

    // Far over (~2700 by characters): offloaded; only the descriptor, which
    // the model reads, is counted exactly.
    let big = call(&client, "lines", json!({"line": CODE, "n": 200})).await;
    let descriptor = &big.content[0].as_text().unwrap().text;
    assert_eq!(first_json(&big)["offloaded"], true);
    assert_eq!(take(), vec![descriptor.len()]);

    // Near the threshold: the result itself is counted.
    let near = call(&client, "lines", json!({"line": CODE, "n": 25})).await;
    assert_eq!(first_json(&near)["summary"]["estimated_tokens"], 749);
    assert_eq!(take()[0], lines(CODE, 25).len());
}
