//! Queries that never end are stopped within the timeout, their worker
//! thread ends (no core left burning), and other calls keep working.

mod support;

use std::{
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use lro_core::descriptor::Detail;
use lro_extract::{ExtractConfig, ExtractError, ExtractRequest, Extractor};
use support::*;

fn setup(timeout: Duration) -> (tempfile::TempDir, String, Extractor) {
    let dir = tempfile::tempdir().unwrap();
    let file = offload_memories(dir.path(), "list", 50, 5, Detail::Light);
    let ex = Extractor::new(ExtractConfig::new(dir.path()).timeout(timeout));
    (dir, file.path.to_string_lossy().into_owned(), ex)
}

fn query(path: &str, q: &str, slurp: bool) -> ExtractRequest {
    let req = ExtractRequest::new(path).query(q);
    if slurp { req.slurp(true) } else { req }
}

#[test]
fn runaway_queries_stop_within_the_timeout_and_their_workers_end() {
    let timeout = Duration::from_millis(300);
    let (_dir, path, ex) = setup(timeout);
    for (q, slurp) in [
        ("last(range(infinite))", false),
        ("[limit(100000000; repeat(1))]", false),
        ("[range(1e9)] | length", true),
        ("reduce range(1e12) as $i (0; . + $i)", false),
        ("0 | def f: ., (. + 1 | f); [f] | length", false),
        ("0 | [recurse(. + 1; true)] | length", false),
        ("last(repeat(.))", false),
        ("[range(1e9)] | sort", true),
        // A value nested as deep as the time allows must drop without
        // overflowing the worker's stack (which would abort the process).
        ("reduce range(1e9) as $i (null; [.]) | length", false),
    ] {
        let started = Instant::now();
        let result = ex.run(&query(&path, q, slurp));
        let elapsed = started.elapsed();
        assert!(
            matches!(result, Err(ExtractError::Timeout { limit }) if limit == timeout),
            "{q}: {result:?}"
        );
        assert!(elapsed < Duration::from_secs(3), "{q} took {elapsed:?}");
        assert!(elapsed >= timeout, "{q} returned early: {elapsed:?}");
        assert_eq!(ex.active_workers(), 0, "{q}: the worker is still running");
    }
}

#[test]
fn infinite_output_is_cut_by_the_output_limits() {
    let (dir, path, _) = setup(Duration::from_secs(5));
    // Bytes enough for 1000 light memories (about 300 bytes each), so the
    // values limit is the one that cuts.
    let ex = Extractor::new(
        ExtractConfig::new(dir.path())
            .max_output_values(1000)
            .max_output_bytes(1 << 20),
    );
    for q in ["repeat(.)", "range(infinite)", ".id, repeat(1)"] {
        let started = Instant::now();
        let out = ex.run(&query(&path, q, false)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(3), "{q}");
        assert!(out.truncated, "{q}");
        assert_eq!(out.count, 1000, "{q}");
        assert!(
            out.notice.as_deref().unwrap().contains("max_output_values"),
            "{q}"
        );
        assert_eq!(ex.active_workers(), 0);
    }
    let ex = Extractor::new(ExtractConfig::new(dir.path()).max_output_bytes(10_000));
    let out = ex.run(&query(&path, "repeat(.)", false)).unwrap();
    assert!(out.truncated);
    assert!(out.text.len() < 10_400, "{}", out.text.len());
}

#[test]
fn a_runaway_does_not_block_other_calls() {
    // Long enough that the other calls surely finish first, even on a
    // loaded machine.
    let (_dir, path, ex) = setup(Duration::from_secs(4));
    let (done_tx, done_rx) = mpsc::channel();
    let runaway = {
        let (ex, path) = (ex.clone(), path.clone());
        thread::spawn(move || {
            let r = ex.run(&query(&path, "last(range(infinite))", false));
            done_tx.send(()).unwrap();
            r
        })
    };
    // Wait until the runaway's worker exists (a condition, not a sleep).
    let deadline = Instant::now() + Duration::from_secs(5);
    while ex.active_workers() == 0 {
        assert!(Instant::now() < deadline, "the runaway never started");
        thread::yield_now();
    }
    let started = Instant::now();
    let req = ExtractRequest::new(&path).count(true);
    let out = ex.run(&req).unwrap();
    assert_eq!(out.values[0]["count"], 50);
    let out = ex.run(&query(&path, ".id", false)).unwrap();
    assert_eq!(out.count, 50);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        done_rx.try_recv().is_err(),
        "the runaway must still be running while the other calls finish"
    );
    let r = runaway.join().unwrap();
    assert!(matches!(r, Err(ExtractError::Timeout { .. })), "{r:?}");
    assert_eq!(ex.active_workers(), 0);
}
