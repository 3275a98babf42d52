//! Native extraction vs `tail -n +2 FILE | jq …` (jq 1.6) and its peer jaq
//! on the memory-server's own corpus (lro-corpus, its default seed), 100k
//! memories listed at full detail, for every recipe: wall time and peak RSS.
//!
//! Run: `cargo bench -p lro-extract --bench extract_vs_jq`
//! (`LRO_BENCH_RECORDS=20000` for a quicker run, `LRO_BENCH_SEED=N` for
//! another corpus (default: the memory-server's seed, 1600), `LRO_BENCH_RUNS=3` for
//! more repetitions; the fastest run counts; `LRO_BENCH_DIR=/some/dir` to
//! keep the generated file). Needs `jq`, GNU `time` and jaq 3.1.2
//! (`cargo install jaq --version 3.1.2 --locked`).
//!
//! Every side is measured the same way: each run is a child process under
//! `/usr/bin/time -f %M` (GNU time: peak RSS in KiB of the child and its
//! waited-for descendants), timed by wall clock from spawn to exit, and the
//! sides of one recipe take turns run by run, so a busy machine slows them
//! alike. The native side is this binary re-executed with `LRO_BENCH_CHILD`
//! set, so it pays its own process start-up like the others. jaq runs twice:
//! behind `tail` as jq does, and on a copy of the records without the
//! header line (made once, outside the timing), its fastest case. Output
//! goes to a discarding sink on every side (`| wc -c`); its size is
//! asserted equal to jq's (jaq's: at most 0.1% more, for numbers it keeps
//! spelled as in the file), so no side skips output.

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
use lro_corpus::DEFAULT_SEED;
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

/// `tail -n +2 FILE | TOOL ARGS | wc -c` under `/usr/bin/time`.
fn piped_cmd(tool: &str, file: &Path, args: &[String]) -> Command {
    timed_bash(
        "set -o pipefail; tail -n +2 \"$2\" | \"$1\" \"${@:3}\" | wc -c",
        tool,
        file,
        args,
    )
}

/// `TOOL ARGS FILE | wc -c` under `/usr/bin/time`.
fn direct_cmd(tool: &str, file: &Path, args: &[String]) -> Command {
    timed_bash(
        "set -o pipefail; \"$1\" \"${@:3}\" \"$2\" | wc -c",
        tool,
        file,
        args,
    )
}

/// `script` run by bash under `/usr/bin/time`, with `$1` the tool, `$2`
/// the file and the rest its arguments.
fn timed_bash(script: &str, tool: &str, file: &Path, args: &[String]) -> Command {
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%M", "bash", "-c"])
        .arg(script)
        .arg("_")
        .arg(tool)
        .arg(file)
        .args(args);
    cmd
}

/// Runs each of `sides` `runs` times, taking turns; the fastest run of
/// each, with the largest peak RSS of its runs.
fn best(runs: usize, sides: &[&dyn Fn() -> Command]) -> Vec<Measure> {
    let mut all: Vec<Vec<Measure>> = sides.iter().map(|_| Vec::new()).collect();
    for _ in 0..runs {
        for (side, mk) in all.iter_mut().zip(sides) {
            side.push(measure(mk()));
        }
    }
    all.into_iter()
        .map(|mut side| {
            side.sort_by(|a, b| a.secs.total_cmp(&b.secs));
            let rss = side.iter().map(|m| m.rss_kib).max().unwrap_or(0);
            let mut m = side.swap_remove(0);
            m.rss_kib = rss;
            m
        })
        .collect()
}

/// `tool --version`, or `None` when it cannot run.
fn version(tool: &str) -> Option<String> {
    Command::new(tool)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
}

/// The jaq binary: on `PATH`, else where `cargo install` puts it.
fn jaq() -> String {
    let installed = std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".cargo/bin/jaq"))
        .filter(|p| p.exists())
        .map(|p| p.to_string_lossy().into_owned());
    ["jaq".to_owned()]
        .into_iter()
        .chain(installed)
        .find(|tool| version(tool).is_some())
        .unwrap_or_else(|| {
            panic!("jaq is needed as a peer: cargo install jaq --version 3.1.2 --locked")
        })
}

