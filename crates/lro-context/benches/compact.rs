//! Compaction of a 500-message history of about 2 M tokens, files
//! included, against raw writes of the same files with the same lifecycle,
//! interleaved round by round, on tmpfs unless `LRO_BENCH_DIR` names
//! another directory (a disk, say); and the share of token counting.
//!
//! Run with `cargo bench -p lro-context --bench compact`
//! (`LRO_BENCH_ITERS` sets the rounds, 31).

#[path = "../../lro-tower/benches/support/filesystem.rs"]
mod filesystem;

use std::{
    fs,
    hint::black_box,
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use lro_context::{
    CharsPerToken, ContextOffloader, Message, Mode, Offloaded, Params, TokenCounter, parse_messages,
};
use lro_core::principal::Principal;
use serde_json::{Value, json};

/// Messages in the history; every other one a tool result.
const MESSAGES: usize = 500;
/// Characters of one tool result: 250 of them make about 2 M tokens.
const RESULT_CHARS: usize = 32_000;

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

/// Compaction of `history` into `dir`, which exists and is empty: every
/// file is new.
fn compact(history: Vec<Message>, dir: &Path) -> Offloaded {
    let params = Params::new(dir).mode(Mode::Compact).keep_recent_count(0);
    let out = ContextOffloader::new()
        .offload(&Principal::anonymous(), history, &params)
        .unwrap();
    assert_eq!(out.stats.compacted, MESSAGES / 2);
    out
}

/// What the store does to write one file, and nothing else: a temp file
/// named as it names one, created (mode 0600, create and truncate), one
/// `write_all` of the bytes, closed, and renamed to the file's name.
fn raw_write(dir: &Path, files: &[(String, String)]) {
    let pid = std::process::id();
    for (name, content) in files {
        let tmp = dir.join(format!(".{name}.{pid}.tmp"));
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .unwrap();
        f.write_all(black_box(content.as_bytes())).unwrap();
        drop(f);
        fs::rename(&tmp, dir.join(name)).unwrap();
    }
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let base = std::env::var_os("LRO_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/dev/shm".into());
    let rounds: usize = std::env::var("LRO_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(31);
    let history = history();
    let tokens: u64 = history.iter().map(|m| CharsPerToken.count(&m.text())).sum();
    // The baseline writes exactly the files a compaction writes: their
    // names and bytes, taken from one.
    let scratch = tempfile::tempdir_in(&base).unwrap();
    let fs_type = filesystem::filesystem(scratch.path());
    let files: Vec<(String, String)> = compact(history.clone(), scratch.path())
        .files
        .into_iter()
        .map(|f| {
            let name = f.path.file_name().unwrap().to_str().unwrap().to_owned();
            (name, f.content)
        })
        .collect();
    drop(scratch);
    let bytes: usize = files.iter().map(|(_, c)| c.len()).sum();
    let (mut compaction, mut raw, mut count) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        // Each into a fresh, empty directory made before the clock starts
        // and removed after it stops.
        // The history is the caller's to hand over: copied off the clock.
        let input = history.clone();
        let dir = tempfile::tempdir_in(&base).unwrap();
        let started = Instant::now();
        let out = compact(input, dir.path());
        compaction.push(started.elapsed());
        drop((black_box(out), dir));

        let dir = tempfile::tempdir_in(&base).unwrap();
        let started = Instant::now();
        raw_write(dir.path(), &files);
        raw.push(started.elapsed());
        drop(dir);

        // Token counting alone, over the whole history.
        let started = Instant::now();
        let n: u64 = history
            .iter()
            .map(|m| CharsPerToken.count(black_box(&m.text())))
            .sum();
        count.push(started.elapsed());
        black_box(n);
    }
    let (c, r, t) = (median(compaction), median(raw), median(count));
    println!(
        "context compaction: {MESSAGES} messages, {tokens} tokens, {} files, {bytes} bytes of \
         tool results; {rounds} rounds on {fs_type}",
        files.len()
    );
    println!(
        "compaction, files included, median: {:.2} ms",
        c.as_secs_f64() * 1e3
    );
    println!("raw write, median: {:.2} ms", r.as_secs_f64() * 1e3);
    println!(
        "token counting (characters / 4), median: {:.2} ms, {:.0}% of compaction",
        t.as_secs_f64() * 1e3,
        100.0 * t.as_secs_f64() / c.as_secs_f64()
    );
    println!(
        "ratio: compaction / raw write (same lifecycle, {fs_type}): {:.2}x",
        c.as_secs_f64() / r.as_secs_f64()
    );
}
