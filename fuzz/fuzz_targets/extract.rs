//! The extraction fast paths against the plain jaq path
//! (`ExtractConfig::fast_paths(false)`): any text, offloaded as the layer
//! offloads it, gives the same output on every query (or fails on both).

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use lro_core::{
    offload::{OffloadInput, Offloader},
    records::RecordSet,
};
use lro_extract::{ExtractConfig, ExtractRequest, Extractor};
use lro_store::DirSink;
use tempfile::TempDir;

static DIR: LazyLock<TempDir> = LazyLock::new(|| tempfile::tempdir().unwrap());

static ENGINES: LazyLock<(Extractor, Extractor)> = LazyLock::new(|| {
    let config = ExtractConfig::new(DIR.path());
    (
        Extractor::new(config.clone()),
        Extractor::new(config.fast_paths(false)),
    )
});

/// The shapes the fast paths take (fields, projections, selections) and
/// the slurping sorts and groups.
const QUERIES: &[(&str, bool)] = &[
    (".id", false),
    (".a", false),
    (".namespace", false),
    (".a.id", false),
    ("{id,a}", false),
    ("{id, m: .score}", false),
    ("[.id, .a]", false),
    (".", false),
    ("select(.id == \"x\")", false),
    ("select(.tags | index(\"a\"))", false),
    ("sort_by(.id)", true),
    ("sort_by(-.score)", true),
    (
        "group_by(.namespace) | map({namespace: .[0].namespace, count: length})",
        true,
    ),
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let set = RecordSet::from_text(text);
    if set.is_empty() {
        return;
    }
    let input = OffloadInput::new("fuzz", "fuzz", &set, text.len() / 4);
    let Ok(out) = Offloader::new(DirSink::new(DIR.path())).offload(input, &|| false) else {
        return;
    };
    let path = out.result.path;
    let file = path.to_string_lossy();
    let (fast, plain) = &*ENGINES;
    for (query, slurp) in QUERIES {
        let req = ExtractRequest::new(file.clone())
            .query(*query)
            .slurp(*slurp);
        match (fast.run(&req), plain.run(&req)) {
            (Ok(a), Ok(b)) => assert_eq!(a.results(), b.results(), "{query}"),
            (Err(_), Err(_)) => {}
            (a, b) => panic!(
                "{query}: fast {:?}, plain {:?}",
                a.map(|o| o.count),
                b.map(|o| o.count)
            ),
        }
    }
    let _ = std::fs::remove_file(&path);
});