/// A copy of the records of `file` without its header line.
fn headerless(file: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read(file).unwrap();
    let start = text
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |i| i + 1);
    let path = dir.join("records-without-header.jsonl");
    std::fs::write(&path, &text[start..]).unwrap();
    path
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn rss_mb(m: &Measure) -> f64 {
    m.rss_kib as f64 / 1024.0
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
    let jq_version = version("jq").expect("jq 1.6 is needed: apt-get install jq");
    let jaq = jaq();
    let jaq_version = version(&jaq).unwrap_or_default();
    let n_records: usize = std::env::var("LRO_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let runs: usize = std::env::var("LRO_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let seed: u64 = std::env::var("LRO_BENCH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SEED);

    // `LRO_BENCH_DIR` keeps the generated file (for profiling a child).
    let dir = tempfile::tempdir().unwrap();
    let dir_path = std::env::var_os("LRO_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().to_owned());
    let started = Instant::now();
    // What `list_memories` with `detail: full` hands the layer for a
    // memory-server started with `--corpus-size N --seed S`.
    let support::Offloaded { path, recipes, .. } =
        support::offload_memories(&dir_path, "list_memories", n_records, seed, Detail::Full);
    let size = std::fs::metadata(&path).unwrap().len();
    let bare = headerless(&path, dir.path());
    println!(
        "file: the memory-server's corpus, {n_records} memories from seed {seed} at full detail, {:.1} MB (generated in {:.1}s); {jq_version}; {jaq_version}; best of {runs} run(s)\n",
        mb(size),
        started.elapsed().as_secs_f64()
    );
    println!(
        "| recipe | jq flags | native s | jq s | jaq pipe s | jaq file s | speed-up vs jq | speed-up vs jaq file | native peak RSS MB | jq peak RSS MB | jaq file peak RSS MB | output MB native / jaq |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for n in 1..=10u8 {
        let recipe = recipes.get(n).unwrap();
        let args = recipe.jq_args(&Default::default());
        let sides: [&dyn Fn() -> Command; 4] = [
            &|| native_cmd(&path, n),
            &|| piped_cmd("jq", &path, &args),
            &|| piped_cmd(&jaq, &path, &args),
            &|| direct_cmd(&jaq, &bare, &args),
        ];
        let [native, jq, jaq_pipe, jaq_file] = <[Measure; 4]>::try_from(best(runs, &sides))
            .unwrap_or_else(|_| unreachable!("one measure per side"));
        assert_eq!(
            jq.out_bytes, native.out_bytes,
            "recipe {n}: jq printed another number of bytes than the native side"
        );
        // jaq keeps a number's spelling from the file (`1.0`) where jq 1.6
        // prints `1`: a few bytes more, never fewer.
        for (name, side) in [("jaq pipe", &jaq_pipe), ("jaq file", &jaq_file)] {
            assert!(
                side.out_bytes >= native.out_bytes
                    && side.out_bytes - native.out_bytes <= native.out_bytes / 1000,
                "recipe {n}: {name} printed {} bytes, the native side {}",
                side.out_bytes,
                native.out_bytes
            );
        }
        let flags = args[..args.len() - 1]
            .iter()
            .filter(|a| a.starts_with('-') && *a != "--arg")
            .cloned()
            .collect::<Vec<_>>()
            .join(" ");
        println!(
            "| {n} {} | `{flags}` | {:.3} | {:.3} | {:.3} | {:.3} | {:.1}× | {:.1}× | {:.1} | {:.1} | {:.1} | {:.1} / {:.1} |",
            recipe.description,
            native.secs,
            jq.secs,
            jaq_pipe.secs,
            jaq_file.secs,
            jq.secs / native.secs,
            jaq_file.secs / native.secs,
            rss_mb(&native),
            rss_mb(&jq),
            rss_mb(&jaq_file),
            mb(native.out_bytes),
            mb(jaq_file.out_bytes),
        );
    }
}
