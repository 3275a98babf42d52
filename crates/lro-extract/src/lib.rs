//! In-process extraction over LRO offload files: the engine behind the
//! native `lro_extract` tool and the `lro extract` command.
//!
//! One [`ExtractRequest`] selects one mode:
//!
//! | mode | what runs |
//! |---|---|
//! | `recipe` | recipe N of the descriptor (same derivation as the descriptor), via jaq |
//! | `query` | a jq filter per record (or over all records with `slurp`), via jaq |
//! | `structured` | `where`/`fields`/`sort_by`/`offset`/`limit`/`count`/`group_by`, native Rust, streaming |
//! | `lines` | a window of record lines |
//! | `grep` | regex search over record lines with context |
//!
//! Every call is guarded (only offload files directly inside the
//! configured directory) and bounded: it runs on a worker thread that is
//! stopped at the timeout (cooperatively, at every jq term), and its output is cut at
//! `max_output_values` / `max_output_bytes` / `max_output_tokens`, between
//! results, with a notice and the request for the next part.
//!
//! ```
//! use lro_core::{offload::{Offloader, OffloadInput}, records::RecordSet};
//! use lro_extract::{ExtractConfig, ExtractRequest, Extractor};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let text = serde_json::to_string(&(0..30).map(|i| serde_json::json!({
//!     "id": format!("m{i}"), "title": format!("Note {i}"), "memory_type": "semantic",
//!     "namespace": if i % 2 == 0 { "_semantic/knowledge" } else { "_episodic/sessions" },
//!     "tags": ["t"], "created": format!("2025-01-{:02}", i % 28 + 1),
//! })).collect::<Vec<_>>()).unwrap();
//! let records = RecordSet::from_text(&text);
//! let written = Offloader::new(dir.path())
//!     .offload(OffloadInput::new("list", "list", &records, 5000), &|| false)
//!     .unwrap();
//! let path = written.result.path.to_string_lossy().into_owned();
//!
//! let extractor = Extractor::new(ExtractConfig::new(dir.path()));
//! let mut req = ExtractRequest::new(&path);
//! req.recipe = Some(6); // count by namespace
//! let out = extractor.run(&req).unwrap();
//! assert_eq!(out.values[0][0]["count"], 15);
//!
//! let mut req = ExtractRequest::new(&path);
//! req.query = Some("select(.id == \"m7\") | .title".into());
//! assert_eq!(extractor.run(&req).unwrap().text, "\"Note 7\"\n");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod error;
mod fast;
mod guard;
mod jq;
mod output;
mod project;
mod render;
mod request;
mod scan;
mod structured;
mod text;

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Cursor, Read, Write},
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
        mpsc,
    },
    thread,
    time::{Duration, Instant},
};

use lro_core::{
    ScriptAware, TokenEstimator,
    descriptor::OffloadHeader,
    event::{Extracted, LroEvent},
    metric::label::{ExtractMode, ExtractOutcome},
    recipes::{RecipeSet, SAMPLE_SIZE},
};
use serde_json::Value;

pub use config::{
    DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_OUTPUT_VALUES, DEFAULT_TIMEOUT, ExtractConfig,
};
pub use error::ExtractError;
pub use guard::{ResolvedFile, resolve};
pub use output::ExtractOutput;
pub use request::{
    Condition, DEFAULT_LINE_LIMIT, DEFAULT_MAX_CHARS, DEFAULT_MAX_MATCHES, ExtractRequest, Grep,
    LineWindow, MAX_CONTEXT, Match, Op,
};

use crate::{
    jq::{Guard, Job, Render, Stop},
    output::{Collector, Cut, Limits, Window},
    structured::Structured,
    text::GrepPlan,
};

/// How long a timed-out call waits for its worker to confirm it stopped.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// A validated request, ready for the worker.
enum Plan {
    Recipe {
        number: u8,
        params: BTreeMap<String, String>,
    },
    Query {
        code: String,
        slurp: bool,
        params: BTreeMap<String, String>,
    },
    Structured(Structured),
    Lines(LineWindow),
    Grep(GrepPlan),
}

