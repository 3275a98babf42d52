//! The [`Extractor`]: the public face of the engine.

use std::{
    io::Write,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use lro_core::{
    ScriptAware, TokenEstimator,
    event::{Extracted, LroEvent},
    metric::label::{ExtractMode, ExtractOutcome},
    principal::Principal,
};

use crate::{
    ExtractConfig, ExtractError, ExtractOutput, ExtractRequest, Isolation, Job, ResolvedFile,
    execute::{Reading, execute},
    gate::Gate,
    guard,
    jq::Guard,
    output::{Collector, Limits},
    plan::Plan,
    thread,
};

/// Runs extraction requests against the offload files of one directory.
///
/// Cheap to share: wrap it in an `Arc` and call [`Extractor::run`] from
/// several threads at once. Clones share one admission queue: at most
/// [`ExtractConfig::max_concurrent`] calls run at once, at most
/// [`ExtractConfig::max_per_principal`] for one principal.
#[derive(Clone)]
pub struct Extractor {
    cfg: ExtractConfig,
    estimator: Arc<dyn TokenEstimator>,
    active: Arc<AtomicUsize>,
    isolation: Arc<dyn Isolation>,
    gate: Arc<Gate>,
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
            isolation: Arc::new(()),
            gate: Arc::default(),
        }
    }

    /// Sets where queries run (see [`Isolation`]). Defaults to `()`: in
    /// this process, bounded in time and output but not in memory; give a
    /// [`crate::WorkerPool`] to bound memory too.
    #[must_use]
    pub fn isolation(mut self, isolation: impl Isolation) -> Self {
        self.isolation = Arc::new(isolation);
        self
    }

    /// The estimator output is measured with.
    pub fn token_estimator(&self) -> &Arc<dyn TokenEstimator> {
        &self.estimator
    }

    /// Sets the estimator that measures output against
    /// [`ExtractConfig::max_output_tokens`]. Defaults to [`ScriptAware`].
    #[must_use]
    pub fn estimator(mut self, estimator: Arc<dyn TokenEstimator>) -> Self {
        self.estimator = estimator;
        self
    }

    /// Sets the directory files are read from, in place of the configured
    /// one: the layer reads each caller's results from that caller's own
    /// folder (see [`access`](crate::access)). Defaults to
    /// [`ExtractConfig::root_dir`].
    #[must_use]
    pub fn root_dir(mut self, root: impl Into<std::path::PathBuf>) -> Self {
        self.cfg.root_dir = root.into();
        self
    }

    /// Sets whether files are checked against their header's size before
    /// they are read. Defaults to [`ExtractConfig::check_size`] (on); the
    /// layer turns it off for a stored result's working copy, which it
    /// checked as it copied it.
    #[must_use]
    pub fn check_size(mut self, on: bool) -> Self {
        self.cfg.check_size = on;
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

    /// Runs `req` for the anonymous principal: [`Extractor::run_as`].
    pub fn run(&self, req: &ExtractRequest) -> Result<ExtractOutput, ExtractError> {
        self.run_as(&Principal::anonymous(), req)
    }

    /// Runs `req` for `principal` and collects its output within the
    /// configured limits: checks the request, resolves its file, waits for
    /// a slot (at most [`ExtractConfig::queue_timeout`], then
    /// [`ExtractError::Busy`]) and runs it through the isolation.
    /// Blocks the calling thread up to about the queue timeout plus the
    /// configured timeout; call it from a blocking-capable thread (e.g.
    /// `spawn_blocking`).
    pub fn run_as(
        &self,
        principal: &Principal,
        req: &ExtractRequest,
    ) -> Result<ExtractOutput, ExtractError> {
        Plan::new(req)?;
        let file = self.resolve(&req.file_path)?;
        let _slot = self.gate.enter(principal, &self.cfg)?;
        self.isolation.run(Job {
            extractor: self,
            request: req,
            file,
            principal,
        })
    }

    /// Runs `req` over `file` in this process (what the isolation `()`
    /// does), bounded in time and output, not in memory.
    pub(crate) fn run_resolved(
        &self,
        req: &ExtractRequest,
        file: ResolvedFile,
    ) -> Result<ExtractOutput, ExtractError> {
        self.run_file(req, file, self.collector())
    }

    /// Runs `req` over `file` on the calling thread, stopped by `guard`
    /// (a worker process's job thread, whose timer cancels it): no thread
    /// started per call. The caller's stack must be a worker stack.
    pub(crate) fn run_here(
        &self,
        req: &ExtractRequest,
        file: ResolvedFile,
        guard: &Guard,
    ) -> Result<ExtractOutput, ExtractError> {
        let (mode, plan) = Plan::new(req)?;
        let collector = self.collector();
        let reading = Reading::of(&self.cfg);
        let result = thread::guarded(guard, |guard| {
            execute(req, mode, plan, file, guard, collector, reading)
        });
        thread::with_limit(result, self.cfg.timeout)
    }

    fn collector(&self) -> Collector {
        if self.cfg.keep_values {
            Collector::buffer(self.limits())
        } else {
            Collector::text(self.limits())
        }
    }

    /// Runs `req` in this process, streaming result lines to `out` instead
    /// of keeping them (the returned output has empty `values` and `text`);
    /// no isolation and no admission queue, as for a one-shot command. The
    /// configured limits still apply; raise them for unbounded output.
    pub fn run_to_writer(
        &self,
        req: &ExtractRequest,
        out: Box<dyn Write + Send>,
    ) -> Result<ExtractOutput, ExtractError> {
        let collector = Collector::writer(out, self.limits());
        Plan::new(req)?;
        let file = self.resolve(&req.file_path)?;
        self.run_file(req, file, collector)
    }

    /// [`Extractor::run_to_writer`], also printing to `errors` jq 1.6's
    /// error line for each record the filter fails on (`jq: error (at
    /// <stdin>:N): …`, numbered as for the recipes' `tail -n +2 FILE | jq`).
    pub fn run_to_writers(
        &self,
        req: &ExtractRequest,
        out: Box<dyn Write + Send>,
        errors: Box<dyn Write + Send>,
    ) -> Result<ExtractOutput, ExtractError> {
        let mut collector = Collector::writer(out, self.limits());
        collector.failures.print_to(errors);
        Plan::new(req)?;
        let file = self.resolve(&req.file_path)?;
        self.run_file(req, file, collector)
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

    fn run_file(
        &self,
        req: &ExtractRequest,
        file: ResolvedFile,
        collector: Collector,
    ) -> Result<ExtractOutput, ExtractError> {
        let (mode, plan) = Plan::new(req)?;
        let req = req.clone();
        let reading = Reading::of(&self.cfg);
        thread::bounded(self.cfg.timeout, &self.active, move |guard| {
            execute(&req, mode, plan, file, guard, collector, reading)
        })
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
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_requests_fail_before_the_file_is_touched() {
        let ex = Extractor::new(ExtractConfig::new("/definitely/not/here"));
        let req = ExtractRequest::new("whatever").recipe(11);
        let e = ex.run(&req).unwrap_err().to_string();
        assert!(e.contains("recipe must be 1..=10"), "{e}");
        let req = ExtractRequest::new("whatever").query("  ");
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
        let req = ExtractRequest::new("f.jsonl").recipe(1);
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
