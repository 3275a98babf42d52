//! Where an extraction runs: the [`Isolation`] extension point.
//!
//! [`Extractor::run_as`] checks a request, resolves its file and waits for
//! a slot; then it hands the [`Job`] to its isolation. Three kinds ship:
//!
//! - [`crate::WorkerPool`]: a pool of worker processes, each with its own
//!   address-space limit, so a query over its memory budget ends its worker
//!   (which is replaced) and gets a tool error, and the process embedding
//!   the extractor goes on. The default of `LroLayer`.
//! - `()`: in this process, on a thread, as the `lro extract` command does.
//!   Time and output are bounded, memory is not: for trusted, single-user
//!   embedders. The default of a bare [`Extractor`].
//! - any closure `Fn(Job) -> Result<ExtractOutput, ExtractError>`, e.g. to
//!   send jobs to a sandbox of your own.
//!
//! ```
//! use lro_extract::{ExtractConfig, Extractor, Job};
//!
//! // Refuse everything except recipes, and run those in-process.
//! let recipes_only = |job: Job<'_>| {
//!     if job.request.recipe.is_none() {
//!         return Err(lro_extract::ExtractError::InvalidRequest("recipes only".into()));
//!     }
//!     job.run_in_process()
//! };
//! let extractor = Extractor::new(ExtractConfig::new("/tmp")).isolation(recipes_only);
//! # let _ = extractor;
//! ```

use lro_core::principal::Principal;

use crate::{ExtractError, ExtractOutput, ExtractRequest, Extractor, ResolvedFile};

/// Runs one extraction job that was already checked, resolved and admitted.
///
/// Implemented for `()` (in-process), for closures and for
/// [`crate::WorkerPool`]. Called on a blocking-capable thread; it may block
/// up to about the extractor's timeout.
pub trait Isolation: Send + Sync + 'static {
    /// Runs `job` and returns its output or error.
    fn run(&self, job: Job<'_>) -> Result<ExtractOutput, ExtractError>;
}

/// One extraction, ready to run.
#[derive(Debug)]
#[non_exhaustive]
pub struct Job<'a> {
    /// The extractor that admitted the job: its configuration holds the
    /// limits (time, output, memory).
    pub extractor: &'a Extractor,
    /// The request, as the caller gave it.
    pub request: &'a ExtractRequest,
    /// The file the request names, resolved and authorized.
    pub file: ResolvedFile,
    /// Who asked.
    pub principal: &'a Principal,
}

impl Job<'_> {
    /// Runs the job in this process, on a worker thread bounded in time and
    /// output (not in memory).
    pub fn run_in_process(self) -> Result<ExtractOutput, ExtractError> {
        self.extractor.run_resolved(self.request, self.file)
    }
}

/// In this process: no memory bound.
impl Isolation for () {
    fn run(&self, job: Job<'_>) -> Result<ExtractOutput, ExtractError> {
        job.run_in_process()
    }
}

impl<F> Isolation for F
where
    F: Fn(Job<'_>) -> Result<ExtractOutput, ExtractError> + Send + Sync + 'static,
{
    fn run(&self, job: Job<'_>) -> Result<ExtractOutput, ExtractError> {
        self(job)
    }
}