impl Plan {
    fn new(req: &ExtractRequest) -> Result<(ExtractMode, Plan), ExtractError> {
        let mode = req.mode()?;
        let plan = match (mode, &req.grep) {
            (ExtractMode::Recipe, _) => {
                let number = req.recipe.unwrap_or_default();
                if !(1..=10).contains(&number) {
                    return Err(ExtractError::InvalidRequest(format!(
                        "recipe must be 1..=10, got {number}"
                    )));
                }
                Plan::Recipe {
                    number,
                    params: req.string_params()?,
                }
            }
            (ExtractMode::Query, _) => {
                let code = req.query.clone().unwrap_or_default();
                if code.trim().is_empty() {
                    return Err(ExtractError::InvalidRequest(
                        "query is empty; give a jq filter such as `.` or `select(.priority >= 4)`"
                            .into(),
                    ));
                }
                Plan::Query {
                    code,
                    slurp: req.slurp.unwrap_or(false),
                    params: req.string_params()?,
                }
            }
            (ExtractMode::Structured, _) => Plan::Structured(Structured::from_request(req)?),
            (ExtractMode::Lines, _) => Plan::Lines(req.lines.clone().unwrap_or_default()),
            (ExtractMode::Grep, Some(grep)) => Plan::Grep(GrepPlan::new(grep)?),
            // `mode()` never returns these; kept an error rather than a panic.
            (ExtractMode::Grep, None) | (ExtractMode::Invalid, _) => {
                return Err(ExtractError::InvalidRequest(format!(
                    "no extraction mode in the request ({mode})"
                )));
            }
        };
        Ok((mode, plan))
    }
}

