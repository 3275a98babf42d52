//! Compaction of a 500-message history of about 2 M tokens, files
//! included, against raw writes of the same bytes, measured side by side in
//! one run; and the share of token counting.
//!
//! Run with `cargo bench -p lro-context --bench compact`.

use std::{
    fs,
    hint::black_box,
    time::{Duration, Instant},
};

use lro_context::{
    CharsPerToken, ContextOffloader, Message, Mode, Params, TokenCounter, parse_messages,
};
use serde_json::{Value, json};

/// Messages in the history; every other one a tool result.
const MESSAGES: usize = 500;
/// Characters of one tool result: 250 of them make about 2 M tokens.
const RESULT_CHARS: usize = 32_000;
const ROUNDS: usize = 7;

fn history() -> Vec<Message> {
    let mut msgs = Vec::with_capacity(MESSAGES);
    for i in 0..MESSAGES / 2 {
        let id = format!("call_{i}");
        msgs.push(
            json!({"role": "assistant", "content": format!("step {i}"), "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}]}),
        );
        let body: String = format!("result {i} ")
            .chars()
            .cycle()
            .take(RESULT_CHARS)
            .collect();
        msgs.push(json!({"role": "tool", "tool_call_id": id, "content": body}));
    }
    parse_messages(Value::Array(msgs)).unwrap()
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let history = history();
    let tokens: u64 = history.iter().map(|m| CharsPerToken.count(&m.text())).sum();
    let bytes: usize = history
        .iter()
        .filter(|m| m.role() == "tool")
        .map(|m| m.text().len())
        .sum();
    let (mut compact, mut raw, mut count) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        // Compaction into a fresh directory (every file new).
        let dir = tempfile::tempdir().unwrap();
        let params = Params::new(dir.path())
            .mode(Mode::Compact)
            .keep_recent_count(0);
        let started = Instant::now();
        let out = ContextOffloader::new()
            .offload(
                &lro_core::principal::Principal::anonymous(),
                history.clone(),
                &params,
            )
            .unwrap();
        compact.push(started.elapsed());
        assert_eq!(out.stats.compacted, MESSAGES / 2);

        // Raw writes of the same bytes, one file each.
        let raw_dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        for (i, m) in history.iter().filter(|m| m.role() == "tool").enumerate() {
            fs::write(raw_dir.path().join(format!("{i}.txt")), m.text()).unwrap();
        }
        raw.push(started.elapsed());

        // Token counting alone, over the whole history.
        let started = Instant::now();
        let n: u64 = history
            .iter()
            .map(|m| CharsPerToken.count(black_box(&m.text())))
            .sum();
        count.push(started.elapsed());
        black_box(n);
    }
    let (c, r, t) = (median(compact), median(raw), median(count));
    println!(
        "context compaction, {MESSAGES} messages, {tokens} tokens, {} MB of tool results (median of {ROUNDS})\n",
        bytes >> 20
    );
    println!("| measurement | time | ratio |");
    println!("|---|---|---|");
    println!(
        "| compaction, files included | {:.1} ms | {:.2}× raw writes |",
        c.as_secs_f64() * 1e3,
        c.as_secs_f64() / r.as_secs_f64()
    );
    println!(
        "| raw writes of the same bytes | {:.1} ms | 1.00× |",
        r.as_secs_f64() * 1e3
    );
    println!(
        "| token counting (characters / 4) | {:.1} ms | {:.0}% of compaction |",
        t.as_secs_f64() * 1e3,
        100.0 * t.as_secs_f64() / c.as_secs_f64()
    );
}
