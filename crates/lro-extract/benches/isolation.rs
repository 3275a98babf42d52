//! What the worker pool costs per call: every recipe and a query on the
//! memory-server's default corpus (500 memories) listed at full detail, through `Extractor::run` with the default
//! output limits. "before" is what `lro_extract` ran before the pool:
//! in-process, values kept; "in-process" keeps the text only, as the layer
//! now asks; "pool" is that through a `WorkerPool` whose workers are this
//! binary (what `lro_extract` runs now).
//!
//! Run: `cargo bench -p lro-extract --bench isolation`
//! (`LRO_BENCH_CALLS=200` calls per case, median counts; the two sides
//! alternate call by call, so drift on a shared machine hits both).

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use lro_core::descriptor::Detail;
use lro_corpus::{DEFAULT_SEED, DEFAULT_SIZE};
use lro_extract::{ExtractConfig, ExtractRequest, Extractor, WorkerPool};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // This binary is also the pool's worker program.
    lro_extract::worker::run_if_worker();
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let calls: usize = std::env::var("LRO_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let file = support::offload_memories(
        dir.path(),
        "list_memories",
        DEFAULT_SIZE,
        DEFAULT_SEED,
        Detail::Full,
    );
    let path = file.path.to_string_lossy().into_owned();
    let cfg = ExtractConfig::new(dir.path());
    let before = Extractor::new(cfg.clone());
    let local = Extractor::new(cfg.clone().keep_values(false));
    let pooled = Extractor::new(cfg.keep_values(false)).isolation(WorkerPool::new());

    let mut cases: Vec<(String, ExtractRequest)> = (1..=10u8)
        .map(|n| (format!("recipe {n}"), ExtractRequest::new(&path).recipe(n)))
        .collect();
    cases.push((
        "query select(.memory_type == \"semantic\") | {id, title}".into(),
        ExtractRequest::new(&path).query("select(.memory_type == \"semantic\") | {id, title}"),
    ));
    println!(
        "the memory-server's default corpus, {DEFAULT_SIZE} memories at full detail; median of {calls} calls each, alternating\n"
    );
    println!(
        "| case | output KB | before ms | in-process ms | pool ms | pool / before | pool / in-process |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut sums = [Duration::ZERO; 3];
    let sides = [&before, &local, &pooled];
    for (name, req) in &cases {
        // Warm-up: starts the worker, pages the file in.
        let out = before.run(req).unwrap();
        assert_eq!(pooled.run(req).unwrap().text, out.text, "{name}");
        let mut times: [Vec<Duration>; 3] = Default::default();
        for _ in 0..calls {
            for (side, t) in sides.iter().zip(times.iter_mut()) {
                let started = Instant::now();
                side.run(req).unwrap();
                t.push(started.elapsed());
            }
        }
        let m = times.map(median);
        for (s, m) in sums.iter_mut().zip(m) {
            *s += m;
        }
        row(name, out.text.len() as f64 / 1024.0, m);
    }
    row("all cases (sum of medians)", f64::NAN, sums);
}

fn row(name: &str, kb: f64, [before, local, pool]: [Duration; 3]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "| {name} | {kb:.1} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
        ms(before),
        ms(local),
        ms(pool),
        ms(pool) / ms(before),
        ms(pool) / ms(local)
    );
}