/// Runs extraction requests against the offload files of one directory.
///
/// Cheap to share: wrap it in an `Arc` and call [`Extractor::run`] from
/// several threads at once; every call gets its own worker thread.
#[derive(Clone)]
pub struct Extractor {
    cfg: ExtractConfig,
    estimator: Arc<dyn TokenEstimator>,
    active: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Extractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extractor")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Extractor {
    /// An extractor with `cfg`.
    pub fn new(cfg: ExtractConfig) -> Self {
        Self {
            cfg,
            estimator: Arc::new(ScriptAware),
            active: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Sets the estimator that measures output against
    /// [`ExtractConfig::max_output_tokens`]. Defaults to [`ScriptAware`].
    #[must_use]
    pub fn estimator(mut self, estimator: Arc<dyn TokenEstimator>) -> Self {
        self.estimator = estimator;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &ExtractConfig {
        &self.cfg
    }

    /// Worker threads of this extractor (and its clones) still running.
    /// After a call returns — timed out or not — its worker has normally
    /// ended, so this is 0 when no call is in flight; a larger number means
    /// a worker is still finishing a long native operation.
    pub fn active_workers(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Checks `file_path` against the guards without reading it.
    pub fn resolve(&self, file_path: &str) -> Result<ResolvedFile, ExtractError> {
        guard::resolve(&self.cfg.root_dir, file_path)
    }

    /// Runs `req` and collects its output within the configured limits.
    /// Blocks the calling thread up to about the configured timeout; call
    /// it from a blocking-capable thread (e.g. `spawn_blocking`).
    pub fn run(&self, req: &ExtractRequest) -> Result<ExtractOutput, ExtractError> {
        let collector = Collector::buffer(self.limits());
        self.run_with(req, collector)
    }

    /// Runs `req`, streaming result lines to `out` instead of keeping them
    /// (the returned output has empty `values` and `text`). The configured
    /// limits still apply; raise them for unbounded output.
    pub fn run_to_writer(
        &self,
        req: &ExtractRequest,
        out: Box<dyn Write + Send>,
    ) -> Result<ExtractOutput, ExtractError> {
        let collector = Collector::writer(out, self.limits());
        self.run_with(req, collector)
    }

    fn limits(&self) -> Limits {
        Limits {
            max_bytes: self.cfg.max_output_bytes,
            max_values: self.cfg.max_output_values,
            max_tokens: self
                .cfg
                .max_output_tokens
                .map(|max| (max, self.estimator.clone())),
        }
    }

    fn run_with(
        &self,
        req: &ExtractRequest,
        collector: Collector,
    ) -> Result<ExtractOutput, ExtractError> {
        let (mode, plan) = Plan::new(req)?;
        let file = self.resolve(&req.file_path)?;
        let req = req.clone();
        let fast_paths = self.cfg.fast_paths;
        self.bounded(move |guard| execute(&req, mode, plan, file, guard, collector, fast_paths))
    }

    /// Runs `job` on a worker thread, waiting at most the timeout.
    fn bounded<F>(&self, job: F) -> Result<ExtractOutput, ExtractError>
    where
        F: FnOnce(&Guard) -> Result<ExtractOutput, ExtractError> + Send + 'static,
    {
        let timeout = self.cfg.timeout;
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::sync_channel(1);
        let live = Live::new(self.active.clone());
        let worker_cancel = cancel.clone();
        let worker = move || {
            // Dropped before `tx` (a captured variable), so a caller that
            // sees the channel close knows the count went down.
            let _live = live;
            let guard = Guard::new(worker_cancel);
            let result = catch_unwind(AssertUnwindSafe(|| job(&guard)))
                .unwrap_or_else(|payload| Err(unwound(payload)));
            let _ = tx.send(result);
        };
        spawn_worker(jq::worker_stack(timeout), worker).map_err(|e| ExtractError::Runtime {
            line: None,
            message: format!("cannot start an extraction worker: {e}"),
        })?;
        let result = match rx.recv_timeout(timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(ExtractError::Runtime {
                line: None,
                message: "the extraction worker ended without a result".into(),
            }),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                cancel.store(true, Ordering::SeqCst);
                Err(ExtractError::Timeout { limit: timeout })
            }
        };
        // Wait for the worker to end (it stops at its next step once
        // cancelled), so no thread outlives the call in the normal case.
        let deadline = Instant::now() + STOP_GRACE;
        while let Ok(late) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            drop(late);
        }
        match result {
            Err(ExtractError::Timeout { .. }) => Err(ExtractError::Timeout { limit: timeout }),
            other => other,
        }
    }

    /// The observability event for a finished call.
    pub fn event(
        &self,
        req: &ExtractRequest,
        result: &Result<ExtractOutput, ExtractError>,
        duration: Duration,
    ) -> LroEvent {
        let (mode, outcome, results) = match result {
            Ok(out) if out.truncated => (out.mode, ExtractOutcome::Truncated, out.count),
            Ok(out) => (out.mode, ExtractOutcome::Ok, out.count),
            Err(e) => (req.mode().unwrap_or(ExtractMode::Invalid), e.outcome(), 0),
        };
        let mut event = Extracted::new(mode, outcome, self.cfg.root_dir.join(&req.file_path));
        event.results = results;
        event.duration = duration;
        LroEvent::Extracted(event)
    }
}

/// Spawns `f` on a thread with `stack` bytes of stack, retrying with the
/// smallest stack where the system refuses a large reservation.
fn spawn_worker(stack: usize, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let f = std::sync::Mutex::new(Some(f));
    let f = Arc::new(f);
    let mut last_err = None;
    for size in [stack, jq::WORKER_STACK] {
        let f = f.clone();
        let spawned = thread::Builder::new()
            .name("lro-extract".into())
            .stack_size(size)
            .spawn(move || {
                let job = f.lock().ok().and_then(|mut slot| slot.take());
                if let Some(job) = job {
                    job();
                }
            });
        match spawned {
            Ok(_) => return Ok(()),
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.expect("at least one attempt"))
}

/// Counts a live worker.
struct Live(Arc<AtomicUsize>);

impl Live {
    fn new(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn unwound(payload: Box<dyn std::any::Any + Send>) -> ExtractError {
    match payload.downcast_ref::<Stop>() {
        Some(Stop::Cancelled) => ExtractError::Timeout {
            limit: Duration::ZERO,
        },
        Some(Stop::TooDeep) => ExtractError::Runtime {
            line: None,
            message: "query recursion too deep (stack limit reached)".into(),
        },
        None => ExtractError::Runtime {
            line: None,
            message: "internal error: the query engine panicked".into(),
        },
    }
}

fn read_header(
    reader: &mut impl BufRead,
    file: &ResolvedFile,
) -> Result<OffloadHeader, ExtractError> {
    let mut line = Vec::new();
    reader
        .read_until(b'\n', &mut line)
        .map_err(|source| ExtractError::Io {
            path: file.path.clone(),
            source,
        })?;
    let text = std::str::from_utf8(&line)
        .map_err(|_| ExtractError::BadHeader("header line is not UTF-8".into()))?;
    lro_core::file::parse_header(&file.path, text)
        .map_err(|e| ExtractError::BadHeader(e.to_string()))
}

fn execute(
    req: &ExtractRequest,
    mode: ExtractMode,
    plan: Plan,
    file: ResolvedFile,
    guard: &Guard,
    out: Collector,
    fast_paths: bool,
) -> Result<ExtractOutput, ExtractError> {
    let mut reader = BufReader::with_capacity(256 * 1024, file.open()?);
    let header = read_header(&mut reader, &file)?;
    let mut raw = false;
    // With slurp, offset/limit page the elements of the one result (see
    // `Job::window`); else the stream of results.
    let window = Window {
        offset: req.offset.unwrap_or(0),
        limit: req.limit,
    };
    let paged = matches!(mode, ExtractMode::Recipe | ExtractMode::Query);
    let mut out = if paged { out.window(window) } else { out };
    match plan {
        Plan::Recipe { number, params } => {
            let (sample_bytes, sample) = read_sample(&mut reader, &file)?;
            let set = RecipeSet::derive(&sample, header.detail);
            let recipe = set.get(number).ok_or_else(|| {
                ExtractError::InvalidRequest(format!("recipe must be 1..=10, got {number}"))
            })?;
            let accepted: Vec<&str> = recipe.params.iter().map(|p| p.name.as_str()).collect();
            if let Some(bad) = params.keys().find(|k| !accepted.contains(&k.as_str())) {
                return Err(ExtractError::InvalidRequest(if accepted.is_empty() {
                    format!(
                        "recipe {number} ({}) takes no params, got {bad:?}",
                        recipe.description
                    )
                } else {
                    format!(
                        "recipe {number} ({}) has no param {bad:?}; it accepts: {}",
                        recipe.description,
                        accepted.join(", ")
                    )
                }));
            }
            let vars: Vec<String> = recipe
                .params
                .iter()
                .map(|p| params.get(&p.name).unwrap_or(&p.default).clone())
                .collect();
            let program = jq::compile_with_vars(&recipe.filter, &accepted)?;
            raw = recipe.raw;
            let named: BTreeMap<String, String> = accepted
                .iter()
                .map(|n| (*n).to_owned())
                .zip(vars.iter().cloned())
                .collect();
            let fast = fast_path(&recipe.filter, &named, recipe.slurp, raw, fast_paths);
            Job {
                program: &program,
                projection: project::analyze(&recipe.filter, recipe.slurp).filter(|_| fast_paths),
                fast,
                vars,
                slurp: recipe.slurp,
                window,
                render: Render { raw },
                guard,
            }
            .run(Cursor::new(sample_bytes).chain(reader), 2, &mut out)?;
        }
        Plan::Query {
            code,
            slurp,
            params,
        } => {
            let names: Vec<&str> = params.keys().map(String::as_str).collect();
            let program = jq::compile_with_vars(&code, &names)?;
            let fast = fast_path(&code, &params, slurp, false, fast_paths);
            Job {
                program: &program,
                projection: project::analyze(&code, slurp).filter(|_| fast_paths),
                fast,
                vars: params.into_values().collect(),
                slurp,
                window,
                render: Render { raw: false },
                guard,
            }
            .run(reader, 2, &mut out)?;
        }
        Plan::Structured(s) => s.run(reader, 2, guard, &mut out)?,
        Plan::Lines(window) => text::run_lines(&window, header.count, reader, guard, &mut out)?,
        Plan::Grep(g) => g.run(reader, guard, &mut out)?,
    }
    Ok(out.finish(mode, raw, |cut| next_part(req, mode, cut)))
}

/// The request that shows what comes after `cut`, when offset/limit can
/// express it: the next elements of a slurped result, or the next results
/// of a stream (recipe, query, structured).
fn next_part(req: &ExtractRequest, mode: ExtractMode, cut: Cut) -> Option<ExtractRequest> {
    let mut next = req.clone();
    match (mode, cut) {
        (
            ExtractMode::Recipe | ExtractMode::Query,
            Cut::Elements {
                from,
                shown,
                single: true,
                ..
            },
        ) if shown > 0 => {
            next.offset = Some(from + shown);
            next.limit = Some(req.limit.unwrap_or(shown));
        }
        (
            ExtractMode::Recipe | ExtractMode::Query | ExtractMode::Structured,
            Cut::Results { shown },
        ) if shown > 0 => {
            next.offset = Some(req.offset.unwrap_or(0) + shown);
        }
        _ => return None,
    }
    Some(next)
}

fn fast_path(
    code: &str,
    vars: &BTreeMap<String, String>,
    slurp: bool,
    raw: bool,
    enabled: bool,
) -> Option<fast::FastFilter> {
    if slurp || !enabled {
        return None;
    }
    fast::FastFilter::new(code, vars).filter(|f| f.fits_render(raw))
}

/// Reads the first [`SAMPLE_SIZE`] records (as the descriptor did), keeping
/// their bytes so the full run can start from the first record again.
fn read_sample(
    reader: &mut impl BufRead,
    file: &ResolvedFile,
) -> Result<(Vec<u8>, Vec<Value>), ExtractError> {
    let mut bytes = Vec::new();
    let mut sample = Vec::new();
    let mut line_no = 1;
    while sample.len() < SAMPLE_SIZE {
        let start = bytes.len();
        let n = reader
            .read_until(b'\n', &mut bytes)
            .map_err(|source| ExtractError::Io {
                path: file.path.clone(),
                source,
            })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let line = bytes[start..].trim_ascii();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice(line) {
            Ok(v) => sample.push(v),
            Err(e) => {
                return Err(ExtractError::BadRecord {
                    line: line_no,
                    message: e.to_string(),
                });
            }
        }
    }
    Ok((bytes, sample))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_requests_fail_before_the_file_is_touched() {
        let ex = Extractor::new(ExtractConfig::new("/definitely/not/here"));
        let mut req = ExtractRequest::new("whatever");
        req.recipe = Some(11);
        let e = ex.run(&req).unwrap_err().to_string();
        assert!(e.contains("recipe must be 1..=10"), "{e}");
        let mut req = ExtractRequest::new("whatever");
        req.query = Some("  ".into());
        assert!(
            ex.run(&req)
                .unwrap_err()
                .to_string()
                .contains("query is empty")
        );
    }

    #[test]
    fn public_types_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<Extractor>();
        send_sync::<ExtractRequest>();
        send_sync::<ExtractOutput>();
        send_sync::<ExtractError>();
    }

    #[test]
    fn event_reflects_outcome() {
        let ex = Extractor::new(ExtractConfig::new("/tmp"));
        let mut req = ExtractRequest::new("f.jsonl");
        req.recipe = Some(1);
        let err = Err(ExtractError::Timeout {
            limit: Duration::from_millis(1),
        });
        let LroEvent::Extracted(e) = ex.event(&req, &err, Duration::from_millis(2)) else {
            panic!("wrong event")
        };
        assert_eq!(
            (e.mode, e.outcome, e.results),
            (ExtractMode::Recipe, ExtractOutcome::Timeout, 0)
        );
    }
}
