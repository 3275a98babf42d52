//! `deploy/metrics.json` is the metric catalogue as the code defines it.
//!
//! The deploy tests and the dashboard generator read that file instead of
//! parsing Rust or retyping names. This test fails when the file is stale;
//! run it with `UPDATE_CATALOGUE=1` to rewrite the file.

use std::path::PathBuf;

fn catalogue_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/metrics.json")
}

#[test]
fn deploy_metrics_json_matches_the_code() {
    let expected = lro_core::metric::catalogue_text();
    let path = catalogue_path();
    if std::env::var_os("UPDATE_CATALOGUE").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "{} is stale: run `UPDATE_CATALOGUE=1 cargo test -p lro-core --test catalogue`",
        path.display()
    );
}
