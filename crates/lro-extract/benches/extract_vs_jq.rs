//! Native extraction vs `tail -n +2 FILE | jq …` on a 100k-record
//! full-detail memory file, for every recipe: wall time and peak RSS.
//!
//! Run: `cargo bench -p lro-extract --bench extract_vs_jq`
//! (`LRO_BENCH_RECORDS=20000` for a quicker run, `LRO_BENCH_RUNS=3` for
//! more repetitions; the fastest run counts; `LRO_BENCH_DIR=/some/dir` to
//! keep the generated file).
//!
//! Both sides are measured the same way: each run is a child process under
//! `/usr/bin/time -f %M` (GNU time: peak RSS in KiB of the child and its
//! waited-for descendants), timed by wall clock from spawn to exit. The
//! native side is this binary re-executed with `LRO_BENCH_CHILD` set, so it
//! pays its own process start-up like jq does. Output goes to a discarding
//! sink on both sides (`> /dev/null` for jq); its size is reported to show
//! both produced the same amount.

#[path = "../tests/support/mod.rs"]
mod support;

use std::{
    io::{self, Write},
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use lro_core::descriptor::Detail;
use lro_extract::{ExtractConfig, ExtractRequest, Extractor};

const CHILD_ENV: &str = "LRO_BENCH_CHILD";

/// Counts bytes and drops them.
struct Discard(Arc<AtomicU64>);

impl Write for Discard {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Child mode: run recipe `n` on `file` natively, print output bytes.
fn child(file: &str, n: u8) {
    let path = Path::new(file);
    let ex = Extractor::new(
        ExtractConfig::new(path.parent().unwrap())
            .timeout(Duration::from_secs(3600))
            .max_output_bytes(usize::MAX)
            .max_output_values(usize::MAX),
    );
    let req = ExtractRequest::new(file).recipe(n);
    let bytes = Arc::new(AtomicU64::new(0));
    let out = ex
        .run_to_writer(&req, Box::new(Discard(bytes.clone())))
        .expect("native extraction");
    assert!(!out.truncated);
    println!("{}", bytes.load(Ordering::Relaxed));
}

struct Measure {
    secs: f64,
    rss_kib: u64,
    out_bytes: u64,
}

fn have_gnu_time() -> bool {
    Command::new("/usr/bin/time")
        .args(["-f", "%M", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `cmd` under `/usr/bin/time -f %M`; returns wall time, peak RSS and
/// what the command printed on stdout (a byte count).
fn measure(mut cmd: Command) -> Measure {
    let started = Instant::now();
    let out = cmd.output().expect("spawn");
    let secs = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "benchmark command failed: {stderr}");
    let rss_kib = stderr
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    let out_bytes = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    Measure {
        secs,
        rss_kib,
        out_bytes,
    }
}

fn native_cmd(file: &Path, n: u8) -> Command {
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%M"])
        .arg(std::env::current_exe().unwrap())
        .env(CHILD_ENV, format!("{n}"))
        .arg(file);
    cmd
}

fn jq_cmd(file: &Path, args: &[String]) -> Command {
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%M", "bash", "-c"])
        .arg("tail -n +2 \"$1\" | jq \"${@:2}\" | wc -c")
        .arg("_")
        .arg(file)
        .args(args);
    cmd
}

fn best(runs: usize, mk: impl Fn() -> Command) -> Measure {
    let mut all: Vec<Measure> = (0..runs).map(|_| measure(mk())).collect();
    all.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    let rss = all.iter().map(|m| m.rss_kib).max().unwrap_or(0);
    let mut m = all.swap_remove(0);
    m.rss_kib = rss;
    m
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Ok(n) = std::env::var(CHILD_ENV) {
        let file = args
            .iter()
            .skip(1)
            .find(|a| !a.starts_with('-'))
            .expect("file");
        child(file, n.parse().expect("recipe number"));
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    assert!(have_gnu_time(), "GNU time is needed: apt-get install time");
    let n_records: usize = std::env::var("LRO_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let runs: usize = std::env::var("LRO_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);

    // `LRO_BENCH_DIR` keeps the generated file (for profiling a child).
    let dir = tempfile::tempdir().unwrap();
    let dir_path = std::env::var_os("LRO_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().to_owned());
    let started = Instant::now();
    let records: Vec<serde_json::Value> = support::corpus(n_records, 42)
        .iter()
        .map(|m| support::at_detail(m, Detail::Full))
        .collect();
    let file = support::offload(&dir_path, "recall", &records, Detail::Full);
    drop(records);
    let size = std::fs::metadata(&file.path).unwrap().len();
    let jq_version = Command::new("jq")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!(
        "file: {n_records} full-detail records, {:.1} MB (generated in {:.1}s); {jq_version}; best of {runs} run(s)\n",
        size as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    println!(
        "| recipe | jq flags | native s | jq s | speed-up | native peak RSS MB | jq peak RSS MB | RSS native/jq | output MB native / jq |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let path: PathBuf = file.path.clone();
    for n in 1..=10u8 {
        let recipe = file.recipes.get(n).unwrap();
        let jq_args = recipe.jq_args(&Default::default());
        let native = best(runs, || native_cmd(&path, n));
        let jq = best(runs, || jq_cmd(&path, &jq_args));
        let flags = jq_args[..jq_args.len() - 1]
            .iter()
            .filter(|a| a.starts_with('-') && *a != "--arg")
            .cloned()
            .collect::<Vec<_>>()
            .join(" ");
        println!(
            "| {n} {} | `{flags}` | {:.3} | {:.3} | {:.1}× | {:.1} | {:.1} | {:.2} | {:.1} / {:.1} |",
            recipe.description,
            native.secs,
            jq.secs,
            jq.secs / native.secs,
            native.rss_kib as f64 / 1024.0,
            jq.rss_kib as f64 / 1024.0,
            native.rss_kib as f64 / jq.rss_kib.max(1) as f64,
            native.out_bytes as f64 / 1e6,
            jq.out_bytes as f64 / 1e6,
        );
    }
}
