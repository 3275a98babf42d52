//! Writes seed inputs for the fuzz targets from the property tests'
//! generators (`crates/lro-core/tests/support/json.rs`) into
//! `corpus/<target>/`: `cargo run --example seed [N]`, N per target.

#[path = "../../crates/lro-core/tests/support/json.rs"]
mod json;

use std::{fs, path::Path};

use proptest::{
    strategy::{Strategy, ValueTree},
    test_runner::TestRunner,
};

fn main() -> std::io::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(64, |n| n.parse().expect("a count"));
    let mut runner = TestRunner::deterministic();
    let mut sample = |strategy: &dyn Fn(&mut TestRunner) -> Vec<u8>| -> Vec<Vec<u8>> {
        (0..n).map(|_| strategy(&mut runner)).collect()
    };
    let value = |s: json::Json, r: &mut TestRunner| {
        let ws = (0..u64::MAX).new_tree(r).unwrap().current();
        s.render(ws).into_bytes()
    };
    let objects = sample(&|r| {
        let o = json::object().new_tree(r).unwrap().current();
        value(o, r)
    });
    let arrays = sample(&|r| {
        let a = json::array().new_tree(r).unwrap().current();
        value(a, r)
    });
    let texts = sample(&|r| json::text().new_tree(r).unwrap().current().into_bytes());
    let broken = sample(&|r| {
        let o = json::object().new_tree(r).unwrap().current();
        let b = json::breaks().new_tree(r).unwrap().current();
        json::broken(&value(o, r), &b)
    });
    let messages: Vec<Vec<u8>> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let rest = String::from_utf8_lossy(&o[1..]);
            let sep = if rest.trim_start().starts_with('}') {
                ""
            } else {
                ","
            };
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\"{sep}{rest}")
                .into_bytes()
        })
        .collect();
    let lines: Vec<Vec<u8>> = objects
        .chunks(4)
        .map(|c| {
            c.iter()
                .map(|o| String::from_utf8_lossy(o).replace(['\n', '\r'], " "))
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        })
        .collect();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (target, sets) in [
        ("scan", vec![&objects, &arrays, &broken]),
        ("records", vec![&arrays, &texts, &lines, &broken]),
        ("head", vec![&messages, &broken]),
        ("extract", vec![&arrays, &lines, &texts]),
    ] {
        let dir = corpus.join(target);
        fs::create_dir_all(&dir)?;
        for (i, input) in sets.into_iter().flatten().enumerate() {
            fs::write(dir.join(format!("seed-{i}")), input)?;
        }
    }
    Ok(())
}
